/* SPDX-License-Identifier: MIT */
/* Device login credentials (roost_token.h, doc/CREDENTIALS.md): the credential store and the
 * token provider over it.
 *
 * The store is one small interface (cred_store.h: load and save one agent's record): the OS
 * keyring (the Secret Service, cred_keyring.c) when a session bus offers one, else one JSON file
 * per agent, 0600 in a 0700 directory, written to a temporary file and renamed into place. The
 * file protects against other users of the machine, not against the user's own processes or
 * root. With the keyring the file still exists, without secrets: it names the store, so the
 * directory lists the agents logged in either way. ROOST_CREDENTIALS_STORE=file keeps the file.
 *
 * The record is the last /oauth/token answer but the access token: server, tenant, agent_id,
 * device_id, refresh_token and signing_key, the latter either an HMAC key roostd issued
 * ({"key_id", "alg": "hmac-sha256", "secret"}) or an Ed25519 key this side made and registered
 * ({"key_id", "alg": "ed25519", "private_key": PKCS#8 PEM}). A login of the second kind makes a
 * new pair at every refresh. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/ids.h"
#include "common/jsonutil.h"
#include "roost/roost_client.h"
#include "roost/roost_token.h"
#include "sdk/cred_store.h"
#include "sdk/sdk.h"

#include "common/banned.h"

#define RECORD_MAX_BYTES (64 * 1024)
#define SECRET_MAX 4096

/* ---- the credential store ---- */

static void record_path(const char *dir, const char *agent, char *out, size_t len)
{
    snprintf(out, len, "%s/device-%s.json", dir, agent);
}

static int file_load(const char *dir, const char *agent, char **json)
{
    char path[4096];
    size_t len = 0;
    record_path(dir, agent, path, sizeof path);
    *json = NULL;
    if (fsutil_read_bounded(path, RECORD_MAX_BYTES, json, &len) != 0) {
        return errno == ENOENT ? ROOST_ENOTFOUND : ROOST_EIO;
    }
    return ROOST_OK;
}

static int file_save(const char *dir, const char *agent, const char *json)
{
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        return ROOST_EIO;
    }
    char path[4096], tmp[4200];
    record_path(dir, agent, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        return ROOST_EIO;
    }
    size_t n = strlen(json);
    bool ok = fchmod(fd, 0600) == 0 && write(fd, json, n) == (ssize_t)n && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return ROOST_EIO;
    }
    return ROOST_OK;
}

static const struct cred_store file_store = {.name = "file", .load = file_load, .save = file_save};

/* The keyring unless the user asks for the file or none answers (then why, for the report). */
static const struct cred_store *pick_store(char *why, size_t whylen)
{
    const char *env = getenv("ROOST_CREDENTIALS_STORE");
    if (env != NULL && strcmp(env, "file") == 0) {
        snprintf(why, whylen, "ROOST_CREDENTIALS_STORE=file");
        return &file_store;
    }
    const struct cred_store *k = cred_keyring(why, whylen);
    return k != NULL ? k : &file_store;
}

/* The record of agent: from the file, or from the store the file names. */
static int record_load(const char *dir, const char *agent, char **json)
{
    int rc = file_store.load(dir, agent, json);
    if (rc != ROOST_OK) {
        return rc;
    }
    json_t *stub = json_loads(*json, 0, NULL);
    const char *store = json_string_value(json_object_get(stub, "store"));
    if (store != NULL && strcmp(store, "file") != 0) {
        OPENSSL_cleanse(*json, strlen(*json));
        free(*json);
        *json = NULL;
        char why[256];
        const struct cred_store *k = cred_keyring(why, sizeof why);
        rc = k != NULL && strcmp(store, k->name) == 0 ? k->load(dir, agent, json) : ROOST_EIO;
    }
    json_decref(stub);
    return rc;
}

