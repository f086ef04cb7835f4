/* SPDX-License-Identifier: MIT */
/* The integration-test harness (see harness.h): the real roostd as a child process, tokens signed
 * with its key, a libcurl client and a raw-socket client with a tiny HTTP/1.1 response parser. */
#include "harness/harness.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/dynbuf.h"
#include "common/fsutil.h"
#include "common/limits.h"
#include "common/strutil.h"
#include "mysql/mysql_testutil.h"
#include "proto/jwt.h"

#include "common/banned.h"

/* ---- basics ---- */

/* ROOST_TEST_PATIENCE, read by h_init() before any test thread starts. */
static int patience_factor = 6;

void h_init(void)
{
    const char *patience = getenv("ROOST_TEST_PATIENCE");
    char *end = NULL;
    long factor = patience != NULL ? strtol(patience, &end, 10) : 0;
    if (patience != NULL && end != patience && *end == '\0' && factor >= 1 && factor <= 100) {
        patience_factor = (int)factor;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGPIPE, SIG_IGN);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "curl_global_init failed\n");
        exit(2);
    }
}

int h_summary(void)
{
    curl_global_cleanup();
    return check_summary();
}

int64_t h_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t h_patience(int64_t timeout_ms)
{
    return timeout_ms * patience_factor;
}

void h_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

char *h_fmt(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (!s) {
        fprintf(stderr, "h_fmt: out of memory\n");
        abort();
    }
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

int h_read_file(const char *path, char **data, size_t *len)
{
    return fsutil_read_bounded(path, H_READ_FILE_MAX_BYTES, data, len);
}

/* Responses and raw exchanges are buffered in a dynbuf of at most this size. */
#define H_BUF_MAX_BYTES (64u << 20)

/* ---- HTTP client ---- */

struct h_client {
    CURL *curl;
    char base[128];
};

struct h_client *h_client_new(const char *base_url)
{
    struct h_client *c = calloc(1, sizeof *c);
    if (!c) {
        return NULL;
    }
    c->curl = curl_easy_init();
    if (!c->curl) {
        free(c);
        return NULL;
    }
    snprintf(c->base, sizeof c->base, "%s", base_url);
    return c;
}

void h_client_free(struct h_client *c)
{
    if (c) {
        curl_easy_cleanup(c->curl);
        free(c);
    }
}

void h_response_cleanup(struct h_response *r)
{
    json_decref(r->json);
    free(r->body);
    free(r->headers);
    memset(r, 0, sizeof *r);
}

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *arg)
{
    struct dynbuf *b = arg;
    dynbuf_add(b, ptr, size * nmemb);
    return b->err == DYNBUF_OK ? size * nmemb : 0;
}

int h_request(struct h_client *c, const char *method, const char *path, const char *token,
              const char *body, size_t body_len, const struct h_req_opts *opts,
              struct h_response *out)
{
    static const struct h_req_opts no_opts = {0};
    struct dynbuf resp = {.max = H_BUF_MAX_BYTES}, hdrs = {.max = H_BUF_MAX_BYTES};
    struct curl_slist *list = NULL;
    char *url = h_fmt("%s%s", c->base, path);
    char *authz = token ? h_fmt("Authorization: Bearer %s", token) : NULL;
    char *ctype = NULL;
    int rc = -1;

