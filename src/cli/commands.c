/* SPDX-License-Identifier: MIT */
/* The one table of `roost` commands: their names, handlers, options (with value checks and
 * environment defaults), positional arguments and help text. The parser, --help, the listings
 * the man page test reads and the shell completion scripts are all generated from it. */
#include <stdint.h>

#include "cli/cli.h"
#include "common/limits.h"

#include "common/banned.h"

/* ---- the shared option groups --------------------------------------------------------------- */

const struct cli_option cli_connect_options[] = {
    {.name = "server",
     .kind = CLI_STRING,
     .arg = "URL",
     .env = "ROOST_SERVER",
     .help = "roostd address (default $ROOST_SERVER, else " CLI_DEFAULT_SERVER ")"},
    {.name = "token",
     .kind = CLI_STRING,
     .arg = "JWT",
     .env = "ROOST_TOKEN",
     .help = "bearer token (default $ROOST_TOKEN)"},
    {.name = "token-file",
     .kind = CLI_STRING,
     .arg = "F",
     .help = "read the token from file F (before $ROOST_TOKEN); agent run re-reads it\n"
             "when F changes and before the token expires"},
    {.name = "token-command",
     .kind = CLI_STRING,
     .arg = "CMD",
     .help = "run CMD (sh -c) and use its stdout as the token (before $ROOST_TOKEN);\n"
             "agent run runs it again before the token expires"},
    {.name = "cacert",
     .kind = CLI_STRING,
     .arg = "F",
     .help = "trust the CA certificates in PEM file F (https)"},
    {.name = "timeout",
     .kind = CLI_DURATION,
     .arg = "DUR",
     .min = 1,
     .max = 86400,
     .expect = "a duration of 1s..1d",
     .help = "per-request timeout (default 30s)"},
    {0},
};

const struct cli_option cli_output_options[] = {
    {.name = "pretty", .kind = CLI_FLAG, .help = "indented JSON (default: indented on a terminal)"},
    {.name = "compact", .kind = CLI_FLAG, .help = "one-line JSON"},
    {0},
};

#define KEY_ALGS "ed25519 ecdsa-p256-sha256 rsa-pss-sha512 rsa-v1_5-sha256 hmac-sha256"

const struct cli_option cli_sign_options[] = {
    {.name = "key-file",
     .kind = CLI_STRING,
     .arg = "F",
     .env = "ROOST_KEY_FILE",
     .help = "sign every request (RFC 9421) with the private key in PEM file F, or\n"
             "the base64 secret in F for hmac-sha256 (default $ROOST_KEY_FILE)"},
    {.name = "key-id",
     .kind = CLI_STRING,
     .arg = "ID",
     .env = "ROOST_KEY_ID",
     .help = "the signing key's registered key id (default $ROOST_KEY_ID)"},
    {.name = "key-alg",
     .kind = CLI_STRING,
     .arg = "ALG",
     .env = "ROOST_KEY_ALG",
     .choices = KEY_ALGS,
     .help = "ed25519, ecdsa-p256-sha256, rsa-pss-sha512, rsa-v1_5-sha256 or hmac-sha256\n"
             "(default $ROOST_KEY_ALG, else implied by the PEM key)"},
    {0},
};

/* ---- options several commands spell the same way ------------------------------------------ */

#define AGENT(req, text)                                                                           \
    {                                                                                              \
        .name = "agent", .short_name = 'a', .kind = CLI_STRING, .arg = "A", .flags = (req),        \
        .help = (text)                                                                             \
    }
#define LIMIT(text)                                                                                \
    {                                                                                              \
        .name = "limit", .kind = CLI_INT, .arg = "N", .min = 1, .max = 1000000,                    \
        .expect = "a count >= 1", .help = (text)                                                   \
    }
#define NEXT_PAGE                                                                                  \
    {                                                                                              \
        .name = "next", .kind = CLI_STRING, .arg = "TOKEN",                                        \
        .help = "page token from the previous answer"                                              \
    }
#define WAIT(text)                                                                                 \
    {                                                                                              \
        .name = "wait", .kind = CLI_DURATION, .arg = "DUR", .min = 0, .max = 3600,                 \
        .expect = "a duration up to 1h", .help = (text)                                            \
    }
#define AFTER(text)                                                                                \
    {                                                                                              \
        .name = "after", .kind = CLI_INT, .arg = "N", .min = 0, .max = INT64_MAX,                  \
        .expect = "a cursor >= 0", .help = (text)                                                  \
    }
#define LEASE(req, text)                                                                           \
    {                                                                                              \
        .name = "lease", .kind = CLI_DURATION, .arg = "DUR", .flags = (req), .min = 1,             \
        .max = INT32_MAX, .expect = "a duration >= 1s", .help = (text)                             \
    }
#define NDJSON(text)                                                                               \
    {                                                                                              \
        .name = "ndjson", .kind = CLI_FLAG, .help = (text)                                         \
    }
#define CONSUMER(text)                                                                             \
    {                                                                                              \
        .name = "consumer", .kind = CLI_STRING, .arg = "C", .help = (text)                         \
    }
#define OUTPUT                                                                                     \
    {                                                                                              \
        .name = "output", .short_name = 'o', .kind = CLI_CHOICE, .arg = "FORMAT",                  \
        .choices = "table json",                                                                   \
        .help = "table (one row per item, the default on a terminal) or json (the\n"               \
                "server's answer, the default otherwise)"                                          \
    }
#define END                                                                                        \
    {                                                                                              \
        0                                                                                          \
    }

/* ---- token mint ------------------------------------------------------------------------------ */

static const struct cli_option token_mint_opts[] = {
    {.name = "tenant",
     .kind = CLI_STRING,
     .arg = "T",
     .flags = CLI_REQUIRED,
     .help = "tenant the token is bound to ([A-Za-z0-9._-]{1,128})"},
    {.name = "scope",
     .kind = CLI_STRING,
     .arg = "SCOPES",
     .flags = CLI_REQUIRED,
     .help = "space-separated scopes, e.g. \"agent:a1:consume agent:proj.*:publish\";\n"
             "agent:<sel>:read | agent:<sel>:consume | agent:<sel>:publish |\n"
             "tenant:admin  (<sel> is an agent id or a prefix ending in '*')"},
    {.name = "sub",
     .kind = CLI_STRING,
     .arg = "S",
     .help = "who the token is for, logged by the server (default roost-cli)"},
    {.name = "ttl",
     .kind = CLI_DURATION,
     .arg = "DUR",
     .min = 1,
     .max = ROOST_TOKEN_MAX_TTL_S,
     .expect = "a duration of 1s..10 years (3600, 30m, 1h, 7d)",
     .help = "lifetime: 3600, 90s, 30m, 1h, 7d, 1h30m (default 1h, at most 10 years)"},
    {.name = "data-dir",
     .kind = CLI_STRING,
     .arg = "DIR",
     .env = "ROOST_DATA_DIR",
     .help = "roostd's data directory: the key is DIR/" ROOST_TOKEN_KEY_FILE "\n"
             "(default $ROOST_DATA_DIR, else ./var)"},
    {.name = "key",
     .kind = CLI_STRING,
     .arg = "FILE",
     .help = "the key file itself (roostd's auth.key_file)"},
    END,
};

