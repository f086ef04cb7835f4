/* SPDX-License-Identifier: MIT */
/* The growable, capped byte buffer (see dynbuf.h). */
#include "common/dynbuf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/banned.h"

#define DYNBUF_FIRST_CAP 128

void dynbuf_init(struct dynbuf *b, size_t max_bytes)
{
    memset(b, 0, sizeof *b);
    b->max = max_bytes;
}

void dynbuf_add(struct dynbuf *b, const void *p, size_t n)
{
    if (b->err != DYNBUF_OK) {
        return;
    }
    /* No buffer comes near SIZE_MAX; the clamp keeps the size arithmetic below from wrapping. */
    size_t max = b->max < SIZE_MAX / 2 ? b->max : SIZE_MAX / 2;
    if (n > max || b->len > max - n) {
        b->err = DYNBUF_ELIMIT;
        return;
    }
    if (b->len + n + 1 > b->cap) {
        /* Doubling from the first size, capped at what the maximum can ever need. */
        size_t cap = b->cap == 0 ? DYNBUF_FIRST_CAP : b->cap;
        while (cap < b->len + n + 1) {
            cap = cap > (max + 1) / 2 ? max + 1 : cap * 2;
        }
        char *ns = realloc(b->s, cap);
        if (ns == NULL) {
            b->err = DYNBUF_ENOMEM;
            return;
        }
        b->s = ns;
        b->cap = cap;
    }
    if (n > 0) {
        memcpy(b->s + b->len, p, n);
    }
    b->len += n;
    b->s[b->len] = '\0';
}

void dynbuf_adds(struct dynbuf *b, const char *s)
{
    dynbuf_add(b, s, strlen(s));
}

void dynbuf_addc(struct dynbuf *b, char c)
{
    dynbuf_add(b, &c, 1);
}

void dynbuf_reset(struct dynbuf *b)
{
    b->len = 0;
    b->err = DYNBUF_OK;
    if (b->s != NULL) {
        b->s[0] = '\0';
    }
}

void dynbuf_cleanup(struct dynbuf *b)
{
    free(b->s);
    b->s = NULL;
    b->len = 0;
    b->cap = 0;
    b->err = DYNBUF_OK;
}
