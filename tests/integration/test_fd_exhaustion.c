/* SPDX-License-Identifier: MIT */
/* Out of file descriptors: when accept(2) fails with EMFILE the connection stays in the backlog,
 * so a naive listener fires again at once and spins a core. roostd pauses accepting instead, says
 * so in its log, keeps serving the connections it has, and accepts again once descriptors free
 * up. The daemon's limit is lowered from outside with prlimit(2). */
#define _GNU_SOURCE /* prlimit(2) */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness/harness.h"

#include "common/banned.h"

#define N_CONNS 64

static struct roostd d;

static int count_open_fds(pid_t pid)
{
    char cmd[64];
    snprintf(cmd, sizeof cmd, "ls /proc/%d/fd | wc -l", (int)pid);
    FILE *p = popen(cmd, "r");
    int n = -1;
    if (p != NULL) {
        if (fscanf(p, "%d", &n) != 1) {
            n = -1;
        }
        pclose(p);
    }
    return n;
}

/* utime + stime of the process, in clock ticks. */
static long cpu_ticks(pid_t pid)
{
    char *path = h_fmt("/proc/%d/stat", (int)pid), *stat = NULL;
    size_t len;
    long ticks = -1;
    if (h_read_file(path, &stat, &len) == 0) {
        const char *p = strrchr(stat, ')'); /* the command name may hold spaces */
        unsigned long utime, stime;
        if (p != NULL && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
                                &utime, &stime) == 2) {
            ticks = (long)(utime + stime);
        }
    }
    free(stat);
    free(path);
    return ticks;
}

static void test_http_emfile_pauses_accept_and_recovers(void)
{
    int base_fds = count_open_fds(d.pid);
    CHECK(base_fds > 0);
    /* Only the soft limit goes down, so it can go back up without privileges. */
    struct rlimit orig;
    CHECK_EQ(prlimit(d.pid, RLIMIT_NOFILE, NULL, &orig), 0);
    struct rlimit low = {.rlim_cur = (rlim_t)base_fds + 8, .rlim_max = orig.rlim_max};
    CHECK_EQ(prlimit(d.pid, RLIMIT_NOFILE, &low, NULL), 0);

    int fds[N_CONNS];
    int opened = 0;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)d.port)};
    inet_pton(AF_INET, d.host, &sa.sin_addr);
    for (int i = 0; i < N_CONNS; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fds[i] < 0 || connect(fds[i], (struct sockaddr *)&sa, sizeof sa) != 0) {
            break;
        }
        opened++;
    }
    CHECK_EQ(opened, N_CONNS); /* the kernel's backlog takes them */
    bool ok;
    H_WAIT_UNTIL(ok, 10000, roostd_log_count(&d, "accept failed, pausing new connections") > 0);
    CHECK(ok);

    /* Paused, not spinning: over one second the daemon uses well under half a core. */
    long t0 = cpu_ticks(d.pid);
    h_sleep_ms(1000);
    long t1 = cpu_ticks(d.pid);
    long hz = sysconf(_SC_CLK_TCK);
    CHECK(t0 >= 0 && t1 >= 0);
    CHECK(t1 - t0 < hz / 2);
    CHECK(roostd_alive(&d));

    /* Descriptors come back: the daemon accepts again and answers. */
    for (int i = 0; i < opened; i++) {
        close(fds[i]);
    }
    CHECK_EQ(prlimit(d.pid, RLIMIT_NOFILE, &orig, NULL), 0);
    struct h_client *c = h_client_new(d.url);
    long st = 0;
    H_WAIT_UNTIL(ok, 10000,
                 http_request(c, "GET", "/healthz", NULL, NULL, &st, NULL) == 0 && st == 200);
    CHECK(ok);
    h_client_free(c);
}

int main(void)
{
    h_init();
    static const char *const sets[] = {"store.synchronous=normal", "http.timeout_s=60", NULL};
    if (!roostd_start_checked(&d, NULL, sets)) {
        return h_summary();
    }
    RUN(test_http_emfile_pauses_accept_and_recovers);
    roostd_finish(&d);
    return h_summary();
}
