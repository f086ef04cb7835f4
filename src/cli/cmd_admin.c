/* SPDX-License-Identifier: MIT */
/* `roost admin ...`: the operator API (token scope tenant:admin): quarantine list / inspect /
 * requeue / purge, the agent list, the tenant's stats and events by id or correlation id. */
#include <stdio.h>

#include "cli/cli.h"

#include "common/banned.h"

int cmd_admin_quarantine_list(struct cli_args *a)
{
    struct roost_client *c = NULL;
    int r;
    if ((r = cli_connect(a, &c)) != CLI_EXIT_OK) {
        return r;
    }
    struct roost_events *evs = NULL;
    int rc = roost_admin_quarantine_list(c, cli_str(a, "agent"), (int)cli_num(a, "limit", 0),
                                         cli_str(a, "next"), &evs);
    if (rc != ROOST_OK) {
        r = cli_fail(a, c, rc, "admin quarantine list");
    } else if (cli_flag(a, "ndjson")) {
        r = cli_print_ndjson(evs);
        if (evs->next_page != NULL) {
            fprintf(stderr, "next=%s\n", evs->next_page);
        }
    } else {
        static const char *const columns[] = {"agent_id:AGENT", "event_id", "attempts",
                                              "nacks",          "timeouts", "completed_at",
                                              "last_error",     NULL};
        r = cli_print_list(a, c, "events", columns);
    }
    roost_events_free(evs);
    roost_client_free(c);
    return r;
}

/* `requeue --all`: one bounded request after another until the server says none is left (or a
 * request finds nothing to requeue: events quarantined again meanwhile are not chased). */
static int requeue_all(struct cli_args *a, struct roost_client *c)
{
    int64_t total = 0, n = 0;
    bool more = true;
    int rc = ROOST_OK;
    while (more) {
        rc = roost_admin_quarantine_requeue_all(c, cli_str(a, "agent"), (int)cli_num(a, "limit", 0),
                                                &n, &more);
        if (rc != ROOST_OK) {
            break;
        }
        total += n;
        more = more && n > 0;
    }
    if (rc != ROOST_OK) {
        if (total > 0) {
            fprintf(stderr, "roost: admin quarantine requeue: %lld requeued before the error\n",
                    (long long)total);
        }
        return cli_fail(a, c, rc, "requeue --all");
    }
    char text[64];
    int len = snprintf(text, sizeof text, "{\"requeued\":%lld}", (long long)total);
    return cli_print_json(a, text, (size_t)len);
}

int cmd_admin_quarantine_requeue(struct cli_args *a)
{
    bool all = cli_flag(a, "all");
    if (all == (a->argc > 0)) {
        return cli_usage_error(a, "name one EVENT_ID, or --all (with --agent A for one agent)");
    }
    if (!all && (cli_given(a, "agent") || cli_given(a, "limit"))) {
        return cli_usage_error(a, "--agent and --limit go with --all");
    }
    struct roost_client *c = NULL;
    int r;
    if ((r = cli_connect(a, &c)) != CLI_EXIT_OK) {
        return r;
    }
    if (all) {
        r = requeue_all(a, c);
        roost_client_free(c);
        return r;
    }
    int rc = roost_admin_quarantine_requeue(c, a->argv[0]);
    char what[256];
    snprintf(what, sizeof what, "requeue %s", a->argv[0]);
    r = rc == ROOST_OK ? cli_print_last_body(a, c) : cli_fail(a, c, rc, what);
    roost_client_free(c);
    return r;
}

