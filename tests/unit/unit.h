/* SPDX-License-Identifier: MIT */
/* A minimal unit-test kit: CHECK counts passes and failures (printing file:line and the failed
 * expression), unit_summary() prints the final "N passed, N failed" line and gives the exit code.
 */
#ifndef ROOST_TEST_UNIT_H
#define ROOST_TEST_UNIT_H

#include <stdio.h>
#include <string.h>

static int unit_passed;
static int unit_failed;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (cond) {                                                                                \
            unit_passed++;                                                                         \
        } else {                                                                                   \
            unit_failed++;                                                                         \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

/* String equality with both values printed on failure (NULL-safe). */
#define CHECK_STREQ(a, b)                                                                          \
    do {                                                                                           \
        const char *unit_a_ = (a), *unit_b_ = (b);                                                 \
        if (unit_a_ != NULL && unit_b_ != NULL && strcmp(unit_a_, unit_b_) == 0) {                 \
            unit_passed++;                                                                         \
        } else {                                                                                   \
            unit_failed++;                                                                         \
            fprintf(stderr, "%s:%d: CHECK_STREQ failed: %s == %s (\"%s\" vs \"%s\")\n", __FILE__,  \
                    __LINE__, #a, #b, unit_a_ ? unit_a_ : "(null)", unit_b_ ? unit_b_ : "(null)"); \
        }                                                                                          \
    } while (0)

/* Integer equality with both values printed on failure. */
#define CHECK_EQ(a, b)                                                                             \
    do {                                                                                           \
        long long unit_a_ = (long long)(a), unit_b_ = (long long)(b);                              \
        if (unit_a_ == unit_b_) {                                                                  \
            unit_passed++;                                                                         \
        } else {                                                                                   \
            unit_failed++;                                                                         \
            fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %s (%lld vs %lld)\n", __FILE__,         \
                    __LINE__, #a, #b, unit_a_, unit_b_);                                           \
        }                                                                                          \
    } while (0)

/* Runs one test function, naming it when it added failures. */
#define RUN(fn)                                                                                    \
    do {                                                                                           \
        int unit_before_ = unit_failed;                                                            \
        fn();                                                                                      \
        if (unit_failed != unit_before_) {                                                         \
            fprintf(stderr, "FAIL %s\n", #fn);                                                     \
        }                                                                                          \
    } while (0)

static inline int unit_summary(void)
{
    printf("%d passed, %d failed\n", unit_passed, unit_failed);
    return unit_failed == 0 ? 0 : 1;
}

#endif
