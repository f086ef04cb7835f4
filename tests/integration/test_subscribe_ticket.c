/* SPDX-License-Identifier: MIT */
/* Subscribe tickets (POST /api/v1/agents/{agent}/subscribe/ticket, then subscribe?ticket=): a
 * ticket opens one stream once, only for its agent, only before auth.ticket_ttl_s passed, never
 * as a bearer token, and the stream still ends when the token that asked for it expires. On
 * MariaDB a second node sharing the store and the token key accepts the ticket once, and after
 * that neither node does (the nonce is claimed in the shared store). */
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "harness/harness.h"
#include "harness/sse_client.h"

#include "common/banned.h"

#define TTL_S 2

static struct roostd D;
static char *TOK; /* t1: read on tk.* only */

/* A fresh ticket for `agent` (caller frees), or NULL with the status in *status. */
static char *ticket_for(struct roostd *d, const char *tok, const char *agent, long *status,
                        json_int_t *expires_in_s)
{
    json_t *out = NULL;
    long st =
        h_callj(d->http, "POST", tok, NULL, &out, "/api/v1/agents/%s/subscribe/ticket", agent);
    char *ticket = NULL;
    if (status) {
        *status = st;
    }
    if (st == 201 && h_str(out, "ticket")) {
        ticket = h_fmt("%s", h_str(out, "ticket"));
        if (expires_in_s) {
            *expires_in_s = h_int(out, "expires_in_s");
        }
    }
    json_decref(out);
    return ticket;
}

/* Opens subscribe?ticket= on `d` (no Authorization) and returns the status; the stream stays in
 * *s when it is 200 (the caller closes it). */
static int open_with_ticket(struct sse *s, struct roostd *d, const char *agent, const char *ticket)
{
    char *path = h_fmt("/api/v1/agents/%s/subscribe?ticket=%s", agent, ticket);
    int status = sse_open(s, d, path, NULL, NULL, 0);
    free(path);
    return status;
}

static void test_ticket_opens_one_stream_once(void)
{
    CHECK_EQ(h_publish(D.http, TOK, "tk.a", NULL, NULL, NULL), -403); /* read-only token */
    json_int_t in_s = 0;
    long st = 0;
    char *ticket = ticket_for(&D, TOK, "tk.a", &st, &in_s);
    CHECK_EQ(st, 201);
    CHECK(ticket != NULL && strncmp(ticket, "rt1.", 4) == 0);
    CHECK(in_s >= 1 && in_s <= TTL_S);
    if (!ticket) {
        return;
    }
    struct sse s;
    CHECK_EQ(open_with_ticket(&s, &D, "tk.a", ticket), 200);
    struct sse_ev ev;
    CHECK_EQ(sse_next(&s, &ev, 2000), 1); /* retry: */
    CHECK_EQ(sse_next(&s, &ev, 2000), 1);
    CHECK_STREQ(ev.event, "inbox_updated");
    sse_close(&s);
    /* The same ticket again: refused, even though it has not expired. */
    struct sse again;
    CHECK_EQ(open_with_ticket(&again, &D, "tk.a", ticket), 401);
    sse_close(&again);
    free(ticket);
}

static void test_ticket_is_bound_to_its_agent_and_signature(void)
{
    char *ticket = ticket_for(&D, TOK, "tk.a", NULL, NULL);
    CHECK(ticket != NULL);
    if (!ticket) {
        return;
    }
    struct sse s;
    CHECK_EQ(open_with_ticket(&s, &D, "tk.b", ticket), 401); /* another agent */
    sse_close(&s);
    /* One payload character changed: the signature no longer verifies. */
    char *forged = h_fmt("%s", ticket);
    forged[6] = forged[6] == 'A' ? 'B' : 'A';
    CHECK_EQ(open_with_ticket(&s, &D, "tk.a", forged), 401);
    sse_close(&s);
    CHECK_EQ(open_with_ticket(&s, &D, "tk.a", "rt1.garbage"), 401);
    sse_close(&s);
    /* A ticket is no bearer token, on subscribe or anywhere else. */
    CHECK_EQ(sse_open(&s, &D, "/api/v1/agents/tk.a/subscribe", ticket, NULL, 0), 401);
    sse_close(&s);
    long status = 0;
    json_decref(h_inbox(D.http, ticket, "tk.a", 0, 1, &status));
    CHECK_EQ(status, 401);
    /* The forgeries did not use it up. */
    CHECK_EQ(open_with_ticket(&s, &D, "tk.a", ticket), 200);
    sse_close(&s);
    free(forged);
    free(ticket);
}

