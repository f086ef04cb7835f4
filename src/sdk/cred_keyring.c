/* SPDX-License-Identifier: MIT */
/* The Secret Service backend of the credential store (cred_store.h) through libsecret: the
 * agent's whole record is one secret of the default collection (the login keyring of
 * gnome-keyring or KeePassXC), found by the attributes agent and dir (the credentials directory,
 * which keeps only a record without secrets naming this store). The secret comes back in
 * non-pageable memory and is wiped as it is freed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "roost/roost_error.h"
#include "sdk/cred_store.h"

#ifdef ROOST_HAVE_LIBSECRET
#include <libsecret/secret.h>
#endif

#include "common/banned.h"

#ifdef ROOST_HAVE_LIBSECRET

static const SecretSchema schema = {
    "org.roost.Device",
    SECRET_SCHEMA_NONE,
    {{"agent", SECRET_SCHEMA_ATTRIBUTE_STRING}, {"dir", SECRET_SCHEMA_ATTRIBUTE_STRING}, {NULL, 0}},
    0,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL};

static int keyring_load(const char *dir, const char *agent, char **json)
{
    GError *err = NULL;
    *json = NULL;
    gchar *pw = secret_password_lookup_nonpageable_sync(&schema, NULL, &err, "agent", agent, "dir",
                                                        dir, NULL);
    if (err != NULL) {
        g_error_free(err);
        return ROOST_EIO;
    }
    if (pw == NULL) {
        return ROOST_ENOTFOUND;
    }
    *json = strdup(pw);
    secret_password_free(pw);
    return *json != NULL ? ROOST_OK : ROOST_ENOMEM;
}

static int keyring_save(const char *dir, const char *agent, const char *json)
{
    GError *err = NULL;
    char label[256];
    snprintf(label, sizeof label, "Roost device login of agent %s", agent);
    gboolean ok = secret_password_store_sync(&schema, SECRET_COLLECTION_DEFAULT, label, json, NULL,
                                             &err, "agent", agent, "dir", dir, NULL);
    if (err != NULL) {
        g_error_free(err);
    }
    return ok ? ROOST_OK : ROOST_EIO;
}

static const struct cred_store keyring = {
    .name = "secret-service", .load = keyring_load, .save = keyring_save};

const struct cred_store *cred_keyring(char *why, size_t whylen)
{
    const char *bus = getenv("DBUS_SESSION_BUS_ADDRESS");
    if (bus == NULL || bus[0] == '\0') {
        snprintf(why, whylen, "no session bus");
        return NULL;
    }
    /* Connecting tells whether a Secret Service answers (or can be activated) on that bus. */
    GError *err = NULL;
    SecretService *svc = secret_service_get_sync(SECRET_SERVICE_OPEN_SESSION, NULL, &err);
    if (svc == NULL) {
        snprintf(why, whylen, "no Secret Service on the session bus: %s",
                 err != NULL ? err->message : "unknown error");
        if (err != NULL) {
            g_error_free(err);
        }
        return NULL;
    }
    g_object_unref(svc);
    return &keyring;
}

#else

const struct cred_store *cred_keyring(char *why, size_t whylen)
{
    snprintf(why, whylen, "built without libsecret");
    return NULL;
}

#endif
