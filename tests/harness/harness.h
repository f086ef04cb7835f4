/* SPDX-License-Identifier: MIT */
/* The integration-test harness: starts the real roostd on port 0 with a ready file, stops it
 * (SIGTERM, exit status 0 required) or kills it, mints tokens with its key, talks HTTP through
 * libcurl + jansson, and sends exact bytes over a raw socket for malformed input. The checks are
 * the one kit of check.h; h_summary() ends a test with its "N passed, N failed" line. */
#ifndef ROOST_TEST_HARNESS_H
#define ROOST_TEST_HARNESS_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "harness/check.h"

/* Polls `cond` every 10 ms until it holds or the deadline passed; `ok` tells which. A deadline
 * for a condition that must come true, never a sleep standing in for synchronisation, so it is
 * stretched by h_patience(): `timeout_ms` is what an idle machine needs, and a loaded one (the
 * suite at -j4 on 2 cores beside other work) may need several times that. Passing runs are not
 * slowed; only a failure takes longer to report. */
#define H_WAIT_UNTIL(ok, timeout_ms, cond)                                                         \
    do {                                                                                           \
        int64_t h_deadline_ = h_now_ms() + h_patience(timeout_ms);                                 \
        (ok) = false;                                                                              \
        for (;;) {                                                                                 \
            if (cond) {                                                                            \
                (ok) = true;                                                                       \
                break;                                                                             \
            }                                                                                      \
            if (h_now_ms() >= h_deadline_) {                                                       \
                break;                                                                             \
            }                                                                                      \
            h_sleep_ms(10);                                                                        \
        }                                                                                          \
    } while (0)

/* Global set-up (libcurl, SIGPIPE, fd limit); call first in main(). */
void h_init(void);
/* Prints "N passed, N failed" and returns the exit code; releases global state. */
int h_summary(void);

int64_t h_now_ms(void); /* monotonic */
/* timeout_ms × ROOST_TEST_PATIENCE (an integer 1..100 from the environment, default 6). */
int64_t h_patience(int64_t timeout_ms);
void h_sleep_ms(int ms);

/* malloc'd printf; never NULL (aborts on OOM: a test cannot continue without memory). */
char *h_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Reads a whole file of at most H_READ_FILE_MAX_BYTES; 0 or -1. *data is NUL-terminated (not
 * counted in *len); caller frees. */
#define H_READ_FILE_MAX_BYTES (64u << 20)
int h_read_file(const char *path, char **data, size_t *len);

/* ---- HTTP (libcurl) ---- */

struct h_client; /* one curl easy handle bound to a base URL; one thread at a time */

struct h_client *h_client_new(const char *base_url);
void h_client_free(struct h_client *c);

struct h_response {
    long status;  /* -1 when the transfer failed */
    json_t *json; /* parsed body, NULL when empty or not JSON */
    char *body;   /* raw body, NUL-terminated */
    size_t body_len;
    char *headers; /* raw header block, NUL-terminated */
    int64_t elapsed_ms;
};
void h_response_cleanup(struct h_response *r);

struct h_req_opts {
    const char *content_type;   /* NULL: application/json when there is a body; "" = none */
    const char *extra_header;   /* one more "Name: value" line, or NULL */
    const char *const *headers; /* more such lines, NULL-ended, or NULL */
    long timeout_ms;            /* 0: 30 s */
};

/* One request. body may be NULL (no body); body_len 0 with a non-NULL body sends an empty body
 * with Content-Length: 0. Returns 0 when an HTTP answer came back, -1 otherwise. */
int h_request(struct h_client *c, const char *method, const char *path, const char *token,
              const char *body, size_t body_len, const struct h_req_opts *opts,
              struct h_response *out);

/* The common case: JSON text body (or NULL). Returns 0/-1 as h_request; *status and *json_out
 * (may be NULL; the caller decrefs) are set. */
int http_request(struct h_client *c, const char *method, const char *path, const char *token,
                 const char *body, long *status, json_t **json_out);

/* The value of response header `name` (case-insensitive, first match) copied to buf, or NULL. */
const char *h_header(const struct h_response *r, const char *name, char *buf, size_t len);
/* error.code of an error body, or NULL. */
const char *h_error_code(const json_t *j);

/* ---- the daemon ---- */

struct roostd {
    pid_t pid;
    char dir[256];       /* data dir */
    char url[128];       /* base URL from the ready file */
    char store_url[512]; /* MariaDB mode: the database of this data dir; "" with SQLite */
    char host[64];
    int port;
    void *key;             /* EVP_PKEY *: roostd's token key, read from the data dir */
    struct h_client *http; /* a client for the main thread */
};

/* Starts roostd with --data-dir (a new mkdtemp dir when data_dir is NULL), --listen
 * 127.0.0.1:0, --ready-file DIR/ready and one --set per entry of the NULL-ended `sets` (an entry
 * starting with "--", such as "--config=FILE", is passed as that option instead). Waits
 * for the ready file (polling, deadline 15 s) while checking that the child is alive. Output goes
 * to DIR/roostd.log. Returns 0, or -1 after printing why and the log (a directory it created is
 * removed again). */
int roostd_start(struct roostd *d, const char *data_dir, const char *const *sets);
/* roostd_start() as a check: true when roostd started, else a failed check ("roostd started")
 * and false (nothing to clean up then). */
bool roostd_start_checked(struct roostd *d, const char *data_dir, const char *const *sets);
/* The end of a test's daemon: roostd_stop(), checked to exit with status 0, then
 * roostd_remove_dir(). */
