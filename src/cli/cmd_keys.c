/* SPDX-License-Identifier: MIT */
/* `roost keys add / list / revoke`: the tenant's request-signing keys (token scope
 * tenant:admin); `roost keys generate`: a new key pair (or hmac secret) in local files. */
#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/base64.h"

#include "common/banned.h"

/* The server takes at most 16 KiB of key text; a little more lets it say so itself. */
#define KEYS_MAX_MATERIAL_BYTES ((size_t)32 * 1024)

/* Prints a JSON text result and frees it. */
static int print_result(const struct cli_args *a, char *json)
{
    int r = cli_print_json(a, json, strlen(json));
    roost_free(json);
    return r;
}

int cmd_keys_add(struct cli_args *a)
{
    const char *pub_file = cli_str(a, "public-key-file"), *secret_file = cli_str(a, "secret-file");
    if ((pub_file == NULL) == (secret_file == NULL)) {
        return cli_usage_error(a, "give exactly one of --public-key-file and --secret-file");
    }
    int r;
    char *material = NULL;
    size_t len = 0;
    char err[512];
    if (cli_read_file(pub_file != NULL ? pub_file : secret_file, KEYS_MAX_MATERIAL_BYTES, &material,
                      &len, err, sizeof err) != 0) {
        fprintf(stderr, "roost: keys add: %s\n", err);
        return CLI_EXIT_USAGE;
    }
    if (secret_file != NULL) {
        /* A secret file written by echo ends with a newline: not part of the base64. */
        while (len > 0 && (material[len - 1] == '\n' || material[len - 1] == '\r' ||
                           material[len - 1] == ' ' || material[len - 1] == '\t')) {
            material[--len] = '\0';
        }
    }
    struct roost_client *c = NULL;
    if ((r = cli_connect(a, &c)) != CLI_EXIT_OK) {
        free(material);
        return r;
    }
    char *json = NULL;
    int rc = roost_admin_key_add(c, cli_str(a, "key-id"), cli_str(a, "agent"), cli_str(a, "alg"),
                                 pub_file != NULL ? material : NULL,
                                 secret_file != NULL ? material : NULL, &json);
    free(material);
    r = rc == ROOST_OK ? print_result(a, json) : cli_fail(a, c, rc, "keys add");
    roost_client_free(c);
    return r;
}

int cmd_keys_list(struct cli_args *a)
{
    int r;
    struct roost_client *c = NULL;
    if ((r = cli_connect(a, &c)) != CLI_EXIT_OK) {
        return r;
    }
    char *json = NULL;
    int rc = roost_admin_keys_list(c, (int)cli_num(a, "limit", 0), cli_str(a, "next"), &json);
    static const char *const columns[] = {"key_id",     "agent_id",   "alg",
                                          "created_at", "revoked_at", NULL};
    if (rc == ROOST_OK) {
        r = cli_output_table(a) ? cli_print_table(a, json, strlen(json), "keys", columns)
                                : cli_print_json(a, json, strlen(json));
        roost_free(json);
    } else {
        r = cli_fail(a, c, rc, "keys list");
    }
    roost_client_free(c);
    return r;
}

int cmd_keys_revoke(struct cli_args *a)
{
    const char *key_id = a->argv[0];
    int r;
    struct roost_client *c = NULL;
    if ((r = cli_connect(a, &c)) != CLI_EXIT_OK) {
        return r;
    }
    char *json = NULL;
    int rc = roost_admin_key_revoke(c, key_id, &json);
    char what[200];
    snprintf(what, sizeof what, "keys revoke %.150s", key_id);
    r = rc == ROOST_OK ? print_result(a, json) : cli_fail(a, c, rc, what);
    roost_client_free(c);
    return r;
}

/* Writes `len` bytes to a new file (never over an existing one) with `mode`. 0 or -1 (errno). */
static int write_new_file(const char *path, const void *data, size_t len, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0) {
        return -1;
    }
    ssize_t n = write(fd, data, len);
    int saved = errno;
    if (close(fd) != 0 || n != (ssize_t)len) {
        errno = n != (ssize_t)len ? saved : errno;
        unlink(path);
        return -1;
    }
    return 0;
}