/* ---- publish --------------------------------------------------------------------------------- */

static const struct cli_option publish_opts[] = {
    {.name = "agent",
     .short_name = 'a',
     .kind = CLI_STRING,
     .arg = "A",
     .flags = CLI_MULTI,
     .help = "recipient agent id; repeat for fan-out"},
    {.name = "payload",
     .short_name = 'p',
     .kind = CLI_STRING,
     .arg = "JSON",
     .help = "the payload, a JSON object; '-' reads it from standard input, '@F' from\n"
             "file F (default {}: standard input is never read unless asked)"},
    {.name = "payload-file",
     .kind = CLI_STRING,
     .arg = "F",
     .help = "read the payload from F ('-' = standard input)"},
    {.name = "priority",
     .kind = CLI_INT,
     .arg = "N",
     .min = -100,
     .max = 100,
     .expect = "-100..100",
     .help = "-100..100, higher is claimed first (default 0)"},
    {.name = "delay",
     .kind = CLI_DURATION,
     .arg = "DUR",
     .min = 0,
     .max = INT64_MAX,
     .expect = "a duration",
     .help = "claimable only after DUR (30, 90s, 5m, 1h)"},
    {.name = "available-at",
     .kind = CLI_STRING,
     .arg = "T",
     .help = "claimable only after RFC 3339 time T"},
    {.name = "ttl",
     .kind = CLI_DURATION,
     .arg = "DUR",
     .min = 1,
     .max = INT64_MAX,
     .expect = "a duration > 0",
     .help = "expires DUR after publishing"},
    {.name = "expires-at", .kind = CLI_STRING, .arg = "T", .help = "expires at RFC 3339 time T"},
    {.name = "idempotency-key",
     .kind = CLI_STRING,
     .arg = "K",
     .help = "a repeat with the same key returns the original event (exit 0)"},
    {.name = "correlation-id",
     .kind = CLI_STRING,
     .arg = "C",
     .help = "free-form id carried with the event"},
    {.name = "state-patch",
     .kind = CLI_STRING,
     .arg = "JSON",
     .help = "JSON Merge Patch applied to each recipient's state atomically"},
    {.name = "body-file",
     .kind = CLI_STRING,
     .arg = "F",
     .help = "send F ('-' = stdin) as the whole request body: one event object\n"
             "or {\"events\":[...]} (a batch, all or nothing)"},
    END,
};

/* ---- inbox read / inbox tail ----------------------------------------------------------------- */

static const struct cli_option inbox_read_opts[] = {
    AGENT(CLI_REQUIRED, "the agent"),
    AFTER("cursor: the last sequence number already seen (default 0)"),
    LIMIT("1..1000 events (default: the server's, 10)"),
    WAIT("long-poll up to DUR (server maximum 30s) when nothing is there yet"),
    NDJSON("print one event per line instead, and 'next_cursor=N has_more=B' on\nstderr"),
    OUTPUT,
    END,
};

static const struct cli_option inbox_peek_opts[] = {
    AGENT(CLI_REQUIRED, "the agent"),
    END,
};

static const struct cli_option inbox_tail_opts[] = {
    AGENT(CLI_REQUIRED, "the agent"),
    {.name = "from",
     .kind = CLI_INT,
     .arg = "N",
     .min = 0,
     .max = INT64_MAX,
     .expect = "a cursor >= 0",
     .help = "start after cursor N; 0 replays everything still kept (default: the\n"
             "current head, only new events)"},
    END,
};

/* ---- claim, ack, release, extend, release-all, state ----------------------------------------- */

static const struct cli_option claim_opts[] = {
    AGENT(CLI_REQUIRED, "the agent"),
    LIMIT("1..1000 events (default: the server's, 10)"),
    LEASE(0, "lease length (default: the server's lease.default_s, 60s)"),
    CONSUMER("names this process ([A-Za-z0-9._:-]{1,128}) for 'roost release-all'"),
    WAIT("wait up to DUR for an event when none is available"),
    NDJSON("print one event per line instead"),
    END,
};

static const struct cli_option agent_only_opts[] = {
    AGENT(CLI_REQUIRED, "the agent"),
    END,
};

static const struct cli_option release_opts[] = {
    AGENT(CLI_REQUIRED, "the agent"),
    {.name = "delay",
     .kind = CLI_DURATION,
     .arg = "DUR",
     .min = 0,
     .max = INT64_MAX,
     .expect = "a duration",
     .help = "claimable again after DUR (default at once)"},
    {.name = "reason",
     .kind = CLI_CHOICE,
     .arg = "R",
     .choices = "transient shutdown poison",
     .help = "transient (default; counts a failed attempt), shutdown (counts\n"
             "nothing) or poison (quarantine now)"},
    {.name = "error",
     .kind = CLI_STRING,
     .arg = "TEXT",
     .help = "recorded as the event's last_error (at most 4096 bytes)"},
    END,
};

static const struct cli_option extend_opts[] = {
    AGENT(CLI_REQUIRED, "the agent"),
    LEASE(CLI_REQUIRED, "new lease length from now (30, 90s, 5m, 1h)"),
    END,
};

static const struct cli_option release_all_opts[] = {
    AGENT(CLI_REQUIRED, "the agent"),
    CONSUMER("the consumer id given to 'roost claim --consumer'"),
    END,
};

/* ---- admin ----------------------------------------------------------------------------------- */

static const struct cli_option admin_quarantine_list_opts[] = {
    AGENT(0, "only this agent's events"),
    LIMIT("page size (default: the server's)"),
    NEXT_PAGE,
    NDJSON("print one event per line instead, and 'next=TOKEN' on stderr when\n"
           "there is a next page"),
    OUTPUT,
    END,
};

static const struct cli_option admin_events_find_opts[] = {
    {.name = "correlation-id",
     .kind = CLI_STRING,
     .arg = "C",
     .flags = CLI_REQUIRED,
     .help = "the correlation id the events were published with (exact match)"},
    LIMIT("page size (default 20, at most 100)"),
    NEXT_PAGE,
    OUTPUT,
    END,
};

static const struct cli_option admin_events_show_opts[] = {
    OUTPUT,
    END,
};

