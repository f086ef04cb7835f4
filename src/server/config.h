/* SPDX-License-Identifier: MIT */
/* roostd configuration: one table (ROOST_CONFIG_MAP) drives the defaults, the config file
 * (`key = value`), ROOST_* environment variables, `--set key=value`, validation, `--print-config`
 * and the generated reference. Precedence: default < file < env < --set. */
#ifndef ROOST_CONFIG_H
#define ROOST_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/limits.h"

enum config_type { CONFIG_INT, CONFIG_STR, CONFIG_BOOL };

#define CONFIG_SECRET 0x1     /* masked by --print-config */
#define CONFIG_RELOADABLE 0x2 /* takes effect on SIGHUP */

/* X(key, field, type, default, min, max, flags, description)
 * Integers are int64; string defaults may refer to other keys only through code (store.url). */
#define ROOST_CONFIG_MAP(X)                                                                        \
    X("listen", listen, CONFIG_STR, "127.0.0.1:8080", 0, 0, 0,                                     \
      "HOST:PORT to listen on; port 0 picks a free port")                                          \
    X("data_dir", data_dir, CONFIG_STR, "./var", 0, 0, 0,                                          \
      "directory for the SQLite database, signing keys and archives")                              \
    X("store.url", store_url, CONFIG_STR, "", 0, 0, CONFIG_SECRET,                                 \
      "sqlite://PATH, mysql://USER:PASS@HOST:PORT[,HOST:PORT...]/DB[?socket=PATH] or "             \
      "postgres://USER:PASS@HOST:PORT/DB[?schema=NAME&sslmode=...]; empty: DATA_DIR/roost.db")     \
    X("store.synchronous", store_synchronous, CONFIG_STR, "full", 0, 0, 0,                         \
      "SQLite durability: full (fsync every commit) or normal (WAL, fsync at checkpoints)")        \
    X("store.readers", store_readers, CONFIG_INT, "2", 1, 64, 0,                                   \
      "store worker threads for inbox reads (each owns one connection); one tenant runs on all "   \
      "but one of them at a time")                                                                 \
    X("store.scan_readers", store_scan_readers, CONFIG_INT, "1", 1, 64, 0,                         \
      "store worker threads (nice 10, each with its own connection) for admin listings (agents, "  \
      "quarantine, endpoints) and inbox reads of over 100 events, and to parse JSON request "      \
      "bodies of over 64 KiB (and check a big publish's events): a scan or a big body never "      \
      "holds a reader, the I/O loop or the CPU a small request needs")                             \
    X("store.writers", store_writers, CONFIG_INT, "0", 0, 64, 0,                                   \
      "write threads, each with its own transaction: 0 = 2 on MySQL; SQLite has 1")                \
    X("store.write_overlap", store_write_overlap, CONFIG_BOOL, "false", 0, 0, 0,                   \
      "several writers (MySQL): a group's statements run while the previous group's COMMIT "       \
      "waits for its fsync, and claims, acks, releases and extends go to any writer")              \
    X("store.group_commit_max", store_group_commit_max, CONFIG_INT, "256", 1, 10000, 0,            \
      "most write requests (and rows) sharing one transaction and one fsync")                      \
    X("store.failover_timeout_s", store_failover_timeout_s, CONFIG_INT, "10", 2, 600, 0,           \
      "MySQL URL with several hosts (Galera): a node silent this long has failed; a write keeps "  \
      "looking this long for a usable node before answering 503 (doc/MYSQL.md)")                   \
    X("lease.default_s", lease_default_s, CONFIG_INT, "60", 1, 86400, CONFIG_RELOADABLE,           \
      "lease length when a claim names none")                                                      \
    X("lease.max_s", lease_max_s, CONFIG_INT, "43200", 1, 604800, CONFIG_RELOADABLE,               \
      "largest lease_s a claim or extend may ask for")                                             \
    X("lease.max_total_s", lease_max_total_s, CONFIG_INT, "86400", 1, 2592000, CONFIG_RELOADABLE,  \
      "extend never moves a lease past claimed_at + this")                                         \
    X("claim.max_attempts", claim_max_attempts, CONFIG_INT, "5", 1, 1000, CONFIG_RELOADABLE,       \
      "an event is quarantined once attempts reach this and it fails again")                       \
    X("claim.max_wait_s", claim_max_wait_s, CONFIG_INT, "30", 0, 300, CONFIG_RELOADABLE,           \
      "largest wait_s a long poll (inbox read or claim) may ask for")                              \
    X("tail.interval_ms", tail_interval_ms, CONFIG_INT, "100", 10, 60000, CONFIG_RELOADABLE,       \
      "how often a node looks for commits made elsewhere (other nodes, roost_publish; MySQL, "     \
      "PostgreSQL)")                                                                               \
    X("scavenger.interval_ms", scavenger_interval_ms, CONFIG_INT, "1000", 10, 3600000,             \
      CONFIG_RELOADABLE, "how often expired leases, due and expired events are processed")         \
    X("scavenger.batch", scavenger_batch, CONFIG_INT, "1000", 1, 100000, CONFIG_RELOADABLE,        \
      "most rows the scavenger changes per transaction")                                           \
    X("retention.completed_s", retention_completed_s, CONFIG_INT, "604800", 0, 315360000,          \
      CONFIG_RELOADABLE, "completed and expired rows are deleted this long after they finished")   \
    X("retention.max_age_s", retention_max_age_s, CONFIG_INT, "2592000", 1, 315360000,             \
      CONFIG_RELOADABLE, "any row older than this is archived (NDJSON.gz) and deleted")            \
    X("retention.interval_ms", retention_interval_ms, CONFIG_INT, "60000", 10, 86400000,           \
      CONFIG_RELOADABLE, "how often retention runs")                                               \
    X("retention.batch", retention_batch, CONFIG_INT, "1000", 1, 100000, CONFIG_RELOADABLE,        \
      "most rows retention deletes per transaction")                                               \
    X("limits.max_body_bytes", limits_max_body_bytes, CONFIG_INT, "4194304", 1024, 1073741824, 0,  \
      "largest request body; larger gets 413")                                                     \
    X("limits.max_payload_bytes", limits_max_payload_bytes, CONFIG_INT, "262144", 16, 67108864,    \
      CONFIG_RELOADABLE, "largest event payload (compact JSON); larger gets 413")                  \
    X("limits.max_batch", limits_max_batch, CONFIG_INT, "1000", 1, 100000, CONFIG_RELOADABLE,      \
      "most events per publish batch, recipients per event, acks per batch ack")                   \
    X("limits.max_recipients", limits_max_recipients, CONFIG_INT, "10000", 1, 1000000,             \
      CONFIG_RELOADABLE, "most recipients (fan-out) of one event")                                 \
    X("limits.max_publish_bytes", limits_max_publish_bytes, CONFIG_INT, "67108864", 1024,          \
      1099511627776, CONFIG_RELOADABLE,                                                            \
      "most bytes one publish request may write after fan-out (each payload and state_patch "      \
      "times its recipients); more gets 413")                                                      \
    X("limits.admin_scan_ms", limits_admin_scan_ms, CONFIG_INT, "500", 0, 600000, 0,               \
      "time budget of an admin agent listing sorted by depth or age (it ranks every agent of the " \
      "tenant); past it 503 scan_budget_exceeded; 0 = none")                                       \
    X("limits.max_state_bytes", limits_max_state_bytes, CONFIG_INT, "1048576", 1024, 67108864,     \
      CONFIG_RELOADABLE,                                                                           \
      "largest agent state document a state_patch may leave; a publish passing it gets 413")       \
    X("limits.publish_rows_per_s", limits_publish_rows_per_s, CONFIG_INT, "0", 0, 100000000,       \
      CONFIG_RELOADABLE,                                                                           \
      "inbox rows (events times recipients) one tenant may publish per second on this node, "      \
      "with bursts of two seconds' worth; more gets 429 with Retry-After; 0 = no limit")           \
    X("limits.max_response_bytes", limits_max_response_bytes, CONFIG_INT, "4194304", 65536,        \
      1073741824, CONFIG_RELOADABLE,                                                               \
      "byte budget of a page (inbox read, claim, quarantine list): it ends early, has_more")       \
    X("limits.max_json_depth", limits_max_json_depth, CONFIG_INT, "32", 2, 1000,                   \
      CONFIG_RELOADABLE, "deepest JSON nesting accepted in a body")                                \
    X("limits.max_header_bytes", limits_max_header_bytes, CONFIG_INT, "16384", 1024, 1048576, 0,   \
      "largest request header section; larger gets 431")                                           \
    X("http.timeout_s", http_timeout_s, CONFIG_INT, "90", 1, 3600, 0,                              \
      "idle timeout of a connection (must exceed long-poll waits)")                                \
    X("http.header_timeout_s", http_header_timeout_s, CONFIG_INT, "10", 1, 3600,                   \
      CONFIG_RELOADABLE,                                                                           \
      "a request head (request line and headers) must arrive whole within this, counted from "     \
      "accept or from its first byte on a kept-alive connection; else the connection is closed")   \
    X("http.max_conns_per_addr", http_max_conns_per_addr, CONFIG_INT, "-1", -1, 10000000,          \
      CONFIG_RELOADABLE,                                                                           \
      "open connections from one client address (SSE streams included); more are closed at "       \
      "once; -1 = a quarter of the open-file limit at start (1024 without one); 0 = no limit")     \
    X("http.cors_origins", http_cors_origins, CONFIG_STR, "", 0, 0, CONFIG_RELOADABLE,             \
      "origins (comma-separated, exact: https://app.example,http://localhost:5173) whose pages "   \
      "may call the API and read its answers (CORS); empty means same-origin pages only")          \
    X("sse.heartbeat_s", sse_heartbeat_s, CONFIG_INT, "30", 1, 3600, CONFIG_RELOADABLE,            \
      "heartbeat interval of SSE streams (carries the head; keeps proxies from timing out)")       \
    X("sse.retry_ms", sse_retry_ms, CONFIG_INT, "3000", 100, 600000, CONFIG_RELOADABLE,            \
      "reconnect delay announced to EventSource clients (retry:)")                                 \
    X("sse.stall_timeout_s", sse_stall_timeout_s, CONFIG_INT, "60", 1, 3600, CONFIG_RELOADABLE,    \
      "a stream whose last event stays unsent this long is dropped (unacknowledged: +30 s)")       \
    X("sse.max_per_agent", sse_max_per_agent, CONFIG_INT, "64", 1, 1000000, CONFIG_RELOADABLE,     \
      "open streams per agent; more get 429")                                                      \
    X("sse.max_per_tenant", sse_max_per_tenant, CONFIG_INT, "0", 0, 10000000, CONFIG_RELOADABLE,   \
      "open streams per tenant; more get 429; 0 = a tenth of sse.max_total (at least 1), so "      \
      "one tenant cannot take every stream")                                                       \
    X("sse.max_total", sse_max_total, CONFIG_INT, "100000", 1, 10000000, CONFIG_RELOADABLE,        \
      "open streams on this node; more get 429")                                                   \
    X("auth.key_file", auth_key_file, CONFIG_STR, "", 0, 0, 0,                                     \
      "Ed25519 private key (PEM) signing and verifying tokens; empty means "                       \
      "DATA_DIR/" ROOST_TOKEN_KEY_FILE)                                                            \
    X("auth.jwks_file", auth_jwks_file, CONFIG_STR, "", 0, 0, CONFIG_RELOADABLE,                   \
      "JWK Set (JSON) of an identity provider's public keys: OKP/Ed25519 (EdDSA), EC/P-256 "       \
      "(ES256), RSA >= 2048 bits (RS256); tokens pick a key by kid; empty means none")             \
    X("auth.hs256_secret_file", auth_hs256_secret_file, CONFIG_STR, "", 0, 0, CONFIG_RELOADABLE,   \
      "file holding the HS256 secret (32..4096 bytes, one trailing newline ignored); empty "       \
      "means HS256 is refused")                                                                    \
    X("auth.issuer", auth_issuer, CONFIG_STR, "", 0, 0, CONFIG_RELOADABLE,                         \
      "when set, tokens verified with auth.jwks_file or auth.hs256_secret_file must carry this "   \
      "iss")                                                                                       \
    X("auth.audience", auth_audience, CONFIG_STR, "", 0, 0, CONFIG_RELOADABLE,                     \
      "when set, the aud of those tokens (string or array) must contain this value")               \
    X("auth.ticket_ttl_s", auth_ticket_ttl_s, CONFIG_INT, "60", 1, 3600, CONFIG_RELOADABLE,        \
      "lifetime of a subscribe ticket (POST .../subscribe/ticket); each is single-use")            \
    X("limits.tickets_per_s", limits_tickets_per_s, CONFIG_INT, "50", 0, 1000000,                  \
      CONFIG_RELOADABLE,                                                                           \
      "subscribe tickets one tenant may mint per second on this node, with bursts of two "         \
      "seconds' worth; more get 429 with Retry-After; 0 = no limit")                               \
    X("signatures.require", signatures_require, CONFIG_STR, "off", 0, 0, CONFIG_RELOADABLE,        \
      "RFC 9421 request signatures required on agent routes and publish: off, mutations (every "   \
      "method but GET/HEAD) or all; a Signature sent anyway is always verified")                   \
    X("log.level", log_level, CONFIG_STR, "info", 0, 0, CONFIG_RELOADABLE,                         \
      "debug, info, warn or error")                                                                \
    X("log.format", log_format, CONFIG_STR, "logfmt", 0, 0, CONFIG_RELOADABLE,                     \
      "log line format on stderr: logfmt or json (one object per line)")                           \
    X("metrics.refresh_ms", metrics_refresh_ms, CONFIG_INT, "1000", 100, 3600000,                  \
      CONFIG_RELOADABLE, "how often the inbox gauges of /metrics are refreshed from the store")    \
    X("metrics.top_agents", metrics_top_agents, CONFIG_INT, "20", 0, 1000, CONFIG_RELOADABLE,      \
      "agents with the deepest inboxes that get their own roost_inbox_depth series (the rest "     \
      "of a tenant is agent=\"_other\")")                                                          \
    X("metrics.token", metrics_token, CONFIG_STR, "", 0, 0, CONFIG_SECRET | CONFIG_RELOADABLE,     \
      "when set, /metrics requires Authorization: Bearer <this>; empty means loopback peers only") \
    X("metrics.tenant_labels", metrics_tenant_labels, CONFIG_STR, "top", 0, 0, CONFIG_RELOADABLE,  \
      "tenant and agent names in /metrics: top (tenants and their deepest agents), on (tenants "   \
      "only) or off (sums over all tenants, no names)")                                            \
    X("tls.cert_file", tls_cert_file, CONFIG_STR, "", 0, 0, 0,                                     \
      "PEM certificate chain for built-in HTTPS; empty means plain HTTP (set with tls.key_file)")  \
    X("tls.key_file", tls_key_file, CONFIG_STR, "", 0, 0, 0, "PEM private key of tls.cert_file")   \
    X("webhooks.enabled", webhooks_enabled, CONFIG_BOOL, "true", 0, 0, 0,                          \
      "run the webhook dispatcher on this node (deliveries to registered endpoints)")              \
    X("webhooks.allow_cidrs", webhooks_allow_cidrs, CONFIG_STR, "", 0, 0, 0,                       \
      "CIDRs (comma-separated) webhooks may reach although the block list forbids them "           \
      "(private, loopback...); the only way to private destinations; empty means none")            \
    X("webhooks.ca_file", webhooks_ca_file, CONFIG_STR, "", 0, 0, 0,                               \
      "PEM file of CAs trusted for webhook endpoints besides the system ones (private CAs)")       \
    X("webhooks.signing_key_file", webhooks_signing_key_file, CONFIG_STR, "", 0, 0, 0,             \
      "Ed25519 private key (PEM) signing webhook deliveries, served at /api/v1/keys/server; give " \
      "every node the same file (it must exist); empty means DATA_DIR/" ROOST_SIGNING_KEY_FILE     \
      ", made at first start")                                                                     \
    X("webhooks.extra_keys_file", webhooks_extra_keys_file, CONFIG_STR, "", 0, 0, 0,               \
      "PEM file of further Ed25519 keys (public or private, up to 16) published beside the "       \
      "signing key at /api/v1/keys/server but never used to sign: the other nodes' keys, the "     \
      "previous key during a rotation; empty means none")                                          \
    X("webhooks.retry_schedule_s", webhooks_retry_schedule_s, CONFIG_STR,                          \
      "5,300,1800,7200,18000,36000,36000", 0, 0, 0,                                                \
      "delays (seconds, comma-separated) before each retry of a failed delivery, jittered; "       \
      "once spent the event is quarantined")                                                       \
    X("webhooks.jitter_pct", webhooks_jitter_pct, CONFIG_INT, "10", 0, 100, 0,                     \
      "each retry delay is lengthened by a random 0..this percent")                                \
    X("webhooks.disable_after_s", webhooks_disable_after_s, CONFIG_INT, "432000", 0, 315360000, 0, \
      "an endpoint failing continuously this long is disabled; 0 = never (410 always disables)")   \
    X("webhooks.timeout_ms", webhooks_timeout_ms, CONFIG_INT, "15000", 100, 600000, 0,             \
      "whole-request timeout of one delivery")                                                     \
    X("webhooks.connect_timeout_ms", webhooks_connect_timeout_ms, CONFIG_INT, "5000", 100, 600000, \
      0, "TCP and TLS connect timeout of deliveries and verifications")                            \
    X("webhooks.verify_timeout_ms", webhooks_verify_timeout_ms, CONFIG_INT, "10000", 100, 600000,  \
      0, "the endpoint must answer the verification challenge within this")                        \
    X("webhooks.poll_ms", webhooks_poll_ms, CONFIG_INT, "30000", 10, 3600000, 0,                   \
      "the dispatcher waits for inbox changes of agents with an endpoint; this often it also "     \
      "reads every active endpoint and claims for each (the fallback for a missed change; the "    \
      "endpoint list itself is read every 5 s)")                                                   \
    X("webhooks.max_in_flight", webhooks_max_in_flight, CONFIG_INT, "4", 1, 1000, 0,               \
      "concurrent deliveries per endpoint on this node")                                           \
    X("webhooks.max_per_s", webhooks_max_per_s, CONFIG_INT, "0", 0, 1000000, 0,                    \
      "deliveries started per second per endpoint on this node; 0 = no limit")                     \
    X("webhooks.max_total_in_flight", webhooks_max_total_in_flight, CONFIG_INT, "256", 1, 100000,  \
      0, "concurrent deliveries of this node, all endpoints together")                             \
    X("webhooks.max_tenant_in_flight", webhooks_max_tenant_in_flight, CONFIG_INT, "0", 0, 100000,  \
      0,                                                                                           \
      "concurrent deliveries of one tenant on this node, all its endpoints together; 0 = a "       \
      "quarter of webhooks.max_total_in_flight (at least 1)")                                      \
    X("webhooks.max_verifications_per_tenant", webhooks_max_verifications_per_tenant, CONFIG_INT,  \
      "4", 1, 32, CONFIG_RELOADABLE,                                                               \
      "endpoint verification challenges one tenant may have in progress on this node (32 for "     \
      "all tenants); more get 429 with Retry-After")                                               \
    X("webhooks.registrations_per_min", webhooks_registrations_per_min, CONFIG_INT, "60", 0,       \
      1000000, CONFIG_RELOADABLE,                                                                  \
      "endpoint registrations one tenant may start per minute on this node (bursts of that "       \
      "many); more get 429 with Retry-After; 0 = no limit")                                        \
    X("webhooks.attempt_retention_s", webhooks_attempt_retention_s, CONFIG_INT, "604800", 60,      \
      315360000, 0, "entries of the delivery attempt log are deleted after this")                  \
    X("oauth.default_tenant", oauth_default_tenant, CONFIG_STR, "default", 0, 0,                   \
      CONFIG_RELOADABLE,                                                                           \
      "the tenant of a device authorization that names none (roost login without --tenant)")       \
    X("oauth.device_code_ttl_s", oauth_device_code_ttl_s, CONFIG_INT, "600", 5, 86400,             \
      CONFIG_RELOADABLE, "a device login's user code must be approved within this")                \
    X("oauth.poll_interval_s", oauth_poll_interval_s, CONFIG_INT, "5", 1, 60, CONFIG_RELOADABLE,   \
      "the least interval between a device's token polls; polling faster answers slow_down and "   \
      "adds 5 s to it")                                                                            \
    X("oauth.access_token_ttl_s", oauth_access_token_ttl_s, CONFIG_INT, "900", 1, 86400,           \
      CONFIG_RELOADABLE, "lifetime of the access tokens a refresh (or device login) issues")       \
    X("oauth.signing_key_ttl_s", oauth_signing_key_ttl_s, CONFIG_INT, "900", 1, 2592000,           \
      CONFIG_RELOADABLE,                                                                           \
      "a device's request-signing key stops verifying this long after it was issued (plus "        \
      "oauth.key_overlap_s); a refresh issues the next")                                           \
    X("oauth.key_overlap_s", oauth_key_overlap_s, CONFIG_INT, "60", 0, 3600, CONFIG_RELOADABLE,    \
      "after a refresh the device's previous signing key still verifies this long, so requests "   \
      "signed before it never fail")                                                               \
    X("oauth.device_authorizations_per_min", oauth_device_authorizations_per_min, CONFIG_INT,      \
      "30", 0, 100000, CONFIG_RELOADABLE,                                                          \
      "device authorizations one client address may start per minute on this node (bursts of "     \
      "that many); more get 429 slow_down with Retry-After; 0 = no limit")                         \
    X("oauth.refresh_reuse_interval_s", oauth_refresh_reuse_interval_s, CONFIG_INT, "30", 0, 300,  \
      CONFIG_RELOADABLE,                                                                           \
      "a refresh token (or device code) presented again this soon after it was exchanged, before " \
      "its successor was used, gets a fresh pair instead of revoking the device (the answer was "  \
      "lost); 0 = every second use revokes")                                                       \
    X("ingest.max_body_bytes", ingest_max_body_bytes, CONFIG_INT, "131072", 1024, 16777216,        \
      CONFIG_RELOADABLE,                                                                           \
      "largest body POST /ingest/{source_id} accepts; larger gets 413 (the event it makes must "   \
      "also fit limits.max_payload_bytes)")                                                        \
    X("ingest.rate_per_s", ingest_rate_per_s, CONFIG_INT, "50", 0, 1000000, CONFIG_RELOADABLE,     \
      "deliveries one source may send per second on this node, with bursts of two seconds' "       \
      "worth; more get 429 with Retry-After; 0 = no limit")                                        \
    X("ingest.tolerance_s", ingest_tolerance_s, CONFIG_INT, "300", 1, 86400, CONFIG_RELOADABLE,    \
      "a signed timestamp (standard-webhooks, stripe, hmac with a timestamp header; a JWT's iat) " \
      "may be this far from now, either way")                                                      \
    X("ingest.receipt_retention_s", ingest_receipt_retention_s, CONFIG_INT, "604800", 60,          \
      315360000, CONFIG_RELOADABLE, "entries of a source's receipt log are deleted after this")