    if (!opts) {
        opts = &no_opts;
    }
    memset(out, 0, sizeof *out);
    out->status = -1;
    curl_easy_reset(c->curl);
    curl_easy_setopt(c->curl, CURLOPT_URL, url);
    curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, opts->timeout_ms ? opts->timeout_ms : 30000L);
    curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &resp);
    curl_easy_setopt(c->curl, CURLOPT_HEADERFUNCTION, on_data);
    curl_easy_setopt(c->curl, CURLOPT_HEADERDATA, &hdrs);
    /* No "Expect: 100-continue" unless a test asks for it (extra_header "Expect: …"). */
    if (!opts->extra_header || strncasecmp(opts->extra_header, "Expect:", 7) != 0) {
        list = curl_slist_append(list, "Expect:");
    }
    if (authz) {
        list = curl_slist_append(list, authz);
    }
    if (body) {
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body);
        const char *ct = opts->content_type ? opts->content_type : "application/json";
        ctype = h_fmt("Content-Type:%s%s", ct[0] ? " " : "", ct);
        list = curl_slist_append(list, ctype);
    }
    if (opts->extra_header) {
        list = curl_slist_append(list, opts->extra_header);
    }
    for (const char *const *h = opts->headers; h != NULL && *h != NULL; h++) {
        list = curl_slist_append(list, *h);
    }
    curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, method);
    if (strcmp(method, "GET") == 0 && !body) {
        curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
    }
    int64_t start = h_now_ms();
    CURLcode cc = curl_easy_perform(c->curl);
    out->elapsed_ms = h_now_ms() - start;
    if (cc == CURLE_OK) {
        curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &out->status);
        rc = 0;
    } else if (getenv("ROOST_TEST_VERBOSE")) {
        fprintf(stderr, "curl %s %s: %s\n", method, path, curl_easy_strerror(cc));
    }
    dynbuf_add(&resp, "", 0);
    dynbuf_add(&hdrs, "", 0);
    out->body = resp.s;
    out->body_len = resp.len;
    out->headers = hdrs.s;
    if (out->body && out->body_len) {
        out->json = json_loadb(out->body, out->body_len, 0, NULL);
    }
    curl_slist_free_all(list);
    free(ctype);
    free(authz);
    free(url);
    return rc;
}

int http_request(struct h_client *c, const char *method, const char *path, const char *token,
                 const char *body, long *status, json_t **json_out)
{
    struct h_response r;
    int rc = h_request(c, method, path, token, body, body ? strlen(body) : 0, NULL, &r);
    if (status) {
        *status = r.status;
    }
    if (json_out) {
        *json_out = r.json;
        r.json = NULL;
    }
    h_response_cleanup(&r);
    return rc;
}

const char *h_header(const struct h_response *r, const char *name, char *buf, size_t len)
{
    size_t nlen = strlen(name);
    const char *p = r->headers;
    while (p && *p) {
        const char *eol = strchr(p, '\n');
        size_t line_len = eol ? (size_t)(eol - p) : strlen(p);
        if (line_len > nlen && strncasecmp(p, name, nlen) == 0 && p[nlen] == ':') {
            const char *v = p + nlen + 1;
            const char *end = p + line_len;
            while (v < end && (*v == ' ' || *v == '\t')) {
                v++;
            }
            while (end > v && (end[-1] == '\r' || end[-1] == ' ')) {
                end--;
            }
            snprintf(buf, len, "%.*s", (int)(end - v), v);
            return buf;
        }
        p = eol ? eol + 1 : NULL;
    }
    return NULL;
}

const char *h_error_code(const json_t *j)
{
    return json_string_value(json_object_get(json_object_get(j, "error"), "code"));
}

/* ---- the daemon ---- */

static void free_key(struct roostd *d)
{
    EVP_PKEY_free(d->key);
    d->key = NULL;
}

void roostd_print_log(const struct roostd *d)
{
    char *path = h_fmt("%s/roostd.log", d->dir);
    char *data = NULL;
    size_t len = 0;
    if (h_read_file(path, &data, &len) == 0) {
        size_t from = len > 6000 ? len - 6000 : 0;
        fprintf(stderr, "---- roostd log (%s, last %zu bytes) ----\n%s\n----\n", path, len - from,
                data + from);
    }
    free(data);
    free(path);
}

bool roostd_alive(struct roostd *d)
{
    if (d->pid <= 0) {
        return false;
    }
    int st;
    pid_t r = waitpid(d->pid, &st, WNOHANG);
    if (r == d->pid) {
        d->pid = 0;
        return false;
    }
    return true;
}