static const struct cli_option admin_agents_opts[] = {
    {.name = "sort",
     .kind = CLI_CHOICE,
     .arg = "ORDER",
     .choices = "agent depth age",
     .help = "agent (by id, the default), depth (most pending first) or age (oldest\n"
             "pending first)"},
    LIMIT("page size (default: the server's)"),
    {.name = "next",
     .kind = CLI_STRING,
     .arg = "TOKEN",
     .help = "page token from the previous answer (same --sort)"},
    OUTPUT,
    END,
};

static const struct cli_option admin_quarantine_purge_opts[] = {
    AGENT(0, "only this agent's quarantined events"),
    {.name = "all", .kind = CLI_FLAG, .help = "every quarantined event of the tenant"},
    {.name = "limit",
     .kind = CLI_INT,
     .arg = "N",
     .min = 1,
     .max = 10000,
     .expect = "1..10000",
     .help = "most events deleted by this call"},
    END,
};

static const struct cli_option admin_quarantine_requeue_opts[] = {
    {.name = "all",
     .kind = CLI_FLAG,
     .help = "every quarantined event of the tenant (or of --agent A)"},
    AGENT(0, "with --all: only this agent's quarantined events"),
    {.name = "limit",
     .kind = CLI_INT,
     .arg = "N",
     .min = 1,
     .max = 1000,
     .expect = "1..1000",
     .help = "with --all: events per request, 1..1000 (default: the server's, 100)"},
    END,
};

static const struct cli_option no_opts[] = {END};

/* ---- agent run / status ---------------------------------------------------------------------- */

static const struct cli_option agent_run_opts[] = {
    AGENT(CLI_REQUIRED, "the agent"),
    {.name = "state-dir",
     .kind = CLI_STRING,
     .arg = "DIR",
     .flags = CLI_REQUIRED,
     .help = "state directory (created when missing; one per agent)"},
    {.name = "exec",
     .kind = CLI_STRING,
     .arg = "CMD",
     .flags = CLI_REQUIRED,
     .help = "the command to run per event"},
    {.name = "concurrency",
     .kind = CLI_INT,
     .arg = "N",
     .min = 1,
     .max = 256,
     .expect = "1..256",
     .help = "commands running at once, 1..256 (default 1)"},
    {.name = "lease",
     .kind = CLI_DURATION,
     .arg = "DUR",
     .min = 1,
     .max = 43200,
     .expect = "a duration of 1s..12h",
     .help = "lease per claim (default 60s)"},
    CONSUMER("consumer id for the leases (default <hostname>-<pid>)"),
    {.name = "poll-ceiling",
     .kind = CLI_DURATION,
     .arg = "DUR",
     .min = 1,
     .max = 86400,
     .expect = "1s..1d",
     .help = "longest wait between polls while offline (default 5m)"},
    {.name = "resync",
     .kind = CLI_DURATION,
     .arg = "DUR",
     .min = 1,
     .max = 86400,
     .expect = "1s..1d",
     .help = "while streaming, pull anyway every DUR in case a ping was lost\n"
             "(default 60s)"},
    {.name = "tempfail-max",
     .kind = CLI_INT,
     .arg = "N",
     .min = 1,
     .max = 1000,
     .expect = "1..1000",
     .help = "from the Nth attempt of an event on, exit 75 counts as a failure toward\n"
             "the server's claim.max_attempts (default 10)"},
    {.name = "quiet", .kind = CLI_FLAG, .help = "log only problems"},
    END,
};

static const struct cli_option mcp_opts[] = {
    AGENT(CLI_REQUIRED, "the agent whose inbox the MCP client works"),
    {.name = "state-dir",
     .kind = CLI_STRING,
     .arg = "DIR",
     .help = "record acked event ids and a stable consumer id in DIR (one per session):\n"
             "a restart releases what a crashed session held, and an event acked\n"
             "before is acked again, never handed out"},
    {.name = "channel",
     .kind = CLI_FLAG,
     .help = "also send the experimental notifications/claude/channel on every wake-up"},
    END,
};

static const struct cli_option agent_status_opts[] = {
    {.name = "state-dir",
     .kind = CLI_STRING,
     .arg = "DIR",
     .flags = CLI_REQUIRED,
     .help = "the agent's state directory"},
    END,
};

/* ---- keys ------------------------------------------------------------------------------------ */

/* --key-id names the key registered here, so keys add takes no shared signing options: its
 * request is signed from ROOST_KEY_FILE / ROOST_KEY_ID / ROOST_KEY_ALG alone. */
static const struct cli_option keys_add_opts[] = {
    {.name = "key-id",
     .kind = CLI_STRING,
     .arg = "ID",
     .flags = CLI_REQUIRED,
     .help = "the key's id, [A-Za-z0-9._-]{1,128}, unique in the tenant"},
    {.name = "agent",
     .short_name = 'a',
     .kind = CLI_STRING,
     .arg = "AGENT",
     .flags = CLI_REQUIRED,
     .help = "the agent whose routes it signs, or '*' for publish"},
    {.name = "alg",
     .kind = CLI_STRING,
     .arg = "ALG",
     .flags = CLI_REQUIRED,
     .choices = KEY_ALGS,
     .help = "ed25519, ecdsa-p256-sha256, rsa-pss-sha512, rsa-v1_5-sha256 or\nhmac-sha256"},
    {.name = "public-key-file",
     .kind = CLI_STRING,
     .arg = "PEM",
     .help = "the public key (PEM; never the private half)"},
    {.name = "secret-file",
     .kind = CLI_STRING,
     .arg = "FILE",
     .help = "hmac-sha256: the secret, base64 of 32..1024 bytes"},
    END,
};

static const struct cli_option keys_generate_opts[] = {
    {.name = "out",
     .short_name = 'o',
     .kind = CLI_STRING,
     .arg = "F",
     .flags = CLI_REQUIRED,
     .help = "the private key file to create (mode 0600); the public half goes to F.pub"},
    {.name = "alg",
     .kind = CLI_STRING,
     .arg = "ALG",
     .choices = KEY_ALGS,
     .help = "ed25519 (default), ecdsa-p256-sha256, rsa-pss-sha512, rsa-v1_5-sha256\n"
             "or hmac-sha256 (F then holds the base64 secret, and no F.pub)"},
    END,
};

static const struct cli_option keys_list_opts[] = {
    LIMIT("page size (default: the server's)"),
    NEXT_PAGE,
    OUTPUT,
    END,
};

/* ---- device login (doc/CREDENTIALS.md) ----------------------------------------------------- */

static const struct cli_option devices_list_opts[] = {
    AGENT(0, "only this agent's devices"),
    {.name = "user-code",
     .kind = CLI_STRING,
     .arg = "CODE",
     .help = "only the device waiting with this user code"},
    LIMIT("page size (default 100, at most 100)"),
    NEXT_PAGE,
    OUTPUT,
    END,
};

