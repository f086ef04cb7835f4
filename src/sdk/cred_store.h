/* SPDX-License-Identifier: MIT */
/* Where a device login's record lives (device.c): one small interface, so an OS keyring can sit
 * beside the file. Backends: the 0600 file (device.c) and the Secret Service through libsecret
 * (cred_keyring.c, when built with it). A macOS Keychain or Windows Credential Manager backend
 * would be one more of these. */
#ifndef ROOST_SDK_CRED_STORE_H
#define ROOST_SDK_CRED_STORE_H

#include <stdbool.h>
#include <stddef.h>

struct cred_store {
    const char *name;
    /* *json: the agent's record (caller cleanses and frees). ROOST_ENOTFOUND, ROOST_EIO. */
    int (*load)(const char *dir, const char *agent, char **json);
    /* Replaces the agent's record. ROOST_OK or ROOST_EIO. */
    int (*save)(const char *dir, const char *agent, const char *json);
};

/* The Secret Service when a session bus offers one; else NULL and why (within whylen). */
const struct cred_store *cred_keyring(char *why, size_t whylen);

#endif