void roostd_finish(struct roostd *d);
/* The store URL roostd was given (MariaDB mode), or NULL (SQLite in the data dir). A second node
 * on the same database passes "store.url=<it>". */
const char *roostd_store_url(const struct roostd *d);
/* SIGTERM, then waits (deadline 20 s). Returns the exit status, or -1 when killed by a signal or
 * still running at the deadline (then SIGKILLed). The data dir is kept. */
int roostd_stop(struct roostd *d);
/* SIGKILL and reap. The data dir is kept. */
void roostd_kill(struct roostd *d);
bool roostd_alive(struct roostd *d);
/* Removes the data dir and everything in it. */
void roostd_remove_dir(struct roostd *d);
/* How often `needle` occurs in the daemon's log so far (0 when it cannot be read). */
int roostd_log_count(const struct roostd *d, const char *needle);
/* SIGHUP, then waits (deadline 10 s) until `needle` occurs once more in the log. */
bool roostd_hup_and_wait(const struct roostd *d, const char *needle);
/* Prints the last bytes of the daemon's log to stderr (for failures). */
void roostd_print_log(const struct roostd *d);

/* A token signed with roostd's key: {"tenant","sub":"test","scope","iat","exp":now+3600}. */
char *h_token(const struct roostd *d, const char *tenant, const char *scope);
/* A token over arbitrary claims (borrowed). Caller frees. */
char *h_token_claims(const struct roostd *d, const json_t *claims);

/* ---- raw sockets ---- */

#define RAW_MAX_RESPONSES 16

struct raw_reply {
    char *buf; /* everything received, NUL-terminated */
    size_t len;
    bool closed;    /* the server closed (EOF or reset) */
    bool timed_out; /* the deadline passed first */
    int n_responses;
    int status[RAW_MAX_RESPONSES]; /* status of each complete response (100 counts too) */
};

/* Connects to the daemon, sends `req` byte-exact (interleaved with reading, so an early answer
 * and close are seen) and reads until the server closes, `want_responses` complete responses
 * were parsed (0 = read until close), or timeout_ms passed. 0, or -1 when it cannot connect. */
int raw_exchange(const struct roostd *d, const void *req, size_t len, int want_responses,
                 int timeout_ms, struct raw_reply *out);
void raw_reply_cleanup(struct raw_reply *r);
/* Copies `req` with `header_line` ("Name: value", no CRLF) inserted after the request line,
 * keeping the request's own line ending. Caller frees. */
char *raw_insert_header(const char *req, size_t len, const char *header_line, size_t *out_len);

/* ---- API shortcuts (api.c) ---- */

/* One request with a JSON body (stolen; NULL = no body) to a printf-formatted path. Returns the
 * status (-1 on transport failure); *out (may be NULL) gets the JSON answer. */
long h_callj(struct h_client *c, const char *method, const char *token, json_t *body, json_t **out,
             const char *path_fmt, ...) __attribute__((format(printf, 6, 7)));

/* One request expected to fail as h_callj would send it: checks its status and the answer's
 * error.code (a failed check names the method and path). */
void h_expect_error(struct h_client *c, const char *method, const char *token, json_t *body,
                    long status, const char *code, const char *path_fmt, ...)
    __attribute__((format(printf, 7, 8)));

/* Publishes one event to `agent`: {"recipients":[agent],"payload":payload} plus the fields of
 * `extra` (stolen, may be NULL). Returns the sequence number, or -status on failure; event_id
 * (may be NULL, 31 bytes) gets the id. */
int64_t h_publish(struct h_client *c, const char *token, const char *agent, json_t *payload,
                  json_t *extra, char *event_id);
/* Claims: returns the "events" array (new reference) or NULL when the status is not 200. */
json_t *h_claim(struct h_client *c, const char *token, const char *agent, int limit, int lease_s,
                const char *consumer);
/* Acks one event; returns the status. */
long h_ack(struct h_client *c, const char *token, const char *agent, const char *event_id,
           const char *lease_token);
/* GET inbox?after_cursor=&limit=; returns the whole answer (new reference), *status set. */
json_t *h_inbox(struct h_client *c, const char *token, const char *agent, int64_t after, int limit,
                long *status);
/* A long-polling claim ({"wait_s":wait_s,"limit":1}) of `agent`, sent from a thread with a
 * client of its own: fill in url, token, agent and wait_s, then h_claim_start; h_claim_join waits
 * for the answer and fills in the rest (status -1: no answer). */
struct h_waiting_claim {
    const char *url, *token, *agent;
    int wait_s;
    long status;
    char event_id[31];
    char lease_token[64];
    long long attempts;
    pthread_t thread;
};
void h_claim_start(struct h_waiting_claim *c);
void h_claim_join(struct h_waiting_claim *c);
/* Waits (up to 20 s) until the node `c` talks to has `n` long polls parked (roost_long_polls). */
bool h_wait_parked(struct h_client *c, double n);

/* GET /metrics (with "Authorization: Bearer <bearer>" unless NULL): the exposition text (caller
 * frees), or NULL when the status is not 200. */
char *h_scrape(struct h_client *c, const char *bearer);
/* The value of the sample whose name and labels are exactly `series` ("name{a=\"b\"}") in the
 * exposition `text` (may be NULL), or -1. */
double h_sample(const char *text, const char *series);
/* h_sample of a fresh h_scrape without a bearer: -1 when either fails. */
double h_metric(struct h_client *c, const char *series);

/* Shorthands for members of JSON objects and arrays. */
const char *h_str(const json_t *obj, const char *key);
json_int_t h_int(const json_t *obj, const char *key);
json_t *h_at(const json_t *arr, size_t i);

#endif