/* MariaDB mode (ROOST_TEST_MYSQL_URL names the private server of the ctest fixture: the second
 * run of every integration test): each new data dir gets a fresh database, remembered in
 * DIR/store_url so that a restart on the same dir finds its data again. 0, or -1. */
static int mysql_store_for(const char *dir, char *url, size_t cap)
{
    const char *base = getenv("ROOST_TEST_MYSQL_URL");
    char *path = h_fmt("%s/store_url", dir), *known = NULL;
    size_t len = 0;
    int rc = -1;
    if (h_read_file(path, &known, &len) == 0) {
        known[strcspn(known, "\r\n")] = '\0';
        snprintf(url, cap, "%s", known);
        rc = 0;
    } else if (mysql_testutil_fresh_db(base, "it", url, cap) == 0) {
        char *line = h_fmt("%s\n", url);
        rc = fsutil_write_atomic(path, line, strlen(line), 0600);
        free(line);
    }
    free(known);
    free(path);
    return rc;
}

const char *roostd_store_url(const struct roostd *d)
{
    return d->store_url[0] ? d->store_url : NULL;
}

int roostd_start(struct roostd *d, const char *data_dir, const char *const *sets)
{
    struct roostd fresh = {0};
    if (data_dir) {
        snprintf(fresh.dir, sizeof fresh.dir, "%s", data_dir);
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(fresh.dir, sizeof fresh.dir, "%s/roost-it-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(fresh.dir)) {
            fprintf(stderr, "mkdtemp %s: %s\n", fresh.dir, strerror(errno));
            return -1;
        }
    }
    if (getenv("ROOST_TEST_MYSQL_URL") != NULL &&
        mysql_store_for(fresh.dir, fresh.store_url, sizeof fresh.store_url) != 0) {
        fprintf(stderr, "cannot create a MariaDB database for %s\n", fresh.dir);
        return -1;
    }
    *d = fresh;
    char *ready = h_fmt("%s/ready", d->dir);
    char *log_path = h_fmt("%s/roostd.log", d->dir);
    char *key_path = h_fmt("%s/" ROOST_TOKEN_KEY_FILE, d->dir);
    unlink(ready);

    size_t n_sets = 0;
    while (sets && sets[n_sets]) {
        n_sets++;
    }
    const char **argv = calloc(10 + 2 * n_sets + 1, sizeof *argv);
    if (!argv) {
        abort();
    }
    size_t a = 0;
    argv[a++] = ROOSTD_BIN;
    argv[a++] = "--data-dir";
    argv[a++] = d->dir;
    argv[a++] = "--listen";
    argv[a++] = "127.0.0.1:0";
    argv[a++] = "--ready-file";
    argv[a++] = ready;
    if (d->store_url[0]) {
        argv[a++] = "--store";
        argv[a++] = d->store_url;
    }
    for (size_t i = 0; i < n_sets; i++) {
        /* An entry that is itself an option ("--config=FILE") is passed as it is. */
        if (strncmp(sets[i], "--", 2) != 0) {
            argv[a++] = "--set";
        }
        argv[a++] = sets[i];
    }
    argv[a] = NULL;

    int rc = -1;
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "fork: %s\n", strerror(errno));
        goto out;
    }
    if (pid == 0) {
        int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execv(ROOSTD_BIN, (char *const *)argv);
        _exit(127);
    }
    d->pid = pid;

    /* Poll for the ready file (written with rename, so complete once it exists). */
    int64_t deadline = h_now_ms() + h_patience(15000);
    char *url = NULL;
    size_t url_len = 0;
    for (;;) {
        if (!roostd_alive(d)) {
            fprintf(stderr, "roostd exited before it was ready\n");
            roostd_print_log(d);
            goto out;
        }
        if (access(ready, F_OK) == 0 && h_read_file(ready, &url, &url_len) == 0) {
            break;
        }
        if (h_now_ms() > deadline) {
            fprintf(stderr, "roostd not ready within %lld s\n", (long long)h_patience(15));
            roostd_print_log(d);
            kill(d->pid, SIGKILL);
            waitpid(d->pid, NULL, 0);
            d->pid = 0;
            goto out;
        }
        h_sleep_ms(5);
    }
    url[strcspn(url, "\r\n")] = '\0';
    snprintf(d->url, sizeof d->url, "%s", url);
    free(url);
    const char *hostp = strncmp(d->url, "http://", 7) == 0 ? d->url + 7 : d->url;
    const char *colon = strrchr(hostp, ':');
    if (!colon) {
        fprintf(stderr, "bad ready URL '%s'\n", d->url);
        goto out;
    }
    snprintf(d->host, sizeof d->host, "%.*s", (int)(colon - hostp), hostp);
    int64_t port = 0;
    if (strutil_parse_i64(colon + 1, strlen(colon + 1), 1, 65535, &port) != 0) {
        fprintf(stderr, "bad ready URL '%s'\n", d->url);
        goto out;
    }
    d->port = (int)port;

    FILE *kf = fopen(key_path, "r");
    d->key = kf ? PEM_read_PrivateKey(kf, NULL, NULL, NULL) : NULL;
    if (kf) {
        fclose(kf);
    }
    if (!d->key) {
        fprintf(stderr, "cannot read roostd's key %s\n", key_path);
        goto out;
    }
    d->http = h_client_new(d->url);
    rc = d->http ? 0 : -1;