/* Tenant routing: `store.tenant.<tenant_id> = URL` sends that tenant to its own store (a shard);
 * every other tenant uses store.url. Not reloadable: a shard's connections live as long as the
 * process. */
#define CONFIG_TENANT_STORE_PREFIX "store.tenant."
#define CONFIG_MAX_TENANT_STORES 64
struct config_tenant_store {
    char tenant_id[ROOST_ID_MAX + 1];
    char *url;
};

/* Signature policy per tenant: `signatures.tenant.<tenant_id> = off|mutations|all` overrides
 * signatures.require for that tenant. Reloadable like signatures.require. */
#define CONFIG_TENANT_SIG_PREFIX "signatures.tenant."
#define CONFIG_MAX_TENANT_SIGS 256
enum config_sig_policy { CONFIG_SIG_OFF = 0, CONFIG_SIG_MUTATIONS, CONFIG_SIG_ALL };
struct config_tenant_sig {
    char tenant_id[ROOST_ID_MAX + 1];
    enum config_sig_policy policy;
};

struct config {
#define CONFIG_FIELD(key, field, type, def, min, max, flags, desc) CONFIG_FIELD_##type(field)
#define CONFIG_FIELD_CONFIG_INT(field) int64_t field;
#define CONFIG_FIELD_CONFIG_STR(field) char *field;
#define CONFIG_FIELD_CONFIG_BOOL(field) bool field;
    ROOST_CONFIG_MAP(CONFIG_FIELD)
#undef CONFIG_FIELD
    struct config_tenant_store tenant_stores[CONFIG_MAX_TENANT_STORES];
    size_t n_tenant_stores;
    struct config_tenant_sig tenant_sigs[CONFIG_MAX_TENANT_SIGS];
    size_t n_tenant_sigs;
};