static const struct cli_option login_opts[] = {
    AGENT(CLI_REQUIRED, "the agent this device acts as"),
    {.name = "tenant",
     .kind = CLI_STRING,
     .arg = "T",
     .help = "the tenant (default: the server's)"},
    {.name = "scope",
     .kind = CLI_STRING,
     .arg = "SCOPES",
     .help = "scopes to ask for (default agent:A:consume)"},
    {.name = "credentials-dir",
     .kind = CLI_STRING,
     .arg = "DIR",
     .env = "ROOST_CREDENTIALS_DIR",
     .help = "the credential store (default $XDG_STATE_HOME/roost or ~/.local/state/roost)"},
    {.name = "signing-key",
     .kind = CLI_STRING,
     .arg = "ALG",
     .env = "ROOST_LOGIN_SIGNING_KEY",
     .choices = "hmac-sha256 ed25519",
     .help = "the device's request-signing keys: hmac-sha256, issued by roostd at every\n"
             "refresh (the default), or ed25519, a new key pair made here at login and at\n"
             "every refresh, its public key registered in the same call (default\n"
             "$ROOST_LOGIN_SIGNING_KEY)"},
    END,
};

static const struct cli_option devices_approve_opts[] = {
    {.name = "scope",
     .kind = CLI_STRING,
     .arg = "SCOPES",
     .help = "grant these scopes (space-separated) instead of those the device asked for"},
    END,
};

/* ---- webhooks ------------------------------------------------------------------------------ */

static const struct cli_option callbacks_add_opts[] = {
    AGENT(CLI_REQUIRED, "the agent whose events the endpoint receives"),
    {.name = "url",
     .kind = CLI_STRING,
     .arg = "URL",
     .flags = CLI_REQUIRED,
     .help = "the endpoint: an https:// URL"},
    {.name = "secret",
     .kind = CLI_STRING,
     .arg = "S",
     .help = "the signing secret, whsec_ + base64 of 24..64 bytes (default: a new one,\n"
             "shown on stderr before the registration and with the answer)"},
    {.name = "secret-file", .kind = CLI_STRING, .arg = "F", .help = "read the secret from file F"},
    {0},
};

static const struct cli_option callbacks_agent_opts[] = {
    AGENT(CLI_REQUIRED, "the agent"),
    {0},
};

static const struct cli_option endpoints_list_opts[] = {
    AGENT(0, "only this agent's endpoint"),
    LIMIT("endpoints per page (default 100)"),
    NEXT_PAGE,
    OUTPUT,
    {0},
};

static const struct cli_option endpoints_attempts_opts[] = {
    {.name = "event-id", .kind = CLI_STRING, .arg = "E", .help = "only the attempts of event E"},
    LIMIT("attempts per page (default 100)"),
    NEXT_PAGE,
    OUTPUT,
    {0},
};

static const struct cli_option endpoints_replay_opts[] = {
    {.name = "event-id", .kind = CLI_STRING, .arg = "E", .help = "redeliver event E"},
    {.name = "since",
     .kind = CLI_STRING,
     .arg = "TIME",
     .help = "redeliver every quarantined event created since TIME (RFC 3339)"},
    {0},
};

/* ---- inbound webhook sources ----------------------------------------------------------------- */

#define SOURCE_SECRET_OPTS                                                                         \
    {.name = "secret",                                                                             \
     .kind = CLI_STRING,                                                                           \
     .arg = "S",                                                                                   \
     .help = "the sender's secret or token (stripe: required, as its dashboard shows it;\n"        \
             "default: roostd makes one and prints it once)"},                                     \
    {                                                                                              \
        .name = "secret-file", .kind = CLI_STRING, .arg = "F",                                     \
        .help = "read the secret from file F"                                                      \
    }

static const struct cli_option sources_add_opts[] = {
    {.name = "name", .kind = CLI_STRING, .arg = "N", .flags = CLI_REQUIRED, .help = "a name"},
    {.name = "scheme",
     .kind = CLI_CHOICE,
     .arg = "SCHEME",
     .flags = CLI_REQUIRED,
     .choices = "standard-webhooks github stripe token hmac jwt",
     .help = "how deliveries are verified (doc/INGEST.md)"},
    {.name = "agents",
     .kind = CLI_STRING,
     .arg = "A,B",
     .help = "every delivery goes to these agents (one event each)"},
    {.name = "agent-pointer",
     .kind = CLI_STRING,
     .arg = "P",
     .help = "or: the agent named at JSON pointer P in the body (e.g. /metadata/agent)"},
    {.name = "agent-selector",
     .kind = CLI_STRING,
     .arg = "SEL",
     .help = "the agents --agent-pointer may name: an id or a prefix ending in *"},
    {.name = "options",
     .kind = CLI_STRING,
     .arg = "JSON",
     .help = "the scheme's options, e.g. '{\"header\":\"X-Token\"}' (token, hmac, jwt)"},
    SOURCE_SECRET_OPTS,
    {0},
};

static const struct cli_option sources_rotate_opts[] = {
    SOURCE_SECRET_OPTS,
    {.name = "overlap",
     .kind = CLI_DURATION,
     .arg = "DUR",
     .min = 0,
     .max = 30 * 86400,
     .expect = "a duration up to 30 days",
     .help = "how long the replaced secret still verifies (default 24h)"},
    {0},
};

static const struct cli_option sources_list_opts[] = {
    LIMIT("items per page (default 100)"),
    NEXT_PAGE,
    OUTPUT,
    {0},
};

/* ---- the table ------------------------------------------------------------------------------- */

