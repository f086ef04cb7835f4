/* SPDX-License-Identifier: MIT */
/* A minimal Roost agent on libroost: prints each event's payload, acks it, and stops cleanly on
 * Ctrl-C (the leases it still holds are released).
 *
 *   ROOST_SERVER=http://127.0.0.1:8080 ROOST_TOKEN=... build/bin/roost_example_agent agent-1 ./st
 *
 * A payload {"fail":true} is released with backoff, {"poison":true} quarantined. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <roost/roost.h>

static struct roost_agent *agent;

static void on_signal(int sig)
{
    (void)sig;
    roost_agent_stop(agent); /* async-signal-safe */
}

static int handle(const struct roost_event *ev, void *ctx)
{
    (void)ctx;
    const char *payload = ev->payload != NULL ? ev->payload : "{}";
    printf("event %s (seq %lld, attempt %d): %s\n", ev->event_id, (long long)ev->sequence_number,
           ev->attempts, payload);
    fflush(stdout);
    if (strstr(payload, "\"poison\":true") != NULL) {
        return ROOST_AGENT_QUARANTINE;
    }
    if (strstr(payload, "\"fail\":true") != NULL) {
        return ROOST_AGENT_RELEASE;
    }
    return ROOST_AGENT_ACK;
}

static void on_conn(enum roost_agent_conn conn, void *ctx)
{
    (void)ctx;
    fprintf(stderr, "connection: %s\n", roost_agent_conn_name(conn));
}

static void on_state(const char *state_json, int64_t cursor, void *ctx)
{
    (void)ctx;
    fprintf(stderr, "resync after 410: cursor %lld, state %s\n", (long long)cursor, state_json);
}

int main(int argc, char **argv)
{
    const char *server = getenv("ROOST_SERVER");
    const char *token = getenv("ROOST_TOKEN");
    if (argc != 3 || server == NULL || token == NULL) {
        fprintf(stderr, "usage: ROOST_SERVER=URL ROOST_TOKEN=JWT %s AGENT_ID STATE_DIR\n", argv[0]);
        return 2;
    }
    struct roost_agent_options o;
    roost_agent_options_init(&o);
    o.server_url = server;
    o.token = token;
    o.agent_id = argv[1];
    o.state_dir = argv[2];
    o.concurrency = 4;
    o.handler = handle;
    o.on_conn = on_conn;
    o.on_state = on_state;
    int rc = roost_agent_new(&agent, &o);
    if (rc != ROOST_OK) {
        fprintf(stderr, "roost_agent_new: %s\n", roost_strerror(rc));
        return 1;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    rc = roost_agent_run(agent);
    struct roost_agent_status st;
    roost_agent_status(agent, &st);
    fprintf(stderr, "stopped: %lld handled, %lld acked\n", (long long)st.handled,
            (long long)st.acked);
    roost_agent_free(agent);
    return rc == ROOST_OK ? 0 : 1;
}