static void test_ticket_needs_read_scope(void)
{
    long st = 0;
    CHECK(ticket_for(&D, NULL, "tk.a", &st, NULL) == NULL);
    CHECK_EQ(st, 401);
    CHECK(ticket_for(&D, TOK, "other.a", &st, NULL) == NULL); /* TOK reads tk.* only */
    CHECK_EQ(st, 403);
    char *admin = h_token(&D, "t1", "tenant:admin");
    CHECK(ticket_for(&D, admin, "tk.a", &st, NULL) == NULL);
    CHECK_EQ(st, 403);
    free(admin);
    /* A body is refused: the route takes none. */
    json_t *out = NULL;
    CHECK_EQ(h_callj(D.http, "POST", TOK, json_pack("{s:i}", "ttl_s", 5), &out,
                     "/api/v1/agents/tk.a/subscribe/ticket"),
             400);
    CHECK_STREQ(h_error_code(out), "unknown_field");
    json_decref(out);
}

static void test_ticket_expires(void)
{
    char *ticket = ticket_for(&D, TOK, "tk.a", NULL, NULL);
    CHECK(ticket != NULL);
    if (!ticket) {
        return;
    }
    /* Time passing is what is tested here: the ticket lives auth.ticket_ttl_s (2 s). */
    h_sleep_ms(TTL_S * 1000 + 100);
    struct sse s;
    CHECK_EQ(open_with_ticket(&s, &D, "tk.a", ticket), 401);
    sse_close(&s);
    free(ticket);
    /* A fresh one works. */
    ticket = ticket_for(&D, TOK, "tk.a", NULL, NULL);
    CHECK(ticket != NULL);
    CHECK_EQ(ticket ? open_with_ticket(&s, &D, "tk.a", ticket) : -1, 200);
    sse_close(&s);
    free(ticket);
}

static void test_ticket_stream_ends_with_the_token(void)
{
    /* The token lives 2-3 s (exp is in whole seconds): time enough to open the stream on a
     * loaded machine (at exp = now + 1 it could be a few ms), short enough to see it end. */
    json_t *claims = json_pack("{s:s, s:s, s:s, s:I, s:I}", "tenant", "t1", "sub", "short", "scope",
                               "agent:tk.*:read", "iat", (json_int_t)time(NULL), "exp",
                               (json_int_t)time(NULL) + 3);
    char *short_tok = h_token_claims(&D, claims);
    json_decref(claims);
    json_int_t in_s = 0;
    char *ticket = ticket_for(&D, short_tok, "tk.a", NULL, &in_s);
    CHECK(ticket != NULL);
    CHECK(in_s <= 3); /* never longer than the token */
    struct sse s;
    int status = ticket ? open_with_ticket(&s, &D, "tk.a", ticket) : -1;
    if (status == 200) {
        struct sse_ev ev;
        CHECK_EQ(sse_next_named(&s, "token_expired", &ev, 10000, NULL), 1);
    } else {
        CHECK(!"the short token's ticket opened a stream");
    }
    if (ticket) {
        sse_close(&s); /* a refused stream's buffers too */
    }
    free(ticket);
    free(short_tok);
}

