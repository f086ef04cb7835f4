# Roost: the two commands are `make run` and `make test`; everything else is a building block.
PRESET ?= release
BUILD_DIR := build
LISTEN ?= 127.0.0.1:8080
DATA_DIR ?= ./var
JOBS ?= $(shell nproc)
PREFIX ?= /usr/local
DESTDIR ?=

.PHONY: all deps deps-run configure build install deb image run test test-packages test-asan bench bench-sse bench-mysql bench-pg bench-pg-soak bench-peers bench-sweep bench-ideal chaos clean format fuzz

all: build

deps:
	@scripts/deps.sh

# Only what building and running roostd need (`make run`).
deps-run:
	@scripts/deps.sh run

configure:
	@[ -f $(BUILD_DIR)/build.ninja ] || cmake --preset release

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# GNUInstallDirs under PREFIX; DESTDIR (staging for packages) is honoured.
install: build
	cmake -S . -B $(BUILD_DIR) -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	cmake --build $(BUILD_DIR) -j $(JOBS)
	DESTDIR=$(DESTDIR) cmake --install $(BUILD_DIR)

# The Debian packages roostd, roost and libroost-dev (debian/, dpkg-buildpackage -b), checked by
# lintian; the .debs land in build/deb (doc/OPERATIONS.md, "Debian packages").
deb:
	@scripts/deps.sh deb
	@scripts/deb.sh $(BUILD_DIR)/deb

# An OCI image of roostd (buildah) from those packages on a debootstrapped Debian 12 root; needs
# root. IMAGE names it (default localhost/roostd:VERSION); doc/OPERATIONS.md, "Container image".
IMAGE ?=
image: deb
	@scripts/image.sh $(BUILD_DIR)/deb $(IMAGE)

run: deps-run build
	@scripts/run.sh "$(LISTEN)" "$(DATA_DIR)" "$(STORE)"

# Every test except the Galera failover test (label galera: it starts a 3-node cluster and is
# run by `make chaos`; doc/RELIABILITY.md says why it is not part of every change yet) and the
# Debian package and container image tests (label deb: `make test-packages`, below).
test: deps build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) --timeout 600 -LE 'galera|deb'
	@scripts/asan.sh

# The Debian packages built, installed, upgraded and purged in a debootstrapped Debian 12 root,
# and the container image built from them and run (tests/integration/deb.sh, image.sh; root).
# Not in `make test` yet: from a cold cache they download Debian 12's base system and the
# packages' dependencies, 10+ minutes on a slow mirror (doc/OPERATIONS.md).
test-packages: build
	@scripts/deps.sh deb
	ctest --test-dir $(BUILD_DIR) --output-on-failure --timeout 1500 -L deb

# The whole suite again under ASan+UBSan (part of `make test`; this target runs only that).
test-asan: deps
	@scripts/asan.sh

bench: deps build
	@scripts/bench.sh

# Scenario 5 (SSE): 10k idle subscribers ×3 and 50k ×1; about 5 minutes (doc/BENCHMARKS.md).
bench-sse: deps build
	@scripts/bench_sse.sh

# Scenarios 1 and 6 on a private MariaDB (flush=1): roostd on 1, 2 and 4 nodes vs the plain
# SKIP LOCKED loop, cross-node ping latency; about 5 minutes (doc/BENCHMARKS.md).
bench-mysql: deps build
	@scripts/bench_mysql.sh

# roostd on a private PostgreSQL beside bench/pg_direct (plain SKIP LOCKED loop, pgmq's shape).
bench-pg: deps build
	@scripts/bench_pg.sh

# roostd on a private PostgreSQL for 10 minutes at a steady rate: throughput per minute, dead
# tuples and table/index sizes over time, a table and a plot (doc/BENCHMARKS.md).
bench-pg-soak: deps build
	@scripts/bench_pg_soak.sh

# roostd (SQLite and MariaDB, an agent per consumer and one agent) beside direct SQLite, the plain
# SKIP LOCKED loop, pgmq's shape, Redis Streams (appendfsync always) and beanstalkd (-f 0), one
# driver for all, 3 alternating rounds at P2 C2 and P8 C8; BENCH_BASE_BUILD=DIR adds another
# build's roostd for CPU per cycle. About 9 minutes (doc/BENCHMARKS.md, "Peers").
bench-peers: deps build
	@scripts/deps.sh peers
	@scripts/bench_peers.sh

# Scenario 1 swept over P = C ∈ {1, 2, 4, 8, 16}: roostd on SQLite and on MariaDB with 1, 2 and 4
# nodes against direct SQLite, the plain SKIP LOCKED loop and the in-memory ceiling; medians of
# BENCH_RUNS (3) runs of BENCH_SECONDS (5) each, about 14 minutes on 2 cores. Writes a TSV and
# the plot (doc/BENCHMARKS.md, "The sweep"); BENCH_WRITE_DOC=1 puts them into doc/.
bench-sweep: deps build
	@scripts/bench_sweep.sh

# The ideal durable server (null_server --durable: roostd's HTTP front, no store) beside roostd,
# direct SQLite, the null server and, on a private MariaDB, the plain loop: the bound each target
# sits under; 3 rounds, about 6 minutes (doc/BENCHMARKS.md, "The ideal durable server").
bench-ideal: deps build
	@MYSQL=$${MYSQL:-1} scripts/bench_ideal.sh

# The chaos matrix (doc/RELIABILITY.md): SQLite, a private MariaDB, a private PostgreSQL and a
# 3-node Galera cluster (scripts/galera.sh), each CHAOS_MINUTES of seeded faults (CHAOS_SEED),
# then the invariant checker; with Galera also the failover test (ctest label galera). Run
# directories (logs, figures in summary.json) stay under build/chaos/. Exits non-zero if anything
# fails.
CHAOS_SEED ?= 1
CHAOS_MINUTES ?= 5
CHAOS_PROFILES ?= sqlite mysql postgres $(if $(wildcard scripts/galera.sh),galera)
chaos: deps build
	@status=0; for p in $(CHAOS_PROFILES); do \
	    python3 tests/chaos/chaos.py --profile $$p --seed $(CHAOS_SEED) \
	        --minutes $(CHAOS_MINUTES) --bin-dir $(BUILD_DIR)/bin \
	        --out $(BUILD_DIR)/chaos/full-$$p || status=1; \
	done; \
	case " $(CHAOS_PROFILES) " in *" galera "*) \
	    ctest --test-dir $(BUILD_DIR) --output-on-failure --timeout 600 -L galera || status=1;; \
	esac; exit $$status

# libFuzzer on every tests/fuzz target, FUZZ_SECONDS (default 60) each (scripts/fuzz.sh).
fuzz:
	@scripts/fuzz.sh

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf build build-debug build-asan build-tsan build-fuzz
