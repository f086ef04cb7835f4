/* SPDX-License-Identifier: MIT */
/* roostd: argv → config → run. Exit codes: 0 clean shutdown, 1 runtime failure, 2 bad usage or
 * invalid configuration. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/log.h"
#include "server/config.h"
#include "server/daemon.h"
#include "server/router.h"

#include "common/banned.h"

extern char **environ;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: roostd [options]\n"
            "  --data-dir DIR      data directory (default ./var)\n"
            "  --listen HOST:PORT  address to listen on (port 0 picks a free port)\n"
            "  --ready-file FILE   write the base URL to FILE once listening\n"
            "  --store URL         sqlite://PATH, mysql://USER:PASS@HOST:PORT/DB or\n"
            "                      postgres://USER:PASS@HOST:PORT/DB[?schema=NAME] (default "
            "sqlite://DATA_DIR/roost.db)\n"
            "  --config FILE       config file (key = value)\n"
            "  --set KEY=VALUE     set a config key (repeatable; wins over file and env)\n"
            "  --print-config      print the effective configuration and exit\n"
            "  --print-config-reference  print the reference of every key (Markdown)\n"
            "  --print-routes      print the route declaration (JSON) and exit\n"
            "  --version           print the version and exit\n"
            "Environment: ROOST_<KEY> sets a key (lease.default_s -> ROOST_LEASE_DEFAULT_S).\n");
}

static void free_args(const char **sets, char **owned, size_t n_owned)
{
    for (size_t i = 0; i < n_owned; i++) {
        free(owned[i]);
    }
    free(owned);
    free((void *)sets);
}

static void raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/* Takes DATA_DIR/roostd.lock (an exclusive flock, held until the process exits, pid inside) so
 * that a second roostd on the same data dir refuses to start instead of running beside the
 * first (whose subscribers would never get the second one's pings). Returns the fd, or -1 with
 * err set. */
static int lock_data_dir(const char *data_dir, char *err, size_t errlen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/roostd.lock", data_dir);
    if (fsutil_mkdir_p(data_dir, 0700) != 0) {
        snprintf(err, errlen, "cannot create data dir %.300s: %s", data_dir, strerror(errno));
        return -1;
    }
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %.300s: %s", path, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        char pid[32] = "";
        ssize_t n = pread(fd, pid, sizeof pid - 1, 0);
        pid[n > 0 ? n : 0] = '\0';
        pid[strcspn(pid, "\n")] = '\0';
        snprintf(err, errlen,
                 "data dir %.300s is in use by another roostd (pid %s, holding roostd.lock): stop "
                 "it, or give this one another --data-dir",
                 data_dir, pid[0] != '\0' ? pid : "unknown");
        close(fd);
        return -1;
    }
    char pid[32];
    int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)len, 0) != len) {
        /* The pid only improves the message a second roostd prints; the lock holds anyway. */
        log_warn("cannot write the lock file", "path=%s error=\"%s\"", path, strerror(errno));
    }
    return fd;
}

int main(int argc, char **argv)
{
    enum { OPT_READY = 256, OPT_PRINT, OPT_REF, OPT_ROUTES, OPT_VERSION, OPT_STORE, OPT_SET };
    static const struct option opts[] = {
        {"data-dir", required_argument, NULL, 'd'},
        {"listen", required_argument, NULL, 'l'},
        {"ready-file", required_argument, NULL, OPT_READY},
        {"store", required_argument, NULL, OPT_STORE},
        {"config", required_argument, NULL, 'c'},
        {"set", required_argument, NULL, OPT_SET},
        {"print-config", no_argument, NULL, OPT_PRINT},
        {"print-config-reference", no_argument, NULL, OPT_REF},
        {"print-routes", no_argument, NULL, OPT_ROUTES},
        {"version", no_argument, NULL, OPT_VERSION},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *config_file = NULL, *ready_file = NULL;
    bool print = false;
    /* Flags are applied after file and env: collect them first as key=value pairs. */
    const char **sets = calloc((size_t)argc + 1, sizeof *sets);
    char **owned = calloc((size_t)argc + 1, sizeof *owned);
    size_t n_sets = 0, n_owned = 0;
    if (!sets || !owned) {
        return 1;
    }
    int c;
    while ((c = getopt_long(argc, argv, "d:l:c:h", opts, NULL)) != -1) {
        const char *key = NULL;
        switch (c) {
        case 'd':
            key = "data_dir";
            break;
        case 'l':
            key = "listen";
            break;
        case OPT_STORE:
            key = "store.url";
            break;
        case 'c':
            config_file = optarg;
            break;
        case OPT_READY:
            ready_file = optarg;
            break;
        case OPT_SET:
            sets[n_sets++] = optarg;
            break;
        case OPT_PRINT:
            print = true;
            break;
        case OPT_REF:
            config_print_reference(stdout);
            free_args(sets, owned, n_owned);
            return 0;
        case OPT_ROUTES: {
            /* The route declaration as JSON, the configured maxima at their defaults:
             * tests/integration/openapi_check.py compares it with doc/openapi.json. */
            struct config defaults;
            char *text = config_init(&defaults) == 0 ? routes_json(&defaults) : NULL;
            if (text != NULL) {
                printf("%s\n", text);
            }
            free(text);
            config_cleanup(&defaults);
            free_args(sets, owned, n_owned);
            return text != NULL ? 0 : 1;
        }
        case OPT_VERSION:
            printf("roostd %s\n", ROOST_VERSION);
            free_args(sets, owned, n_owned);
            return 0;
        case 'h':
            usage(stdout);
            free_args(sets, owned, n_owned);
            return 0;
        default:
            usage(stderr);
            free_args(sets, owned, n_owned);
            return 2;
        }
        if (key) {
            size_t len = strlen(key) + strlen(optarg) + 2;
            char *kv = malloc(len);
            if (!kv) {
                return 1;
            }
            snprintf(kv, len, "%s=%s", key, optarg);
            owned[n_owned++] = kv;
            sets[n_sets++] = kv;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "roostd: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        free_args(sets, owned, n_owned);
        return 2;
    }

    struct config cfg;
    char err[512] = "";
    int exit_code = 2;
    /* Kept for the process lifetime: SIGHUP rebuilds the auth keys from the same sources. */
    const struct config_source source = {
        .file = config_file, .sets = sets, .n_sets = n_sets, .envp = environ};
    if (config_build(&cfg, &source, err, sizeof err) != 0) {
        goto out;
    }
    if (print) {
        config_print(&cfg, stdout);
        exit_code = 0;
        goto out;
    }
    log_set_level((enum log_level)log_level_parse(cfg.log_level));
    log_set_json(strcmp(cfg.log_format, "json") == 0);
    raise_nofile();

    struct daemon d;
    exit_code = 1;
    int lock_fd = lock_data_dir(cfg.data_dir, err, sizeof err);
    if (lock_fd < 0) {
        goto out;
    }
    if (daemon_start(&d, &cfg, &source, ready_file, err, sizeof err) != 0) {
        daemon_cleanup(&d);
        goto out;
    }
    int rc = daemon_run(&d);
    daemon_cleanup(&d);
    log_info("roostd stopped", "%s", "");
    exit_code = rc == 0 ? 0 : 1;
    err[0] = '\0';
out:
    if (err[0]) {
        fprintf(stderr, "roostd: %s\n", err);
    }
    config_cleanup(&cfg);
    free_args(sets, owned, n_owned);
    return exit_code;
}
