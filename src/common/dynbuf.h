/* SPDX-License-Identifier: MIT */
/* A growable byte buffer with a mandatory maximum (after curl's DYNBUF): appends past the maximum
 * or failed allocations set a sticky error, so a writer appends freely and checks once at the end.
 * The content is always NUL-terminated (the NUL is not counted in len nor in the maximum). */
#ifndef ROOST_DYNBUF_H
#define ROOST_DYNBUF_H

#include <stddef.h>

enum dynbuf_err {
    DYNBUF_OK = 0,
    DYNBUF_ELIMIT, /* an append would have passed max_bytes */
    DYNBUF_ENOMEM,
};

struct dynbuf {
    char *s;    /* NULL until the first append; else NUL-terminated, owned by the buffer */
    size_t len; /* bytes in s, NUL excluded */
    size_t cap; /* bytes allocated */
    size_t max; /* the most len may ever be */
    int err;    /* enum dynbuf_err: the first error; appends after one do nothing */
};

/* An empty buffer that holds at most max_bytes. Also `struct dynbuf b = {.max = N}`. */
void dynbuf_init(struct dynbuf *b, size_t max_bytes);

/* Appends n bytes (n may be 0); nothing once err is set. */
void dynbuf_add(struct dynbuf *b, const void *p, size_t n);
void dynbuf_adds(struct dynbuf *b, const char *s);
void dynbuf_addc(struct dynbuf *b, char c);

/* Appends printf-style text; an output error of vsnprintf counts as DYNBUF_ELIMIT. */
void dynbuf_addf(struct dynbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Empties the buffer and clears its error; keeps the memory and the maximum. */
void dynbuf_reset(struct dynbuf *b);

/* Frees the memory; the buffer is empty with the same maximum. */
void dynbuf_cleanup(struct dynbuf *b);

#endif