/* The PEM text of a key's private (pub false) or public half, in a BIO-owned buffer copied to
 * *out (caller frees). 0 or -1. */
static int key_pem(EVP_PKEY *pkey, bool pub, char **out, size_t *len)
{
    BIO *bio = BIO_new(BIO_s_mem());
    int ok = bio != NULL && (pub ? PEM_write_bio_PUBKEY(bio, pkey)
                                 : PEM_write_bio_PrivateKey(bio, pkey, NULL, NULL, 0, NULL, NULL));
    char *data = NULL;
    long n = ok ? BIO_get_mem_data(bio, &data) : 0;
    *out = n > 0 ? malloc((size_t)n) : NULL;
    if (*out != NULL) {
        memcpy(*out, data, (size_t)n);
        *len = (size_t)n;
    }
    if (data != NULL && n > 0) {
        OPENSSL_cleanse(data, (size_t)n);
    }
    BIO_free(bio);
    return *out != NULL ? 0 : -1;
}

int cmd_keys_generate(struct cli_args *a)
{
    const char *alg = cli_str(a, "alg") != NULL ? cli_str(a, "alg") : "ed25519";
    const char *out = cli_str(a, "out");
    char pub_path[4200];
    snprintf(pub_path, sizeof pub_path, "%s.pub", out);
    bool hmac = strcmp(alg, "hmac-sha256") == 0;
    char *priv = NULL, *pub = NULL;
    size_t priv_len = 0, pub_len = 0;
    EVP_PKEY *pkey = NULL;
    int r = CLI_EXIT_ERROR;
    if (hmac) {
        unsigned char secret[32];
        if (RAND_bytes(secret, sizeof secret) != 1 ||
            b64_encode(B64_STD, secret, sizeof secret, &priv, &priv_len) != 0) {
            OPENSSL_cleanse(secret, sizeof secret);
            fprintf(stderr, "roost: keys generate: cannot make a secret\n");
            goto out;
        }
        OPENSSL_cleanse(secret, sizeof secret);
        priv[priv_len++] = '\n'; /* b64_encode's NUL becomes the line end */
    } else {
        if (strcmp(alg, "ed25519") == 0) {
            pkey = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
        } else if (strcmp(alg, "ecdsa-p256-sha256") == 0) {
            pkey = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
        } else {
            pkey = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)3072);
        }
        if (pkey == NULL || key_pem(pkey, false, &priv, &priv_len) != 0 ||
            key_pem(pkey, true, &pub, &pub_len) != 0) {
            fprintf(stderr, "roost: keys generate: cannot make a %s key\n", alg);
            goto out;
        }
    }
    if (write_new_file(out, priv, priv_len, 0600) != 0) {
        fprintf(stderr, "roost: keys generate: cannot create %s: %s\n", out, strerror(errno));
        goto out;
    }
    if (!hmac && write_new_file(pub_path, pub, pub_len, 0644) != 0) {
        fprintf(stderr, "roost: keys generate: cannot create %s: %s\n", pub_path, strerror(errno));
        unlink(out);
        goto out;
    }
    printf("wrote %s (private, mode 0600)%s%s\n"
           "next, register it (token scope tenant:admin):\n"
           "  roost keys add --key-id KEY_ID --agent AGENT --alg %s %s %s\n"
           "then sign with it: --key-file %s --key-id KEY_ID%s%s\n",
           out, hmac ? "" : " and ", hmac ? "" : pub_path, alg,
           hmac ? "--secret-file" : "--public-key-file", hmac ? out : pub_path, out,
           hmac ? " --key-alg " : "", hmac ? alg : "");
    r = CLI_EXIT_OK;
out:
    if (priv != NULL) {
        OPENSSL_cleanse(priv, priv_len);
    }
    free(priv);
    free(pub);
    EVP_PKEY_free(pkey);
    return r;
}