static const char *default_dir(const char *dir, char *buf, size_t len)
{
    const char *env;
    if (dir != NULL && dir[0] != '\0') {
        return dir;
    }
    if ((env = getenv("ROOST_CREDENTIALS_DIR")) != NULL && env[0] != '\0') {
        return env;
    }
    if ((env = getenv("XDG_STATE_HOME")) != NULL && env[0] == '/') {
        snprintf(buf, len, "%s/roost", env);
    } else {
        const char *home = getenv("HOME");
        snprintf(buf, len, "%s/.local/state/roost", home != NULL ? home : ".");
        char parent[4200];
        snprintf(parent, sizeof parent, "%s/.local", home != NULL ? home : ".");
        mkdir(parent, 0700);
        snprintf(parent, sizeof parent, "%s/.local/state", home != NULL ? home : ".");
        mkdir(parent, 0700);
    }
    return buf;
}

/* ---- the device ---- */

/* Kept in its own mapping, excluded from core dumps, wiped when freed. */
struct roost_device {
    pthread_mutex_t lock;
    char dir[4096];
    char server[2048];
    char tenant[ROOST_ID_MAX + 1];
    char agent[ROOST_ID_MAX + 1];
    char refresh[SECRET_MAX];
    char access[SECRET_MAX];
    int64_t access_exp, access_ttl; /* s */
    /* the signing key of the last refresh, key_gen counting them: the HMAC secret roostd issued
     * ("base64:…"), or the PEM private key of the Ed25519 pair made for it (own_keys) */
    bool own_keys;
    char key_secret[SECRET_MAX];
    char key_next[1024]; /* the private key of a refresh in flight (own_keys) */
    char key_id[ROOST_ID_MAX + 1];
    uint64_t key_gen;
    int64_t key_exp, key_ttl; /* s */
    bool refused;             /* a refresh was refused: the device is done */
    char error[512];
};

int roost_device_keygen(char *public_pem, size_t public_cap, char *private_pem, size_t private_cap)
{
    EVP_PKEY *pkey = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    /* The private half through a secure-memory BIO: its buffer is wiped as it grows and freed. */
    BIO *priv = BIO_new(BIO_s_secmem());
    BIO *pub = BIO_new(BIO_s_mem());
    int rc = ROOST_EINTERNAL;
    if (pkey != NULL && priv != NULL && pub != NULL &&
        PEM_write_bio_PrivateKey(priv, pkey, NULL, NULL, 0, NULL, NULL) == 1 &&
        PEM_write_bio_PUBKEY(pub, pkey) == 1) {
        char *p = NULL, *q = NULL;
        long np = BIO_get_mem_data(priv, &p), nq = BIO_get_mem_data(pub, &q);
        rc = ROOST_EINVAL;
        if (np > 0 && nq > 0 && (size_t)np < private_cap && (size_t)nq < public_cap) {
            memcpy(private_pem, p, (size_t)np);
            private_pem[np] = '\0';
            memcpy(public_pem, q, (size_t)nq);
            public_pem[nq] = '\0';
            rc = ROOST_OK;
        }
    }
    BIO_free(priv);
    BIO_free(pub);
    EVP_PKEY_free(pkey); /* OpenSSL wipes an Ed25519 private key as it frees it */
    return rc;
}

