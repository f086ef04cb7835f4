/* SPDX-License-Identifier: MIT */
/* The chaos runner's TCP proxy as a program: the harness proxy (tests/harness/tcp_proxy.c)
 * between agents and roostd or between roostd and a database, driven by lines on stdin.
 *
 *   chaos_proxy TARGET_PORT [mysql|pg]   prints "port N" (its loopback port), then obeys:
 *   cut        close every connection now
 *   block      cut, and close every new connection at once, until "unblock"
 *   stall      forward, read and accept nothing (open, silent connections) until "resume"
 *   conns      answer "ok N": N client connections open (as of the thread's last round)
 *   commitlost N   (mysql, pg) the answers of the next N COMMITs are lost, their connections cut
 *   cuts       answer "ok N": how many such cuts happened since the start
 *   quit       (or end of input) stop
 *
 * Every command is answered "ok" once the proxy thread has been told. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/banned.h"
#include "harness/tcp_proxy.h"

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: chaos_proxy TARGET_PORT [mysql|pg]\n");
        return 2;
    }
    char *end = NULL;
    long port = strtol(argv[1], &end, 10);
    if (*end != '\0' || port < 1 || port > 65535) {
        fprintf(stderr, "chaos_proxy: bad port %s\n", argv[1]);
        return 2;
    }
    const char *proto = argc == 3 ? argv[2] : "";
    struct tcp_proxy *p = strcmp(proto, "pg") == 0 ? tcp_proxy_start_pg("127.0.0.1", (int)port)
                                                   : tcp_proxy_start("127.0.0.1", (int)port,
                                                                     strcmp(proto, "mysql") == 0);
    if (!p) {
        return 1;
    }
    printf("port %d\n", tcp_proxy_port(p));
    fflush(stdout);
    char line[128];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (strcmp(line, "cut") == 0) {
            tcp_proxy_cut_all(p);
        } else if (strcmp(line, "block") == 0) {
            tcp_proxy_block(p, true);
        } else if (strcmp(line, "unblock") == 0) {
            tcp_proxy_block(p, false);
        } else if (strcmp(line, "stall") == 0) {
            tcp_proxy_stall(p, true);
        } else if (strcmp(line, "resume") == 0) {
            tcp_proxy_stall(p, false);
        } else if (strncmp(line, "commitlost ", 11) == 0) {
            tcp_proxy_arm(p, TCP_PROXY_COMMIT_ANSWER_LOST, (int)strtol(line + 11, NULL, 10));
        } else if (strcmp(line, "cuts") == 0) {
            printf("ok %d\n", tcp_proxy_cuts(p));
            fflush(stdout);
            continue;
        } else if (strcmp(line, "conns") == 0) {
            printf("ok %d\n", tcp_proxy_conns(p));
            fflush(stdout);
            continue;
        } else if (strcmp(line, "quit") == 0) {
            break;
        } else {
            printf("unknown %s\n", line);
            fflush(stdout);
            continue;
        }
        printf("ok\n");
        fflush(stdout);
    }
    tcp_proxy_stop(p);
    return 0;
}