out:
    if (rc != 0 && !data_dir) {
        roostd_kill(d);
        roostd_remove_dir(d); /* the log was printed above */
    }
    free(argv);
    free(ready);
    free(log_path);
    free(key_path);
    return rc;
}

static void release_clients(struct roostd *d)
{
    h_client_free(d->http);
    d->http = NULL;
    free_key(d);
}

int roostd_stop(struct roostd *d)
{
    release_clients(d);
    if (d->pid <= 0) {
        return -1;
    }
    kill(d->pid, SIGTERM);
    int64_t deadline = h_now_ms() + h_patience(20000);
    int st = 0;
    for (;;) {
        pid_t r = waitpid(d->pid, &st, WNOHANG);
        if (r == d->pid) {
            break;
        }
        if (h_now_ms() > deadline) {
            fprintf(stderr, "roostd did not exit within %lld s of SIGTERM\n",
                    (long long)h_patience(20));
            roostd_print_log(d);
            kill(d->pid, SIGKILL);
            waitpid(d->pid, NULL, 0);
            d->pid = 0;
            return -1;
        }
        h_sleep_ms(5);
    }
    d->pid = 0;
    if (WIFEXITED(st)) {
        if (WEXITSTATUS(st) != 0) {
            roostd_print_log(d);
        }
        return WEXITSTATUS(st);
    }
    fprintf(stderr, "roostd died of signal %d\n", WIFSIGNALED(st) ? WTERMSIG(st) : -1);
    roostd_print_log(d);
    return -1;
}

bool roostd_start_checked(struct roostd *d, const char *data_dir, const char *const *sets)
{
    if (roostd_start(d, data_dir, sets) != 0) {
        check_fail(__FILE__, __LINE__, "CHECK failed: roostd started");
        return false;
    }
    return true;
}

void roostd_finish(struct roostd *d)
{
    CHECK_EQ(roostd_stop(d), 0);
    roostd_remove_dir(d);
}

void roostd_kill(struct roostd *d)
{
    release_clients(d);
    if (d->pid > 0) {
        kill(d->pid, SIGKILL);
        waitpid(d->pid, NULL, 0);
        d->pid = 0;
    }
}