/* roost_device_save of a parsed answer. */
static int save_answer(const char *dir, const char *server, json_t *t, char *errbuf, size_t errlen)
{
    char dbuf[4096];
    dir = default_dir(dir, dbuf, sizeof dbuf);
    const char *agent = json_string_value(json_object_get(t, "agent_id"));
    const char *rt = json_string_value(json_object_get(t, "refresh_token"));
    if (agent == NULL || rt == NULL || !ids_valid_name(agent, strlen(agent))) {
        return sdk_errbuf_fail(errbuf, errlen, ROOST_EINVAL, "not a token answer");
    }
    json_t *rec = json_pack("{s:s, s:O?, s:s, s:O?, s:s, s:O?}", "server", server, "tenant",
                            json_object_get(t, "tenant"), "agent_id", agent, "device_id",
                            json_object_get(t, "device_id"), "refresh_token", rt, "signing_key",
                            json_object_get(t, "signing_key"));
    char *text = rec != NULL ? json_dumps(rec, JSON_COMPACT) : NULL;
    char why[300];
    const struct cred_store *st = pick_store(why, sizeof why);
    int rc = text != NULL ? st->save(dir, agent, text) : ROOST_ENOMEM;
    if (rc == ROOST_EIO && st != &file_store) { /* e.g. a locked keyring and no one to unlock it */
        snprintf(why, sizeof why, "the Secret Service did not store it");
        st = &file_store;
        rc = st->save(dir, agent, text);
    }
    if (text != NULL) {
        OPENSSL_cleanse(text, strlen(text));
        free(text);
    }
    if (rc == ROOST_OK && st != &file_store) {
        /* the file keeps what is not secret and names the store holding the rest */
        json_t *stub = json_pack("{s:s, s:O?, s:s, s:O?, s:s}", "server", server, "tenant",
                                 json_object_get(t, "tenant"), "agent_id", agent, "device_id",
                                 json_object_get(t, "device_id"), "store", st->name);
        char *s = stub != NULL ? json_dumps(stub, JSON_COMPACT) : NULL;
        rc = s != NULL ? file_store.save(dir, agent, s) : ROOST_ENOMEM;
        free(s);
        json_decref(stub);
    }
    if (rc != ROOST_OK) {
        sdk_errbuf_fail(errbuf, errlen, rc, "cannot write the credentials (%s) in %s", st->name,
                        dir);
    } else if (st != &file_store) {
        sdk_errbuf_fail(errbuf, errlen, rc, "in the OS keyring (Secret Service)");
    } else {
        sdk_errbuf_fail(errbuf, errlen, rc,
                        "in %s/device-%s.json, mode 0600 (not in the OS keyring: %s)", dir, agent,
                        why);
    }
    /* its signing_key is t's, wiped by the caller */
    jsonutil_wipe(json_object_get(rec, "refresh_token"));
    json_decref(rec);
    return rc;
}

int roost_device_save(const char *dir, const char *server, const char *token_json, char *errbuf,
                      size_t errlen)
{
    json_t *t = json_loads(token_json, 0, NULL);
    int rc = save_answer(dir, server, t, errbuf, errlen);
    jsonutil_wipe(t);
    json_decref(t);
    return rc;
}

/* The only record in dir, when agent is NULL. */
static int only_agent(const char *dir, char *agent, size_t len, char *errbuf, size_t errlen)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        return sdk_errbuf_fail(errbuf, errlen, ROOST_ENOTFOUND, "no device login in %s", dir);
    }
    int found = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n > 12 && strncmp(e->d_name, "device-", 7) == 0 &&
            strcmp(e->d_name + n - 5, ".json") == 0 && n - 12 < len) {
            if (found++ == 0) {
                snprintf(agent, len, "%.*s", (int)(n - 12), e->d_name + 7);
            }
        }
    }
    closedir(d);
    if (found == 0) {
        return sdk_errbuf_fail(errbuf, errlen, ROOST_ENOTFOUND, "no device login in %s", dir);
    }
    return found == 1 ? ROOST_OK
                      : sdk_errbuf_fail(errbuf, errlen, ROOST_EINVAL,
                                        "several agents are logged in in %s: name the agent", dir);
}

