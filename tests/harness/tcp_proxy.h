/* SPDX-License-Identifier: MIT */
/* A loopback TCP proxy for tests that need a connection to break at an exact point: between
 * roostd and MariaDB it recognises the COMMIT of a write transaction (the COM_QUERY carrying
 * "; COMMIT"; with PostgreSQL the simple Query ending in COMMIT) and loses its answer, or never
 * sends it; between a client and roostd it loses the
 * next HTTP answer. Everything else is forwarded byte for byte. One thread; any thread may arm. */
#ifndef ROOST_TEST_TCP_PROXY_H
#define ROOST_TEST_TCP_PROXY_H

#include <stdbool.h>
#include <stddef.h>

enum tcp_proxy_cut {
    TCP_PROXY_PASS = 0,
    /* MySQL: the COMMIT reaches the server (it commits), the answer is read and dropped, and both
     * connections are cut. */
    TCP_PROXY_COMMIT_ANSWER_LOST,
    /* MySQL: the COMMIT is never sent; both connections are cut (the server rolls back). */
    TCP_PROXY_COMMIT_NOT_SENT,
    /* MySQL: the COMMIT is never sent; the client side is cut, the server side stays open and
     * silent (a server that has not noticed the drop: its transaction keeps its locks). */
    TCP_PROXY_COMMIT_NOT_SENT_HOLD,
    /* Any protocol: the next bytes any server sends are dropped and both connections cut. */
    TCP_PROXY_ANSWER_LOST,
};

struct tcp_proxy;

/* Listens on 127.0.0.1 (port 0) and forwards to host:port (an IPv4 address); `mysql`: the
 * clients speak the MySQL protocol (needed by the COMMIT cuts). NULL with a message on stderr. */
struct tcp_proxy *tcp_proxy_start(const char *host, int port, bool mysql);
/* The same for clients speaking the PostgreSQL protocol (the "MySQL" COMMIT cuts apply to its
 * COMMIT; the answer dropped ends at ReadyForQuery). */
struct tcp_proxy *tcp_proxy_start_pg(const char *host, int port);
int tcp_proxy_port(const struct tcp_proxy *p);
/* The next `times` matching points get `cut`; then the proxy passes again. */
void tcp_proxy_arm(struct tcp_proxy *p, enum tcp_proxy_cut cut, int times);
/* The same, but a MySQL cut takes only a query holding `only` (up to 63 bytes; NULL: any
 * COMMIT), such as a claim's UPDATE sent with its COMMIT; it may be any query, not only a
 * COMMIT: TCP_PROXY_COMMIT_ANSWER_LOST then cuts both connections as its answer begins. */
void tcp_proxy_arm_only(struct tcp_proxy *p, enum tcp_proxy_cut cut, int times, const char *only);
/* A partition: while on, no byte passes either way and new connections are accepted but never
 * answered (a network dropping every packet: peers notice only by their timeouts); turning it
 * off closes every connection, old and new, and forwarding resumes for the next ones. */
void tcp_proxy_partition(struct tcp_proxy *p, bool on);
/* How many cuts happened since the start. */
int tcp_proxy_cuts(struct tcp_proxy *p);
/* The start (up to 63 bytes) of the MySQL query cut last ("" for none, or PostgreSQL's). */
void tcp_proxy_last_cut(struct tcp_proxy *p, char *out, size_t n);
/* Faults of the chaos runner (tests/chaos/chaos_proxy.c), for a time the caller decides.
 * cut_all closes every connection now. block: every connection is cut and new ones are closed
 * as soon as accepted (a refused path) until unblocked. stall: nothing is read, forwarded or
 * accepted (connections stay open and silent: a black hole) until unstalled. */
void tcp_proxy_cut_all(struct tcp_proxy *p);
void tcp_proxy_block(struct tcp_proxy *p, bool on);
void tcp_proxy_stall(struct tcp_proxy *p, bool on);
/* How many client connections are open now (which of several database nodes a client uses). */
int tcp_proxy_conns(struct tcp_proxy *p);
/* Stops the thread and closes every connection. NULL is a no-op. */
void tcp_proxy_stop(struct tcp_proxy *p);

#endif
