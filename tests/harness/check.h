/* SPDX-License-Identifier: MIT */
/* The one check kit of the C tests (unit, store, MariaDB, integration, cluster, interop): CHECK*
 * count passes and failures and print file:line (and the running test's name, when the runner set
 * one); check_summary() prints the final "N passed, N failed" line and gives the exit code. The
 * counters live in check.c so that a test and the harness library it links share them. */
#ifndef ROOST_TEST_CHECK_H
#define ROOST_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

/* Checks that held and checks that failed so far in this process (atomic: the concurrency
 * tests check from several threads). */
extern _Atomic int check_passed;
extern _Atomic int check_failed;
/* The running test's name, printed in failure lines; NULL outside a named test. */
extern const char *check_test;

/* Counts one check that held. */
void check_pass(void);
/* Counts one failed check and prints "file:line: [test: ]message" on stderr. */
void check_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (cond) {                                                                                \
            check_pass();                                                                          \
        } else {                                                                                   \
            check_fail(__FILE__, __LINE__, "CHECK failed: %s", #cond);                             \
        }                                                                                          \
    } while (0)

/* Integer equality with both values printed on failure. */
#define CHECK_EQ(a, b)                                                                             \
    do {                                                                                           \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);                            \
        if (check_a_ == check_b_) {                                                                \
            check_pass();                                                                          \
        } else {                                                                                   \
            check_fail(__FILE__, __LINE__, "CHECK_EQ failed: %s == %s (%lld vs %lld)", #a, #b,     \
                       check_a_, check_b_);                                                        \
        }                                                                                          \
    } while (0)

/* String equality with both values printed on failure (NULL-safe). */
#define CHECK_STREQ(a, b)                                                                          \
    do {                                                                                           \
        const char *check_a_ = (a), *check_b_ = (b);                                               \
        if (check_a_ != NULL && check_b_ != NULL && strcmp(check_a_, check_b_) == 0) {             \
            check_pass();                                                                          \
        } else {                                                                                   \
            check_fail(__FILE__, __LINE__, "CHECK_STREQ failed: %s == %s (\"%s\" vs \"%s\")", #a,  \
                       #b, check_a_ ? check_a_ : "(null)", check_b_ ? check_b_ : "(null)");        \
        }                                                                                          \
    } while (0)

/* A check with a case label, for table-driven tests: prints the label on failure. */
#define CHECK_CASE(label, cond)                                                                    \
    do {                                                                                           \
        if (cond) {                                                                                \
            check_pass();                                                                          \
        } else {                                                                                   \
            check_fail(__FILE__, __LINE__, "[%s] CHECK failed: %s", (label), #cond);               \
        }                                                                                          \
    } while (0)

/* Runs one test function under its name, naming it when it added failures. */
#define RUN(fn)                                                                                    \
    do {                                                                                           \
        int check_before_ = check_begin(#fn);                                                      \
        fn();                                                                                      \
        check_end(check_before_);                                                                  \
    } while (0)

/* For runners with their own fixtures: check_begin() names the test and returns the failure count
 * so far; check_end() prints "FAIL name" when the test added failures, and clears the name. */
int check_begin(const char *name);
void check_end(int failed_before);

/* Prints "N passed, N failed" on stdout; 0 when nothing failed, else 1. */
int check_summary(void);

#endif