int roost_device_open(const char *dir, const char *agent_id, struct roost_device **out,
                      char *errbuf, size_t errlen)
{
    *out = NULL;
    char dbuf[4096], agent[ROOST_ID_MAX + 1];
    dir = default_dir(dir, dbuf, sizeof dbuf);
    int rc;
    if (agent_id == NULL) {
        if ((rc = only_agent(dir, agent, sizeof agent, errbuf, errlen)) != ROOST_OK) {
            return rc;
        }
        agent_id = agent;
    }
    if (!ids_valid_name(agent_id, strlen(agent_id))) {
        return sdk_errbuf_fail(errbuf, errlen, ROOST_EINVAL, "bad agent id");
    }
    char *text = NULL;
    if ((rc = record_load(dir, agent_id, &text)) != ROOST_OK) {
        return sdk_errbuf_fail(errbuf, errlen, rc, "no device login of agent %s in %s", agent_id,
                               dir);
    }
    json_t *rec = json_loads(text, 0, NULL);
    OPENSSL_cleanse(text, strlen(text));
    free(text);
    const char *server = json_string_value(json_object_get(rec, "server"));
    const char *tenant = json_string_value(json_object_get(rec, "tenant"));
    const char *rt = json_string_value(json_object_get(rec, "refresh_token"));
    if (server == NULL || rt == NULL || strlen(rt) >= SECRET_MAX || strlen(server) >= 2048) {
        jsonutil_wipe(rec);
        json_decref(rec);
        return sdk_errbuf_fail(errbuf, errlen, ROOST_EIO, "the device login of %s is damaged",
                               agent_id);
    }
    struct roost_device *d =
        mmap(NULL, sizeof *d, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (d == MAP_FAILED) {
        jsonutil_wipe(rec);
        json_decref(rec);
        return sdk_errbuf_fail(errbuf, errlen, ROOST_ENOMEM, "out of memory");
    }
#ifdef MADV_DONTDUMP
    madvise(d, sizeof *d, MADV_DONTDUMP);
#endif
    pthread_mutex_init(&d->lock, NULL);
    snprintf(d->dir, sizeof d->dir, "%s", dir);
    snprintf(d->server, sizeof d->server, "%s", server);
    snprintf(d->tenant, sizeof d->tenant, "%s", tenant != NULL ? tenant : "");
    snprintf(d->agent, sizeof d->agent, "%s", agent_id);
    snprintf(d->refresh, sizeof d->refresh, "%s", rt);
    /* a login that registers keys of its own says so by the alg of its last one */
    const char *alg =
        json_string_value(json_object_get(json_object_get(rec, "signing_key"), "alg"));
    d->own_keys = alg != NULL && strcmp(alg, "ed25519") == 0;
    jsonutil_wipe(rec);
    json_decref(rec);
    *out = d;
    return ROOST_OK;
}

/* One refresh: the next access token and refresh token, the latter saved before use. */
/* Another process of the same device (a command beside `agent run`) may have rotated the refresh
 * token since we read it: the store's is the live one, ours would be a replay. */
static void adopt_stored_refresh(struct roost_device *d)
{
    char *text = NULL;
    if (record_load(d->dir, d->agent, &text) != ROOST_OK) {
        return;
    }
    json_t *rec = json_loads(text, 0, NULL);
    OPENSSL_cleanse(text, strlen(text));
    free(text);
    const char *rt = json_string_value(json_object_get(rec, "refresh_token"));
    if (rt != NULL && rt[0] != '\0' && strlen(rt) < sizeof d->refresh) {
        snprintf(d->refresh, sizeof d->refresh, "%s", rt);
    }
    jsonutil_wipe(rec);
    json_decref(rec);
}

/* Takes the signing key of answer t: the HMAC secret it carries, or the Ed25519 private key made
 * for it (d->key_next, whose public half the request registered), which goes into t's
 * signing_key as private_key so that the store keeps it beside the refresh token. ROOST_EPROTO
 * when the answer does not fit the request. */
static int answer_key(struct roost_device *d, json_t *t, const char **key_id, json_int_t *key_ttl)
{
    json_t *key = json_object_get(t, "signing_key");
    const char *alg = json_string_value(json_object_get(key, "alg"));
    const char *secret = json_string_value(json_object_get(key, "secret"));
    *key_id = json_string_value(json_object_get(key, "key_id"));
    *key_ttl = json_integer_value(json_object_get(key, "expires_in"));
    if (!d->own_keys && secret == NULL) {
        *key_id = NULL; /* no key: requests go unsigned, as before */
        return ROOST_OK;
    }
    if (*key_id == NULL || strlen(*key_id) > ROOST_ID_MAX || alg == NULL ||
        strcmp(alg, d->own_keys ? "ed25519" : "hmac-sha256") != 0 ||
        (secret != NULL && strlen(secret) + 8 >= SECRET_MAX)) {
        return ROOST_EPROTO;
    }
    if (d->own_keys) {
        json_t *pem = json_string(d->key_next);
        return pem != NULL && json_object_set_new(key, "private_key", pem) == 0 ? ROOST_OK
                                                                                : ROOST_ENOMEM;
    }
    return ROOST_OK;
}

static int refresh_locked(struct roost_device *d)
{
    struct roost_client *c = NULL;
    int rc = roost_client_new(&c, d->server, NULL);
    if (rc != ROOST_OK) {
        return rc;
    }
    char pub[512];
    json_t *req = json_pack("{s:s, s:s, s:s}", "grant_type", "refresh_token", "refresh_token",
                            d->refresh, "client_id", d->agent);
    if (req != NULL && d->own_keys) {
        /* a new pair at every refresh (also one whose answer is lost and is sent again), its
         * public half registered by this same call */
        rc = roost_device_keygen(pub, sizeof pub, d->key_next, sizeof d->key_next);
        if (rc != ROOST_OK) {
            snprintf(d->error, sizeof d->error, "cannot make an Ed25519 key pair");
        } else if (json_object_set_new(req, "signing_public_key", json_string(pub)) != 0) {
            rc = ROOST_ENOMEM;
        }
    }
    char *body = req != NULL && rc == ROOST_OK ? json_dumps(req, JSON_COMPACT) : NULL;
    jsonutil_wipe(req);
    json_decref(req);
    char *resp = NULL;
    int status = 0;
    if (rc == ROOST_OK) {
        rc = body != NULL ? roost_client_request(c, "POST", "/oauth/token", body, &status, &resp)
                          : ROOST_ENOMEM;
    }
    if (body != NULL) {
        OPENSSL_cleanse(body, strlen(body));
        free(body);
    }
    if (rc != ROOST_OK) {
        if (status == 400) {
            d->refused = true;
            size_t n = 0;
            const char *eb = roost_client_last_body(c, &n);
            json_t *e = eb != NULL ? json_loadb(eb, n, 0, NULL) : NULL;
            snprintf(d->error, sizeof d->error, "%s: %s",
                     e ? json_string_value(json_object_get(e, "error")) : "refused",
                     e ? json_string_value(json_object_get(e, "error_description")) : "");
            json_decref(e);
            rc = ROOST_EUNAUTHENTICATED;
        }
        roost_client_free(c);
        OPENSSL_cleanse(d->key_next, sizeof d->key_next);
        return rc;
    }
    roost_client_free(c);
    json_t *t = json_loads(resp, 0, NULL);
    OPENSSL_cleanse(resp, strlen(resp));
    roost_free(resp);
    const char *at = json_string_value(json_object_get(t, "access_token"));
    const char *rt = json_string_value(json_object_get(t, "refresh_token"));
    json_int_t ttl = json_integer_value(json_object_get(t, "expires_in"));
    const char *key_id = NULL;
    json_int_t key_ttl = 0;
    char err[256] = "";
    if (at == NULL || rt == NULL || strlen(at) >= SECRET_MAX || strlen(rt) >= SECRET_MAX) {
        rc = ROOST_EPROTO;
    } else if ((rc = answer_key(d, t, &key_id, &key_ttl)) != ROOST_OK) {
        snprintf(err, sizeof err, "roostd answered with an unexpected signing key");
    } else if ((rc = save_answer(d->dir, d->server, t, err, sizeof err)) == ROOST_OK) {
        snprintf(d->refresh, sizeof d->refresh, "%s", rt);
        snprintf(d->access, sizeof d->access, "%s", at);
        d->access_ttl = ttl > 0 ? (int64_t)ttl : 60;
        d->access_exp = (int64_t)time(NULL) + d->access_ttl;
        if (key_id != NULL) {
            if (d->own_keys) {
                snprintf(d->key_secret, sizeof d->key_secret, "%s", d->key_next);
            } else {
                snprintf(d->key_secret, sizeof d->key_secret, "base64:%s",
                         json_string_value(
                             json_object_get(json_object_get(t, "signing_key"), "secret")));
            }
            snprintf(d->key_id, sizeof d->key_id, "%s", key_id);
            d->key_gen++;
            d->key_ttl = key_ttl > 0 ? (int64_t)key_ttl : 60;
            d->key_exp = (int64_t)time(NULL) + d->key_ttl;
        }
        d->error[0] = '\0';
    }
    if (rc != ROOST_OK && err[0] != '\0') {
        snprintf(d->error, sizeof d->error, "%s", err);
    }
    OPENSSL_cleanse(d->key_next, sizeof d->key_next);
    jsonutil_wipe(t);
    json_decref(t);
    return rc;
}

/* One refresh at a time per device across processes (agent run and a command beside it): each
 * reads the token the other saved, so neither presents a used one (a replay, once the reuse
 * interval has passed). An advisory lock on device-<agent>.lock beside the record; without it
 * (read-only directory) the refresh goes on unlocked. */
static int refresh(struct roost_device *d)
{
    char path[sizeof d->dir + ROOST_ID_MAX + 16];
    snprintf(path, sizeof path, "%s/device-%s.lock", d->dir, d->agent);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0) {
        while (flock(fd, LOCK_EX) != 0 && errno == EINTR) {
        }
    }
    adopt_stored_refresh(d);
    int rc = refresh_locked(d);
    if (fd >= 0) {
        close(fd); /* releases the lock */
    }
    return rc;
}

