/* SPDX-License-Identifier: MIT */
/* Limits and names shared by the daemon, the SDK, the CLI and the tests: one place for a number or
 * a file name that more than one module needs to agree on. */
#ifndef ROOST_LIMITS_H
#define ROOST_LIMITS_H

/* tenant_id, agent_id, consumer: [A-Za-z0-9._-]{1,128}; buffers are ROOST_ID_MAX + 1. */
#define ROOST_ID_MAX 128

/* roostd's token-signing key (Ed25519, PEM, mode 0600) inside its data dir; `roost token mint
 * --data-dir` reads the same file. */
#define ROOST_TOKEN_KEY_FILE "token_ed25519.pem"

/* roostd's response-signing key (RFC 9421, Ed25519, PEM, mode 0600) inside its data dir. */
#define ROOST_SIGNING_KEY_FILE "signing_ed25519.pem"

/* The longest bearer token the SDK and the CLI send or read from a file or a command. */
#define ROOST_TOKEN_MAX_BYTES 8192

/* How long a store call waits for a lock held by another connection before it gives up. */
#define ROOST_BUSY_TIMEOUT_MS 5000

#endif
