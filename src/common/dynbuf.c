/* SPDX-License-Identifier: MIT */
/* The growable, capped byte buffer (see dynbuf.h). */
#include "common/dynbuf.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/banned.h"

#define DYNBUF_FIRST_CAP 128

void dynbuf_init(struct dynbuf *b, size_t max_bytes)
{
    memset(b, 0, sizeof *b);
    b->max = max_bytes;
}

/* Makes room for n more bytes and the NUL; false (with err set) when it cannot. */
static bool make_room(struct dynbuf *b, size_t n)
{
    if (b->err != DYNBUF_OK) {
        return false;
    }
    /* No buffer comes near SIZE_MAX; the clamp keeps the size arithmetic below from wrapping. */
    size_t max = b->max < SIZE_MAX / 2 ? b->max : SIZE_MAX / 2;
    if (n > max || b->len > max - n) {
        b->err = DYNBUF_ELIMIT;
        return false;
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
            return false;
        }
        b->s = ns;
        b->cap = cap;
    }
    return true;
}

void dynbuf_add(struct dynbuf *b, const void *p, size_t n)
{
    if (!make_room(b, n)) {
        return;
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

void dynbuf_addf(struct dynbuf *b, const char *fmt, ...)
{
    if (b->err != DYNBUF_OK) {
        return;
    }
    /* Most texts fit the stack buffer: one formatting pass. A longer one is formatted again in
     * place once the room for it is made. */
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->err = DYNBUF_ELIMIT;
        return;
    }
    if ((size_t)n < sizeof small) {
        dynbuf_add(b, small, (size_t)n);
        return;
    }
    if (!make_room(b, (size_t)n)) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
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