/* rm -rf without following symlinks. */
static void remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) {
        return;
    }
    if (S_ISDIR(st.st_mode)) {
        DIR *dir = opendir(path);
        struct dirent *de;
        while (dir && (de = readdir(dir)) != NULL) {
            if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
                char *child = h_fmt("%s/%s", path, de->d_name);
                remove_tree(child);
                free(child);
            }
        }
        if (dir) {
            closedir(dir);
        }
        rmdir(path);
    } else {
        unlink(path);
    }
}

void roostd_remove_dir(struct roostd *d)
{
    if (d->dir[0] && getenv("ROOST_TEST_KEEP") == NULL) {
        remove_tree(d->dir);
        if (d->store_url[0]) {
            mysql_testutil_drop_db(d->store_url);
        }
    }
}

char *h_token_claims(const struct roostd *d, const json_t *claims)
{
    char *tok = NULL;
    if (jwt_sign_eddsa(claims, d->key, NULL, &tok) != 0) {
        fprintf(stderr, "jwt_sign_eddsa failed\n");
        abort();
    }
    return tok;
}

char *h_token(const struct roostd *d, const char *tenant, const char *scope)
{
    json_int_t now = (json_int_t)time(NULL);
    json_t *claims = json_pack("{s:s, s:s, s:s, s:I, s:I}", "tenant", tenant, "sub", "test",
                               "scope", scope, "iat", now, "exp", now + 3600);
    char *tok = h_token_claims(d, claims);
    json_decref(claims);
    return tok;
}

/* ---- raw sockets ---- */

static const char *find_crlfcrlf(const char *p, size_t len)
{
    for (size_t i = 0; i + 3 < len; i++) {
        if (p[i] == '\r' && p[i + 1] == '\n' && p[i + 2] == '\r' && p[i + 3] == '\n') {
            return p + i;
        }
    }
    return NULL;
}

/* Parses complete responses from buf; returns how many, their statuses in `status`. A response
 * without Content-Length or chunked framing is complete only at close (`closed`). */
static int parse_responses(const char *buf, size_t len, bool closed, int *status, int max)
{
    size_t pos = 0;
    int n = 0;
    while (pos < len && n < max) {
        const char *p = buf + pos;
        size_t left = len - pos;
        if (left < 12 || memcmp(p, "HTTP/1.", 7) != 0) {
            break;
        }
        const char *hend = find_crlfcrlf(p, left);
        if (!hend) {
            break;
        }
        int st = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
        size_t head_len = (size_t)(hend - p) + 4;
        long long cl = -1;
        bool chunked = false;
        for (const char *line = p; line < hend;) {
            const char *eol = memchr(line, '\n', (size_t)(hend - line) + 1);
            size_t ll = eol ? (size_t)(eol - line) : (size_t)(hend - line);
            if (ll > 15 && strncasecmp(line, "Content-Length:", 15) == 0) {
                cl = strtoll(line + 15, NULL, 10);
            } else if (ll > 18 && strncasecmp(line, "Transfer-Encoding:", 18) == 0 &&
                       strstr(line, "chunked") && strstr(line, "chunked") < line + ll) {
                chunked = true;
            }
            line = eol ? eol + 1 : hend;
        }
        size_t body_end;
        if (st < 200 || st == 204 || st == 304) {
            body_end = head_len;
        } else if (chunked) {
            size_t q = head_len;
            bool done = false;
            while (q < left) {
                const char *eol = memchr(p + q, '\n', left - q);
                if (!eol) {
                    break;
                }
                long long sz = strtoll(p + q, NULL, 16);
                q = (size_t)(eol - p) + 1;
                if (sz == 0) {
                    /* trailer section: up to an empty line */
                    const char *e2 = memchr(p + q, '\n', left - q);
                    if (e2) {
                        q = (size_t)(e2 - p) + 1;
                        done = true;
                    }
                    break;
                }
                q += (size_t)sz + 2;
            }
            if (!done || q > left) {
                break;
            }
            body_end = q;
        } else if (cl >= 0) {
            if (head_len + (size_t)cl > left) {
                break;
            }
            body_end = head_len + (size_t)cl;
        } else {
            if (!closed) {
                break;
            }
            body_end = left;
        }
        status[n++] = st;
        pos += body_end;
    }
    return n;
}

