/* SPDX-License-Identifier: MIT */
/* Unit tests of src/server/ssrf.c: every row of tests/data/ssrf/ip-cases.tsv (copied from the
 * shared SSRF vectors) gets the table's answer, and webhooks.allow_cidrs opens exactly the ranges
 * it names. */
#include <stdio.h>
#include <string.h>

#include "harness/check.h"
#include "server/ssrf.h"

#include "common/banned.h"

static void test_ssrf_ip_cases_table(void)
{
    FILE *fp = fopen("data/ssrf/ip-cases.tsv", "r");
    CHECK(fp != NULL);
    if (fp == NULL) {
        return;
    }
    struct ssrf_filter none;
    char err[128];
    CHECK_EQ(ssrf_filter_parse(&none, NULL, err, sizeof err), 0);
    char line[512];
    int rows = 0;
    while (fgets(line, sizeof line, fp) != NULL) {
        if (line[0] == '#' || line[0] == '\n') {
            continue;
        }
        char *tab = strchr(line, '\t');
        CHECK(tab != NULL);
        if (tab == NULL) {
            continue;
        }
        *tab = '\0';
        bool want_block = strncmp(tab + 1, "block", 5) == 0;
        const char *rule = NULL;
        bool allowed = ssrf_allowed_text(&none, line, &rule);
        if (allowed == want_block) {
            fprintf(stderr, "  %s: expected %s, got %s (%s)\n", line,
                    want_block ? "block" : "allow", allowed ? "allow" : "block", rule);
        }
        CHECK(allowed != want_block);
        rows++;
    }
    fclose(fp);
    CHECK_EQ(rows, 57);
}

static void test_ssrf_allow_cidrs(void)
{
    struct ssrf_filter f;
    char err[128];
    CHECK_EQ(ssrf_filter_parse(&f, "127.0.0.0/8, ::1 10.1.0.0/16", err, sizeof err), 0);
    CHECK_EQ(f.n_allow, 3);
    const char *rule = NULL;
    CHECK(ssrf_allowed_text(&f, "127.0.0.1", &rule));
    CHECK(strcmp(rule, "allow_cidrs") == 0);
    CHECK(ssrf_allowed_text(&f, "::1", NULL));
    CHECK(ssrf_allowed_text(&f, "::ffff:127.0.0.1", NULL)); /* mapped: judged as IPv4 */
    CHECK(ssrf_allowed_text(&f, "10.1.2.3", NULL));
    CHECK(!ssrf_allowed_text(&f, "10.2.0.1", NULL));
    CHECK(!ssrf_allowed_text(&f, "169.254.169.254", NULL));
    CHECK(!ssrf_allowed_text(&f, "::2", NULL));
    CHECK(!ssrf_allowed_text(&f, "localhost", NULL));
    CHECK_EQ(ssrf_filter_parse(&f, "10.0.0.0/33", err, sizeof err), -1);
    CHECK_EQ(ssrf_filter_parse(&f, "example.com", err, sizeof err), -1);
    CHECK_EQ(ssrf_filter_parse(&f, "", err, sizeof err), 0);
    CHECK_EQ(f.n_allow, 0);
}

int main(void)
{
    RUN(test_ssrf_ip_cases_table);
    RUN(test_ssrf_allow_cidrs);
    return check_summary();
}