const struct cli_command cli_commands[] = {
    {.name = "token mint",
     .run = cmd_token_mint,
     .summary = "mint a bearer token with roostd's key",
     .synopsis = "roost token mint --tenant T --scope SCOPES [--sub S] [--ttl DUR]\n"
                 "                        [--data-dir DIR | --key FILE]",
     .description =
         "Mints a bearer token (EdDSA JWT) signed with roostd's Ed25519 key and prints it "
         "followed by a newline. Needs read access to the key, nothing else (no server is "
         "contacted).",
     .options = token_mint_opts,
     .notes = "Example:\n"
              "  export ROOST_TOKEN=$(roost token mint --data-dir ./var --tenant t1 \\\n"
              "        --scope 'agent:*:consume agent:*:publish tenant:admin' --ttl 12h)\n"},
    {.name = "publish",
     .run = cmd_publish,
     .summary = "publish an event to one or more agents",
     .synopsis =
         "roost publish --agent A [--agent B ...] [--payload JSON | --payload-file F]\n"
         "                     [--priority N] [--delay DUR | --available-at T] [--ttl DUR |\n"
         "                     --expires-at T] [--idempotency-key K] [--correlation-id C]\n"
         "                     [--state-patch JSON]\n"
         "       roost publish --body-file F",
     .description =
         "Publishes one event to every agent named (one inbox row each, in one "
         "transaction) and prints the server's answer: "
         "{\"events\":[{\"event_id\",\"agent_id\",\"sequence_number\"}]}. Without --payload or "
         "--payload-file the payload is read from standard input (when it is not a "
         "terminal).",
     .notes = "A publish that fails on the connection, or with 503 or 429, is tried again (3\n"
              "times at most) under the same idempotency key, generated when --idempotency-key\n"
              "is not given, so it never makes the event twice; a --body-file body is tried\n"
              "again only when every event in it has an idempotency_key.\n",
     .options = publish_opts,
     .common = CLI_COMMON_ALL},
    {.name = "inbox read",
     .run = cmd_inbox_read,
     .summary = "read an agent's inbox from a cursor (read-only)",
     .description =
         "Reads the agent's events with sequence_number > N in order, changing nothing, "
         "and prints the server's answer: "
         "{\"events\":[...],\"next_cursor\":N,\"has_more\":bool}. Pass next_cursor as --after "
         "next time. A cursor older than retention fails with cursor_expired (exit 3): "
         "resync with 'roost state'.",
     .options = inbox_read_opts,
     .common = CLI_COMMON_ALL},
    {.name = "inbox peek",
     .run = cmd_inbox_peek,
     .summary = "show the event the next claim would take, without claiming it",
     .description =
         "Prints the event a claim would take now (highest priority first, then oldest; "
         "pending, not scheduled, not expired), payload included, as the server answers: "
         "{\"event\":{...}}, or {\"event\":null} when nothing is claimable. Claims nothing: "
         "no lease, no attempt counted, so another consumer may claim it first. Needs the "
         "agent's read scope.",
     .options = inbox_peek_opts,
     .common = CLI_COMMON_ALL},
    {.name = "inbox tail",
     .run = cmd_inbox_tail,
     .summary = "follow an agent's inbox: print every new event (NDJSON)",
     .description =
         "Prints the agent's new events, one JSON object per line (with --from N: every "
         "event with sequence_number > N first), then keeps following: an SSE wake-up ping "
         "triggers the next read; while the "
         "stream cannot be opened it long-polls instead. Changes nothing (a cursor "
         "reader, not a consumer). Runs until interrupted. When the cursor is older than "
         "retention (410) it says so on stderr and continues from the state's cursor.",
     .options = inbox_tail_opts,
     .common = CLI_COMMON_ALL},
    {.name = "claim",
     .run = cmd_claim,
     .summary = "claim events under a lease",
     .description =
         "Claims up to N pending events (highest priority first, then oldest) and prints "
         "the server's answer: "
         "{\"events\":[{...,\"lease_token\",\"claim_expires_at\",\"attempts\"}]}. Finish each "
         "with 'roost ack', give it back with 'roost release', or keep it longer with "
         "'roost extend' -- presenting its lease_token. An empty list is a success.",
     .options = claim_opts,
     .common = CLI_COMMON_ALL},
    {.name = "ack",
     .run = cmd_ack,
     .summary = "complete claimed events",
     .args = "EVENT_ID LEASE_TOKEN [EVENT_ID LEASE_TOKEN ...]",
     .max_args = CLI_ARGS_ANY,
     .description =
         "Completes claimed events and prints the server's answer. One pair uses POST "
         ".../inbox/{event_id}/ack; several pairs are sent as one batch ack, whose "
         "per-event results are printed ({\"results\":[...]}); any failed item is also "
         "reported on stderr and sets the exit code. A lease that expired and was claimed "
         "again fails with lease_mismatch (exit 3). Repeating a successful ack succeeds.",
     .options = agent_only_opts,
     .common = CLI_COMMON_ALL},
    {.name = "release",
     .run = cmd_release,
     .summary = "give a claimed event back (NACK)",
     .args = "EVENT_ID LEASE_TOKEN",
     .min_args = 2,
     .max_args = 2,
     .description = "Gives a claimed event back: it becomes claimable again after DUR. Prints the "
                    "server's answer. A lost lease fails with lease_mismatch (exit 3).",
     .options = release_opts,
     .common = CLI_COMMON_ALL},
    {.name = "extend",
     .run = cmd_extend,
     .summary = "extend a lease",
     .args = "EVENT_ID LEASE_TOKEN",
     .min_args = 2,
     .max_args = 2,
     .description =
         "Moves the lease's end to now + DUR and prints {\"event_id\",\"claim_expires_at\"}. "
         "A lost lease fails with lease_mismatch, a lease past lease.max_total_s with "
         "lease_cap_reached (exit 3).",
     .options = extend_opts,
     .common = CLI_COMMON_ALL},
    {.name = "release-all",
     .run = cmd_release_all,
     .summary = "release every lease a consumer holds",
     .description = "Releases (reason shutdown) every lease consumer C holds on the agent's inbox; "
                    "other processes sharing the agent keep theirs. Without --consumer, the leases "
                    "claimed without a consumer id. Prints {\"released\":N}.",
     .options = release_all_opts,
     .common = CLI_COMMON_ALL},
    {.name = "state",
     .run = cmd_state,
     .summary = "full state sync: the agent's state and its cursor",
     .description =
         "Prints the agent's state document and the cursor it is consistent with: "
         "{\"state\":{...},\"cursor\":N}. After cursor_expired, continue 'roost inbox read' "
         "from --after N.",
     .options = agent_only_opts,
     .common = CLI_COMMON_ALL},
    {.name = "admin quarantine list",
     .run = cmd_admin_quarantine_list,
     .summary = "list quarantined events",
     .description =
         "Lists the tenant's quarantined events (with attempts, timeouts, nacks, "
         "last_error) and prints {\"events\":[...],\"next\":TOKEN|null}; pass TOKEN as --next "
         "for the next page.",
     .options = admin_quarantine_list_opts,
     .common = CLI_COMMON_ALL},
    {.name = "admin quarantine requeue",
     .run = cmd_admin_quarantine_requeue,
     .summary = "put quarantined events back to pending (one, or all: a redrive)",
     .synopsis = "roost admin quarantine requeue (EVENT_ID | --all [--agent A] [--limit N])",
     .args = "EVENT_ID",
     .max_args = 1,
     .description =
         "Puts a quarantined event back to pending (same event id, attempts reset) and prints "
         "the server's answer; an unknown or not-quarantined event fails with exit 3. With "
         "--all, a dead-letter redrive: every quarantined event of the tenant, or of agent A, "
         "oldest first, in requests of at most N events each until none is left; prints "
         "{\"requeued\":TOTAL}.",
     .options = admin_quarantine_requeue_opts,
     .common = CLI_COMMON_ALL},
    {.name = "admin quarantine inspect",
     .run = cmd_admin_quarantine_inspect,
     .summary = "show one quarantined event (payload, attempts, last error)",
     .args = "EVENT_ID",
     .min_args = 1,
     .max_args = 1,
     .description = "Prints one quarantined event: payload, attempts, timeouts, nacks, last_error, "
                    "consumer. An unknown or not-quarantined event fails with exit 3.",
     .options = no_opts,
     .common = CLI_COMMON_ALL},
    {.name = "admin quarantine purge",
     .run = cmd_admin_quarantine_purge,
     .summary = "delete quarantined events for good",
     .synopsis = "roost admin quarantine purge (EVENT_ID | --agent A | --all) [--limit N]",
     .args = "EVENT_ID",
     .max_args = 1,
     .description =
         "Deletes quarantined events for good: one event, one agent's, or all of the "
         "tenant's (at most N per call, default 1000; the answer's \"more\" says whether to "
         "run it again). Prints {\"purged\":N,\"more\":BOOL}. Events in any other status are "
         "never touched.",
     .options = admin_quarantine_purge_opts,
     .common = CLI_COMMON_ALL},
    {.name = "admin agents",
     .run = cmd_admin_agents,
     .summary = "list agents with their counters",
     .description = "Lists the tenant's agents with head, pending, scheduled, claimed and "
                    "quarantined counts, oldest pending age, open SSE subscribers and last seen "
                    "(claims): {\"agents\":[...],\"next\":TOKEN|null}.",
     .options = admin_agents_opts,
     .common = CLI_COMMON_ALL},
    {.name = "admin stats",
     .run = cmd_admin_stats,
     .summary = "the tenant's totals (pending, claimed, quarantined, ...)",
     .description = "Prints the tenant's totals: pending, scheduled, claimed, quarantined, oldest "
                    "pending and claim ages, open SSE subscribers, as of the server's last metrics "
                    "snapshot (as_of).",
     .options = no_opts,
     .common = CLI_COMMON_ALL},
    {.name = "admin events show",
     .run = cmd_admin_events_show,
     .summary = "what happened to an event: status, attempts, last error, lease",
     .args = "EVENT_ID",
     .min_args = 1,
     .max_args = 1,
     .description =
         "Prints one event of the tenant in any status: payload, status, attempts, timeouts, "
         "nacks, last_error, consumer, claimed_at, completed_at and, while it is claimed, its "
         "lease (the token shortened, the consumer, the expiry). An unknown event (or one "
         "retention removed) fails with exit 3.",
     .options = admin_events_show_opts,
     .common = CLI_COMMON_ALL},
    {.name = "admin events find",
     .run = cmd_admin_events_find,
     .summary = "find the events published with a correlation id",
     .synopsis = "roost admin events find --correlation-id C [--limit N] [--next TOKEN]",
     .description =
         "Lists the tenant's events published with correlation id C, every agent and status, "
         "by agent then sequence number, without payloads (roost admin events show ID has "
         "it): {\"events\":[...],\"next\":TOKEN|null}; pass TOKEN as --next for the next page.",
     .options = admin_events_find_opts,
     .common = CLI_COMMON_ALL},
    {.name = "keys add",
     .run = cmd_keys_add,
     .summary = "register a request-signing key (RFC 9421)",
     .synopsis = "roost keys add --key-id ID --agent AGENT|'*' --alg ALG\n"
                 "                      (--public-key-file PEM | --secret-file FILE)",
     .description = "Registers a request-signing key (RFC 9421) for one agent, or for publishing "
                    "('*': a producer key), and prints its metadata. Requests signed with it "
                    "(--key-file/--key-id on any command) are then accepted where roostd requires "
                    "signatures. A key id that exists already fails with key_exists (exit 3). The "
                    "token needs scope tenant:admin.",
     .options = keys_add_opts,
     .common = CLI_COMMON_CONNECT | CLI_COMMON_OUTPUT,
     .notes = "Here --key-id names the key to register: to sign this request itself, set\n"
              "ROOST_KEY_FILE / ROOST_KEY_ID / ROOST_KEY_ALG.\n"},
    {.name = "whoami",
     .run = cmd_whoami,
     .summary = "show the tenant, subject, scopes and expiry of the token in use",
     .description = "Prints {\"tenant\",\"sub\",\"scopes\":[...],\"exp\",\"expires_at\","
                    "\"expires_in_s\",\"expired\"} of the token the other commands would send "
                    "(--token, --token-command, --token-file or $ROOST_TOKEN). The claims are read "
                    "from the token itself, NOT verified, and nothing is sent to roostd: whether "
                    "roostd accepts the token is another matter.",
     .options = no_opts,
     .common = CLI_COMMON_CONNECT | CLI_COMMON_OUTPUT},
    {.name = "keys generate",
     .run = cmd_keys_generate,
     .summary = "create a request-signing key pair in local files",
     .description = "Creates a new private key (PEM, mode 0600, never over an existing file) and "
                    "its public half in F.pub, and prints the 'roost keys add' command that "
                    "registers it. Nothing is sent to roostd.",
     .options = keys_generate_opts,
     .common = 0},
    {.name = "keys list",
     .run = cmd_keys_list,
     .summary = "list the tenant's request-signing keys",
     .description =
         "Lists the tenant's request-signing keys (metadata only: key_id, agent_id, alg, "
         "created_at, revoked_at) and prints {\"keys\":[...],\"next\":TOKEN|null}.",
     .options = keys_list_opts,
     .common = CLI_COMMON_ALL},
    {.name = "keys revoke",
     .run = cmd_keys_revoke,
     .summary = "revoke a request-signing key",
     .args = "KEY_ID",
     .min_args = 1,
     .max_args = 1,
     .description =
         "Revokes a request-signing key: requests signed with it are refused from now on "
         "(401 key_revoked). Prints the key with revoked_at; revoking again keeps the "
         "first time. An unknown key fails with key_not_found (exit 3).",
     .options = no_opts,
     .common = CLI_COMMON_ALL},
    {.name = "agent run",
     .run = cmd_agent_run,
     .summary = "work an agent's inbox: run a command per event",
     .description =
         "Works the agent's inbox until SIGINT or SIGTERM: claims events under leases and "
         "runs CMD (through /bin/sh -c) once per event, with the payload JSON on stdin "
         "and in the environment ROOST_EVENT_ID, ROOST_AGENT_ID, ROOST_SEQUENCE, "
         "ROOST_ATTEMPT, ROOST_CORRELATION_ID (empty when none). CMD's exit status "
         "decides:\n"
         "  0        done: ack\n"
         "  75       EX_TEMPFAIL: try again later, no penalty: attempt n waits 2^(n-1) s\n"
         "           (<= 300 s); from attempt --tempfail-max on it counts as a failure\n"
         "  65       EX_DATAERR: quarantine (never retried)\n"
         "  other    failed: release with exponential backoff (attempt n waits 2^(n-1) s,\n"
         "           <= 300 s)\n"
         "A command that writes retry_after=SECONDS to the file $ROOST_RESULT_FILE names its "
         "own delay for 75 and failures. The exit status and the last 1 KiB of its stderr "
         "become the event's last_error (shown by roost admin quarantine). Each command runs "
         "in a process group of its own and dies with the agent: a SIGKILLed agent's "
         "commands end with it, and a restart ends any the state dir still names. One log "
         "line per event tells its attempt, outcome, duration and error.\n"
         "The agent pulls, then listens to the SSE wake-ups; while the stream is down it "
         "long-polls. Leases are extended while CMD runs. Delivery is at least once: its "
         "state file (DIR/agent.db: cursor, ids of the events done, outstanding leases) makes "
         "a restart after a crash release what the dead run held and ack, without running "
         "CMD again, the events recorded as done; the events whose CMD was running, or had "
         "exited 0 but was not yet recorded (at most --concurrency), run again. On "
         "SIGINT/SIGTERM it stops claiming, waits for running commands, "
         "acks, releases everything it still holds and exits 0. Progress and problems are "
         "logged on stderr.",
     .options = agent_run_opts,
     .common = CLI_COMMON_ALL},
    {.name = "mcp",
     .run = cmd_mcp,
     .summary = "serve the agent's inbox to an MCP client over stdio",
     .description =
         "A Model Context Protocol server on stdin/stdout (newline-delimited JSON-RPC 2.0; "
         "logs on stderr) for an MCP client such as a coding agent: the tools claim, ack, "
         "release, extend, read_inbox, publish and get_state act on agent A's inbox, and the "
         "resource roost://agents/A/inbox (subscribable) says when work arrives, from "
         "roostd's SSE wake-ups. Every lease handed out is extended at half-life until the "
         "client acks or releases it; at end of input or on SIGTERM the session releases what "
         "it holds and exits 0. doc/MCP.md has the client configuration.",
     .options = mcp_opts,
     .common = CLI_COMMON_CONNECT | CLI_COMMON_SIGN},
    {.name = "agent status",
     .run = cmd_agent_status,
     .summary = "show the state of an agent run from its state dir",
     .description =
         "Prints what the agent using DIR recorded, as JSON: agent_id, running (an agent "
         "process holds DIR now), pid, consumer, connection (starting, streaming, "
         "polling, offline, stopped), cursor, last_sync (RFC 3339, null when never), "
         "outstanding_leases and processed_ids. Works while the agent runs. Exit 1 when "
         "DIR holds no agent state.",
     .options = agent_status_opts,
     .common = CLI_COMMON_OUTPUT},
    {.name = "callbacks add",
     .run = cmd_callbacks_add,
     .summary = "register the agent's webhook endpoint",
     .description =
         "Registers an HTTPS endpoint that receives the agent's events as signed POSTs "
         "(doc/WEBHOOKS.md). roostd resolves the host (every address must pass its destination "
         "filter) and sends a verification challenge the endpoint must answer within 10 s; "
         "then it stores the endpoint and prints it. Give the secret the endpoint answers "
         "with (--secret-file, e.g. made by 'echo whsec_$(openssl rand -base64 32)'); "
         "without one a new secret is made and shown on stderr before the registration (on "
         "a terminal, after Enter) and again with the answer. Refusals exit 1 with the "
         "server's detail: https_required, destination_forbidden (webhooks.allow_cidrs "
         "allows a range; the server's log names the address), endpoint_verification_failed "
         "(a private CA needs webhooks.ca_file); endpoint_exists (the agent has one) exits 3. "
         "The token needs consume scope for the agent.",
     .options = callbacks_add_opts,
     .common = CLI_COMMON_ALL},
    {.name = "callbacks list",
     .run = cmd_callbacks_list,
     .summary = "show the agent's webhook endpoint",
     .description =
         "Prints {\"endpoints\":[...],\"next\":null}: the agent's endpoint (url, status, "
         "disabled_reason, failing_since), never its secret.",
     .options = callbacks_agent_opts,
     .common = CLI_COMMON_ALL},
    {.name = "callbacks rm",
     .run = cmd_callbacks_rm,
     .summary = "delete the agent's webhook endpoint",
     .args = "ENDPOINT_ID",
     .min_args = 1,
     .max_args = 1,
     .description = "Deletes the endpoint and its attempt log; the agent's events stay in its "
                    "inbox for it to pull. An unknown endpoint fails with endpoint_not_found.",
     .options = callbacks_agent_opts,
     .common = CLI_COMMON_ALL},
    {.name = "login",
     .run = cmd_login,
     .summary = "enrol this device for an agent (device login)",
     .description = "Starts a device login (RFC 8628): prints a user code for an operator to "
                    "approve (roost admin devices approve CODE), waits, and saves the refresh "
                    "token and signing key in the credential store (the OS keyring, else a 0600 "
                    "file). Every command then uses the logged-in device when no token is given; "
                    "its access tokens and signing keys are short-lived and refreshed as needed. "
                    "With --signing-key ed25519 the device signs with Ed25519 keys of its own, a "
                    "new pair at every refresh, the private key kept only in the credential "
                    "store.",
     .options = login_opts,
     .common = CLI_COMMON_ALL},
    {.name = "admin devices list",
     .run = cmd_admin_devices_list,
     .summary = "list the tenant's devices (device login)",
     .description = "Lists the tenant's devices: agent, status (pending, approved, denied, "
                    "revoked), the user code of a pending one, name, address, requested and "
                    "granted scopes: {\"devices\":[...],\"next\":TOKEN|null}.",
     .options = devices_list_opts,
     .common = CLI_COMMON_ALL},
    {.name = "admin devices approve",
     .run = cmd_admin_devices_approve,
     .summary = "approve a device login by its user code",
     .args = "USER_CODE",
     .min_args = 1,
     .max_args = 1,
     .description = "Approves the device waiting with USER_CODE (as `roost login` printed it) "
                    "with the scopes it asked for, or --scope. Prints the device; says on "
                    "stderr which agent, scopes, name and address were approved.",
     .options = devices_approve_opts,
     .common = CLI_COMMON_ALL},
    {.name = "admin devices deny",
     .run = cmd_admin_devices_deny,
     .summary = "deny a device login by its user code",
     .args = "USER_CODE",
     .min_args = 1,
     .max_args = 1,
     .description = "Denies the device waiting with USER_CODE: its `roost login` ends with "
                    "access_denied.",
     .options = no_opts,
     .common = CLI_COMMON_ALL},
    {.name = "admin devices revoke",
     .run = cmd_admin_devices_revoke,
     .summary = "revoke a device: its refresh tokens and signing keys stop working",
     .args = "DEVICE_ID",
     .min_args = 1,
     .max_args = 1,
     .description = "Revokes the device: its next refresh fails (the agent stops and says "
                    "why) and its signing keys stop verifying at once.",
     .options = no_opts,
     .common = CLI_COMMON_ALL},
    {.name = "admin endpoints list",
     .run = cmd_admin_endpoints_list,
     .summary = "list the tenant's webhook endpoints",
     .description = "Lists the tenant's webhook endpoints (no secrets): "
                    "{\"endpoints\":[...],\"next\":TOKEN|null}.",
     .options = endpoints_list_opts,
     .common = CLI_COMMON_ALL},
    {.name = "admin endpoints inspect",
     .run = cmd_admin_endpoints_inspect,
     .summary = "show one webhook endpoint",
     .args = "ENDPOINT_ID",
     .min_args = 1,
     .max_args = 1,
     .description = "Prints one endpoint: agent, url, status, disabled_reason, failing_since.",
     .options = no_opts,
     .common = CLI_COMMON_ALL},
    {.name = "admin endpoints disable",
     .run = cmd_admin_endpoints_disable,
     .summary = "stop deliveries to a webhook endpoint",
     .args = "ENDPOINT_ID",
     .min_args = 1,
     .max_args = 1,
     .description = "Disables the endpoint (reason operator): nothing more is delivered; events "
                    "wait in the inbox. Prints the endpoint.",
     .options = no_opts,
     .common = CLI_COMMON_ALL},
    {.name = "admin endpoints enable",
     .run = cmd_admin_endpoints_enable,
     .summary = "resume deliveries to a webhook endpoint",
     .args = "ENDPOINT_ID",
     .min_args = 1,
     .max_args = 1,
     .description = "Enables the endpoint again (also after a 410 or a failing run): deliveries "
                    "resume with what waits in the inbox. Prints the endpoint.",
     .options = no_opts,
     .common = CLI_COMMON_ALL},
    {.name = "admin endpoints attempts",
     .run = cmd_admin_endpoints_attempts,
     .summary = "the delivery attempt log of a webhook endpoint",
     .args = "ENDPOINT_ID",
     .min_args = 1,
     .max_args = 1,
     .description = "Prints the endpoint's delivery attempts, oldest first: time, event, attempt "
                    "number, status_code (0: no answer), latency_ms, error_class, the first bytes "
                    "of the answer: {\"attempts\":[...],\"next\":TOKEN|null}.",
     .options = endpoints_attempts_opts,
     .common = CLI_COMMON_ALL},
    {.name = "admin endpoints replay",
     .run = cmd_admin_endpoints_replay,
     .summary = "redeliver quarantined events to a webhook endpoint",
     .synopsis = "roost admin endpoints replay ENDPOINT_ID (--event-id E | --since TIME)",
     .args = "ENDPOINT_ID",
     .min_args = 1,
     .max_args = 1,
     .description = "Puts the endpoint agent's quarantined (or expired) events back to pending so "
                    "they are delivered again: one event, or every one created since TIME. "
                    "Delivered events are completed and cannot be replayed. Prints "
                    "{\"endpoint_id\",\"replayed\":N}.",
     .options = endpoints_replay_opts,
     .common = CLI_COMMON_ALL},
    {.name = "admin sources add",
     .run = cmd_admin_sources_add,
     .summary = "add an inbound webhook source",
     .synopsis = "roost admin sources add --name N --scheme SCHEME (--agents A,B | --agent-pointer "
                 "P --agent-selector SEL) [--options JSON] [--secret S | --secret-file F]",
     .description = "Adds a source an outside sender (OpenAI, Anthropic, GitHub, Stripe, an A2A "
                    "server...) posts to: prints it with its ingest_url and its secret, which is "
                    "shown this once (doc/INGEST.md has a recipe per sender).",
     .options = sources_add_opts,
     .common = CLI_COMMON_ALL},
    {.name = "admin sources list",
     .run = cmd_admin_sources_list,
     .summary = "list the tenant's inbound webhook sources",
     .description =
         "Lists the sources (never their secrets): {\"sources\":[...],\"next\":TOKEN|null}.",
     .options = sources_list_opts,
     .common = CLI_COMMON_ALL},
    {.name = "admin sources show",
     .run = cmd_admin_sources_show,
     .summary = "show one inbound webhook source",
     .args = "SOURCE_ID",
     .min_args = 1,
     .max_args = 1,
     .description = "Prints one source: scheme, options, routing, ingest_url (never its secret).",
     .options = no_opts,
     .common = CLI_COMMON_ALL},
    {.name = "admin sources rm",
     .run = cmd_admin_sources_rm,
     .summary = "delete an inbound webhook source",
     .args = "SOURCE_ID",
     .min_args = 1,
     .max_args = 1,
     .description = "Deletes the source and its receipt log; its URL answers 404 from then on. "
                    "Events it delivered stay in their inboxes.",
     .options = no_opts,
     .common = CLI_COMMON_ALL},
    {.name = "admin sources rotate",
     .run = cmd_admin_sources_rotate,
     .summary = "rotate a source's secret",
     .args = "SOURCE_ID",
     .min_args = 1,
     .max_args = 1,
     .description = "Gives the source a new secret (printed once) and keeps the old one valid "
                    "for --overlap (default 24h), so the sender can be switched meanwhile.",
     .options = sources_rotate_opts,
     .common = CLI_COMMON_ALL},
    {.name = "admin sources receipts",
     .run = cmd_admin_sources_receipts,
     .summary = "a source's receipt log",
     .args = "SOURCE_ID",
     .min_args = 1,
     .max_args = 1,
     .description = "Every delivery, newest first: accepted, duplicate or refused, with the "
                    "reason (signature_mismatch, timestamp_too_old...), delivery id, size and "
                    "peer. Kept for ingest.receipt_retention_s.",
     .options = sources_list_opts,
     .common = CLI_COMMON_ALL},
    {.name = "completion",
     .run = cmd_completion,
     .summary = "print the shell completion script (bash or zsh)",
     .args = "SHELL",
     .min_args = 1,
     .max_args = 1,
     .arg_choices = "bash zsh",
     .description = "Prints the completion script for SHELL (bash or zsh), generated from the same "
                    "table as this help. Load it with 'source <(roost completion bash)'; 'make "
                    "install' puts both where bash-completion and zsh look for them.",
     .options = no_opts},
};

const size_t cli_n_commands = sizeof cli_commands / sizeof cli_commands[0];
