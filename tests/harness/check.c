/* SPDX-License-Identifier: MIT */
/* The counters and the failure line of the check kit (check.h). */
#include <stdarg.h>
#include <stdio.h>

#include "harness/check.h"

#include "common/banned.h"

_Atomic int check_passed;
_Atomic int check_failed;
const char *check_test;

void check_pass(void)
{
    check_passed++;
}

void check_fail(const char *file, int line, const char *fmt, ...)
{
    check_failed++;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (check_test != NULL) {
        fprintf(stderr, "%s:%d: %s: %s\n", file, line, check_test, msg);
    } else {
        fprintf(stderr, "%s:%d: %s\n", file, line, msg);
    }
}

int check_begin(const char *name)
{
    check_test = name;
    return check_failed;
}

void check_end(int failed_before)
{
    if (check_failed != failed_before) {
        fprintf(stderr, "FAIL %s\n", check_test != NULL ? check_test : "(unnamed)");
    }
    check_test = NULL;
}

int check_summary(void)
{
    int failed = check_failed;
    printf("%d passed, %d failed\n", (int)check_passed, failed);
    return failed == 0 ? 0 : 1;
}