/* MariaDB: a second node on the same store with the same token key. */
static void test_ticket_single_use_across_nodes(void)
{
    if (roostd_store_url(&D) == NULL) {
        return; /* SQLite: one node per database */
    }
    /* Node 2's data dir starts with node 1's token key (the harness mints from the data dir). */
    char *same_db = h_fmt("store.url=%s", roostd_store_url(&D));
    char dir2[] = "/tmp/roost-tk2-XXXXXX";
    char *key1 = h_fmt("%s/token_ed25519.pem", D.dir);
    char *key2 = h_fmt("%s/token_ed25519.pem", dir2);
    char *key_text = NULL;
    size_t key_len = 0;
    bool copied = mkdtemp(dir2) != NULL && h_read_file(key1, &key_text, &key_len) == 0;
    if (copied) {
        free(key2);
        key2 = h_fmt("%s/token_ed25519.pem", dir2);
        int fd = open(key2, O_WRONLY | O_CREAT | O_EXCL, 0600);
        copied = fd >= 0 && write(fd, key_text, key_len) == (ssize_t)key_len;
        if (fd >= 0) {
            close(fd);
        }
    }
    free(key_text);
    free(key1);
    free(key2);
    const char *sets[] = {same_db, NULL};
    struct roostd n2;
    if (!copied || roostd_start(&n2, dir2, sets) != 0) {
        CHECK(!"node 2 started");
        free(same_db);
        return;
    }
    char *ticket = ticket_for(&D, TOK, "tk.a", NULL, NULL);
    CHECK(ticket != NULL);
    struct sse s;
    CHECK_EQ(ticket ? open_with_ticket(&s, &n2, "tk.a", ticket) : -1, 200);
    sse_close(&s);
    CHECK_EQ(ticket ? open_with_ticket(&s, &D, "tk.a", ticket) : -1, 401);
    sse_close(&s);
    CHECK_EQ(ticket ? open_with_ticket(&s, &n2, "tk.a", ticket) : -1, 401);
    sse_close(&s);
    free(ticket);
    roostd_finish(&n2);
    free(same_db);
}

/* Minting is rate-limited per tenant (limits.tickets_per_s = 1: bursts of 2): a tenant minting
 * in a loop soon gets 429 too_many_requests with a Retry-After, while another tenant still gets
 * its ticket at once. Two hundred mints would have to take over three minutes to never meet
 * the limit, so the 429 does not depend on the machine's speed. */
static void test_ticket_minting_rate_limited(void)
{
    static const char *const sets[] = {"limits.tickets_per_s=1", NULL};
    struct roostd n;
    if (!roostd_start_checked(&n, NULL, sets)) {
        return;
    }
    char *tok_a = h_token(&n, "ta", "agent:tk.*:read");
    char *tok_b = h_token(&n, "tb", "agent:tk.*:read");
    struct h_response r = {0};
    int minted = 0;
    for (int i = 0; i < 200; i++) {
        h_response_cleanup(&r);
        memset(&r, 0, sizeof r);
        if (h_request(n.http, "POST", "/api/v1/agents/tk.a/subscribe/ticket", tok_a, NULL, 0, NULL,
                      &r) != 0 ||
            r.status != 201) {
            break;
        }
        minted++;
    }
    CHECK(minted >= 2); /* the burst */
    CHECK_EQ(r.status, 429);
    CHECK(h_error_code(r.json) != NULL && strcmp(h_error_code(r.json), "too_many_requests") == 0);
    char after[32];
    const char *ra = h_header(&r, "Retry-After", after, sizeof after);
    CHECK(ra != NULL && strtol(ra, NULL, 10) >= 1);
    h_response_cleanup(&r);
    long st = 0;
    char *ticket = ticket_for(&n, tok_b, "tk.a", &st, NULL);
    CHECK_EQ(st, 201); /* another tenant's bucket is its own */
    free(ticket);
    free(tok_a);
    free(tok_b);
    roostd_finish(&n);
}

int main(void)
{
    h_init();
    static const char *const sets[] = {"auth.ticket_ttl_s=2", NULL};
    if (!roostd_start_checked(&D, NULL, sets)) {
        return h_summary();
    }
    TOK = h_token(&D, "t1", "agent:tk.*:read");
    RUN(test_ticket_opens_one_stream_once);
    RUN(test_ticket_is_bound_to_its_agent_and_signature);
    RUN(test_ticket_needs_read_scope);
    RUN(test_ticket_expires);
    RUN(test_ticket_stream_ends_with_the_token);
    RUN(test_ticket_single_use_across_nodes);
    RUN(test_ticket_minting_rate_limited);
    free(TOK);
    roostd_finish(&D);
    return h_summary();
}