int raw_exchange(const struct roostd *d, const void *req, size_t len, int want_responses,
                 int timeout_ms, struct raw_reply *out)
{
    memset(out, 0, sizeof *out);
    struct dynbuf in = {.max = H_BUF_MAX_BYTES};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)d->port)};
    inet_pton(AF_INET, d->host, &sa.sin_addr);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        fprintf(stderr, "raw connect to %s:%d: %s\n", d->host, d->port, strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    size_t sent = 0;
    bool send_open = true;
    int64_t deadline = h_now_ms() + timeout_ms;
    dynbuf_add(&in, "", 0);
    for (;;) {
        int64_t left = deadline - h_now_ms();
        if (left <= 0) {
            out->timed_out = true;
            break;
        }
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (send_open && sent < len) {
            pfd.events |= POLLOUT;
        }
        int pr = poll(&pfd, 1, (int)(left > 50 ? 50 : left));
        if (pr < 0 && errno != EINTR) {
            break;
        }
        if (pr <= 0) {
            continue;
        }
        if ((pfd.revents & POLLOUT) && send_open && sent < len) {
            ssize_t w = send(fd, (const char *)req + sent, len - sent, MSG_NOSIGNAL);
            if (w > 0) {
                sent += (size_t)w;
            } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
                send_open = false; /* the server stopped reading: now see what it said */
            }
        }
        if (pfd.revents & (POLLIN | POLLHUP | POLLERR)) {
            char chunk[16384];
            ssize_t r = recv(fd, chunk, sizeof chunk, 0);
            if (r > 0) {
                dynbuf_add(&in, chunk, (size_t)r);
            } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
                out->closed = true;
                break;
            }
            out->n_responses = parse_responses(in.s, in.len, false, out->status, RAW_MAX_RESPONSES);
            if (want_responses > 0 && out->n_responses >= want_responses) {
                break;
            }
        }
    }
    close(fd);
    out->buf = in.s;
    out->len = in.len;
    out->n_responses = parse_responses(in.s, in.len, out->closed, out->status, RAW_MAX_RESPONSES);
    return 0;
}

void raw_reply_cleanup(struct raw_reply *r)
{
    free(r->buf);
    memset(r, 0, sizeof *r);
}

char *raw_insert_header(const char *req, size_t len, const char *header_line, size_t *out_len)
{
    const char *nl = memchr(req, '\n', len);
    size_t first = nl ? (size_t)(nl - req) + 1 : len;
    bool crlf = nl && nl > req && nl[-1] == '\r';
    size_t hl = strlen(header_line);
    size_t n = len + hl + (crlf ? 2 : 1);
    char *out = malloc(n + 1);
    if (!out) {
        abort();
    }
    memcpy(out, req, first);
    memcpy(out + first, header_line, hl);
    memcpy(out + first + hl, crlf ? "\r\n" : "\n", crlf ? 2 : 1);
    memcpy(out + first + hl + (crlf ? 2 : 1), req + first, len - first);
    out[n] = '\0';
    *out_len = n;
    return out;
}

int roostd_log_count(const struct roostd *d, const char *needle)
{
    char *path = h_fmt("%s/roostd.log", d->dir), *data = NULL;
    size_t len = 0;
    int n = 0;
    if (h_read_file(path, &data, &len) == 0) {
        for (const char *p = data; (p = strstr(p, needle)) != NULL; p++) {
            n++;
        }
    }
    free(data);
    free(path);
    return n;
}

bool roostd_hup_and_wait(const struct roostd *d, const char *needle)
{
    int before = roostd_log_count(d, needle);
    if (kill(d->pid, SIGHUP) != 0) {
        return false;
    }
    bool ok;
    H_WAIT_UNTIL(ok, 10000, roostd_log_count(d, needle) > before);
    return ok;
}