int cmd_admin_agents(struct cli_args *a)
{
    struct roost_client *c = NULL;
    int r;
    if ((r = cli_connect(a, &c)) != CLI_EXIT_OK) {
        return r;
    }
    struct roost_agents *agents = NULL;
    int rc = roost_admin_agents_list_sorted(c, cli_str(a, "sort"), (int)cli_num(a, "limit", 0),
                                            cli_str(a, "next"), &agents);
    static const char *const columns[] = {"agent_id:AGENT",
                                          "head",
                                          "pending",
                                          "scheduled",
                                          "claimed",
                                          "quarantined",
                                          "oldest_pending_age_s:OLDEST PENDING S",
                                          "subscribers",
                                          "last_seen_at",
                                          NULL};
    r = rc == ROOST_OK ? cli_print_list(a, c, "agents", columns)
                       : cli_fail(a, c, rc, "admin agents");
    roost_agents_free(agents);
    roost_client_free(c);
    return r;
}

int cmd_admin_quarantine_inspect(struct cli_args *a)
{
    struct roost_client *c = NULL;
    int r;
    if ((r = cli_connect(a, &c)) != CLI_EXIT_OK) {
        return r;
    }
    char *json = NULL;
    int rc = roost_admin_quarantine_inspect(c, a->argv[0], &json);
    char what[256];
    snprintf(what, sizeof what, "inspect %s", a->argv[0]);
    r = rc == ROOST_OK ? cli_print_last_body(a, c) : cli_fail(a, c, rc, what);
    roost_free(json);
    roost_client_free(c);
    return r;
}

int cmd_admin_quarantine_purge(struct cli_args *a)
{
    const char *event_id = a->argc > 0 ? a->argv[0] : NULL;
    const char *agent = cli_str(a, "agent");
    /* Exactly one target: deleting a whole tenant's quarantine must be asked for by name. */
    if ((event_id != NULL) + (agent != NULL) + cli_flag(a, "all") != 1) {
        return cli_usage_error(a, "name exactly one of EVENT_ID, --agent A or --all");
    }
    struct roost_client *c = NULL;
    int r;
    if ((r = cli_connect(a, &c)) != CLI_EXIT_OK) {
        return r;
    }
    int rc =
        roost_admin_quarantine_purge(c, agent, event_id, (int)cli_num(a, "limit", 0), NULL, NULL);
    r = rc == ROOST_OK ? cli_print_last_body(a, c) : cli_fail(a, c, rc, "purge");
    roost_client_free(c);
    return r;
}

int cmd_admin_stats(struct cli_args *a)
{
    struct roost_client *c = NULL;
    int r;
    if ((r = cli_connect(a, &c)) != CLI_EXIT_OK) {
        return r;
    }
    char *json = NULL;
    int rc = roost_admin_stats(c, &json);
    r = rc == ROOST_OK ? cli_print_last_body(a, c) : cli_fail(a, c, rc, "admin stats");
    roost_free(json);
    roost_client_free(c);
    return r;
}

int cmd_admin_events_show(struct cli_args *a)
{
    struct roost_client *c = NULL;
    int r;
    if ((r = cli_connect(a, &c)) != CLI_EXIT_OK) {
        return r;
    }
    char *json = NULL;
    int rc = roost_admin_event_get(c, a->argv[0], &json);
    char what[256];
    snprintf(what, sizeof what, "admin events show %s", a->argv[0]);
    r = rc == ROOST_OK ? cli_print_last_body(a, c) : cli_fail(a, c, rc, what);
    roost_free(json);
    roost_client_free(c);
    return r;
}

int cmd_admin_events_find(struct cli_args *a)
{
    struct roost_client *c = NULL;
    int r;
    if ((r = cli_connect(a, &c)) != CLI_EXIT_OK) {
        return r;
    }
    char *json = NULL;
    int rc = roost_admin_events_find(c, cli_str(a, "correlation-id"), (int)cli_num(a, "limit", 0),
                                     cli_str(a, "next"), &json);
    static const char *const columns[] = {"agent_id:AGENT", "event_id",   "status",     "attempts",
                                          "consumer",       "created_at", "last_error", NULL};
    r = rc == ROOST_OK ? cli_print_list(a, c, "events", columns)
                       : cli_fail(a, c, rc, "admin events find");
    roost_free(json);
    roost_client_free(c);
    return r;
}