/* The signature policy for `tenant_id`: its signatures.tenant.<id> entry, else
 * signatures.require. */
enum config_sig_policy config_sig_policy(const struct config *cfg, const char *tenant_id);

/* Fills every field with its default. Strings are heap copies owned by the config. */
int config_init(struct config *cfg);
void config_cleanup(struct config *cfg);

/* Sets one key from text. On failure returns -1 and writes "key: reason" into err. */
int config_set(struct config *cfg, const char *key, const char *value, char *err, size_t errlen);
/* Reads `key = value` lines (inih syntax, '#'/';' comments, no sections needed). Errors name the
 * file, line and key. */
int config_load_file(struct config *cfg, const char *path, char *err, size_t errlen);
/* Applies ROOST_<KEY> variables: dots and dashes become underscores, upper case
 * (lease.default_s → ROOST_LEASE_DEFAULT_S). */
int config_load_env(struct config *cfg, char *const *envp, char *err, size_t errlen);
/* Cross-key checks (lease.default_s <= lease.max_s, …) and derived defaults (store.url). */
int config_finalize(struct config *cfg, char *err, size_t errlen);
/* Where a config comes from, kept so SIGHUP can rebuild it the same way. Borrowed strings. */
struct config_source {
    const char *file;        /* --config FILE, or NULL */
    const char *const *sets; /* "key=value" of every --set (and --listen, --data-dir, ...) */
    size_t n_sets;
    char *const *envp; /* environment read for ROOST_* */
};

/* config_init + file + env + sets + finalize, in precedence order. Returns 0, or -1 with err set
 * (cfg is then still initialised and must be cleaned up). */
int config_build(struct config *cfg, const struct config_source *src, char *err, size_t errlen);

/* SIGHUP: moves the value of every reloadable key that differs from `fresh` into `cur` (the old
 * values go to `fresh`, freed with it). Lists the keys that changed in `changed` and the
 * non-reloadable keys that differ (they wait for a restart) in `restart`, comma-separated. */
void config_apply_reloadable(struct config *cur, struct config *fresh, char *changed,
                             size_t changed_len, char *restart, size_t restart_len);

/* Writes `key = value` for every key, secrets masked. */
void config_print(const struct config *cfg, FILE *out);
/* Writes the Markdown reference table of every key. */
void config_print_reference(FILE *out);

#endif
