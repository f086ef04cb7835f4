#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Where a server's CPU goes, from a `perf record --call-graph dwarf` profile (issue 35).

    scripts/perf_split.py PERF_DATA PID

Each sample is put in one category and the shares of all samples are printed, one
"category share" pair per line ("loop:" or "other:" first: the thread running the event loop, whose
id is PID, or any other thread):
  sys:NAME    in the kernel under the system call NAME (the libc wrapper that entered it:
              writev, epoll_ctl, fdatasync, ...): the call itself and what it set off (the
              loopback TCP receive of a send, a wake-up, the switch away and back)
  kernel      in the kernel outside a system call (interrupts, page faults)
  malloc      libc's allocator (malloc, free, calloc, realloc and their internals)
  libc        the rest of libc (string functions, printf, locks)
  DSO         any other user-space code, by its file (roostd, libevent, libsqlite3, ...)
Counted with the samples' own call chains, so nothing is attributed by guess; a share is of all
samples of PID in the profile.
"""
import collections
import re
import subprocess
import sys

MALLOC = re.compile(r"(^|_)(int_)?(malloc|free|calloc|realloc)|malloc_consolidate|unlink_chunk|"
                    r"tcache|cfree|arena_get")


def frames(data, pid):
    """Yields each sample's frames [(symbol, dso), ...], leaf first, and its thread id."""
    out = subprocess.run(["perf", "script", "-i", data, "--pid", pid, "-F", "tid,ip,sym,dso"],
                         capture_output=True, text=True, check=True).stdout
    tid, cur = None, []
    for line in out.split("\n"):
        if not line.strip():
            if tid is not None:
                yield tid, cur
            tid, cur = None, []
        elif not line[0].isspace():
            tid, cur = line.split()[0], []
        else:
            rest = line.strip().split(None, 1)[-1]
            dso = rest[rest.rfind("(") + 1:-1] if rest.endswith(")") else "?"
            sym = rest[:rest.rfind("(")].strip() if "(" in rest else rest
            cur.append((re.sub(r"\+0x[0-9a-f]+$", "", sym), dso.rsplit("/", 1)[-1]))
    if tid is not None:
        yield tid, cur


def resolve(fr):
    """An inlined frame has no file of its own: it is in the next frame's."""
    out, dso = [], "?"
    for sym, d in reversed(fr):
        if d != "inlined":
            dso = d
        out.append((sym, dso))
    return out[::-1]


SYSCALLS = set("""accept4 brk clock_gettime close epoll_ctl epoll_wait fcntl fdatasync fsync
    ftruncate getpid ioctl lseek madvise mmap mprotect munmap nanosleep newfstatat openat poll
    pread pwrite read readv recv recvfrom recvmsg sched_yield send sendmsg sendto shutdown write
    writev""".split())


def syscall_of(sym):
    """The system call a libc wrapper (or its inlined body) makes, or None."""
    name = sym.replace(" (inlined)", "")
    while True:
        bare = re.sub(r"^(__GI_|__libc_|_+)", "", name)
        if bare == name:
            break
        name = bare
    name = re.sub(r"(64)?(_nocancel)?(_adjusted)?$", "", name)
    if name.startswith(("futex", "lll_lock")):
        return "futex"
    return name if name in SYSCALLS else None


def category(fr):
    sym, dso = fr[0] if fr else ("?", "?")
    if "kernel" in dso:
        user = next((f for f in fr if "kernel" not in f[1]), None)
        name = syscall_of(user[0]) if user is not None else None
        return "sys:" + name if name else "kernel"
    if dso.startswith("libc"):
        return "malloc" if MALLOC.search(sym) else "libc"
    return re.sub(r"\.so[.0-9]*$", "", dso)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: perf_split.py PERF_DATA PID")
    data, pid = sys.argv[1], sys.argv[2]
    counts = collections.Counter()
    n = 0
    for tid, fr in frames(data, pid):
        part = "loop" if tid == pid else "other"
        counts[part + ":" + category(resolve(fr))] += 1
        counts[part] += 1
        n += 1
    if n == 0:
        sys.exit("perf_split.py: no samples of pid %s in %s" % (pid, data))
    print("samples %d" % n)
    for key, c in sorted(counts.items(), key=lambda kv: -kv[1]):
        print("%s %.4f" % (key, c / n))


if __name__ == "__main__":
    main()