int roost_device_token(void *arg, char *buf, size_t cap)
{
    struct roost_device *d = arg;
    pthread_mutex_lock(&d->lock);
    int rc = ROOST_OK;
    int64_t now = (int64_t)time(NULL);
    /* Refreshed once a third of its life is left (at least 1 s): a request never carries one
     * about to expire. */
    int64_t margin = d->access_ttl / 3 > 1 ? d->access_ttl / 3 : 1;
    int64_t key_margin = d->key_ttl / 3 > 1 ? d->key_ttl / 3 : 1;
    if (d->refused) { /* asked once: the device is revoked, or its token was reused elsewhere */
        rc = ROOST_EUNAUTHENTICATED;
    } else if (d->access[0] == '\0' || now + margin >= d->access_exp ||
               (d->key_gen != 0 && now + key_margin >= d->key_exp)) {
        rc = refresh(d);
    }
    if (rc == ROOST_OK) {
        rc = strlen(d->access) < cap ? ROOST_OK : ROOST_EINVAL;
        if (rc == ROOST_OK) {
            memcpy(buf, d->access, strlen(d->access) + 1);
        }
    }
    pthread_mutex_unlock(&d->lock);
    return rc;
}

int roost_device_signing_key(void *arg, uint64_t *gen, char *key, size_t key_cap, char *key_id,
                             size_t id_cap, char *alg, size_t alg_cap)
{
    struct roost_device *d = arg;
    pthread_mutex_lock(&d->lock);
    int rc = ROOST_OK;
    const char *name = d->own_keys ? "ed25519" : "hmac-sha256";
    if (d->key_gen != 0 && d->key_gen != *gen) {
        if (strlen(d->key_secret) < key_cap && strlen(d->key_id) < id_cap &&
            strlen(name) < alg_cap) {
            memcpy(key, d->key_secret, strlen(d->key_secret) + 1);
            memcpy(key_id, d->key_id, strlen(d->key_id) + 1);
            memcpy(alg, name, strlen(name) + 1);
            *gen = d->key_gen;
        } else {
            rc = ROOST_EINVAL;
        }
    }
    pthread_mutex_unlock(&d->lock);
    return rc;
}

const char *roost_device_error(const struct roost_device *d)
{
    return d->error;
}

const char *roost_device_server(const struct roost_device *d)
{
    return d->server;
}

const char *roost_device_agent(const struct roost_device *d)
{
    return d->agent;
}

void roost_device_free(struct roost_device *d)
{
    if (d != NULL) {
        pthread_mutex_destroy(&d->lock);
        OPENSSL_cleanse(d, sizeof *d);
        munmap(d, sizeof *d);
    }
}
