/* SPDX-License-Identifier: MIT */
/* Lookups into the error table of roost_error.h, shared by the server and the SDK. */
#include <string.h>

#include "roost/roost_error.h"

#include "common/banned.h"

struct error_row {
    const char *name;
    int status;
    const char *code;
    const char *msg;
};

static const struct error_row rows[] = {
#define ROOST_ERROR_ROW(name, status, code, msg) {"ROOST_" #name, status, code, msg},
    ROOST_ERRNO_MAP(ROOST_ERROR_ROW)
#undef ROOST_ERROR_ROW
};

static const struct error_row *row_of(int rc)
{
    int pos = -rc - 1;
    if (rc >= 0 || pos >= (int)(sizeof rows / sizeof rows[0])) {
        return NULL;
    }
    return &rows[pos];
}

const char *roost_strerror(int rc)
{
    const struct error_row *r = row_of(rc);
    return rc == ROOST_OK ? "ok" : r ? r->msg : "unknown error";
}

const char *roost_err_name(int rc)
{
    const struct error_row *r = row_of(rc);
    return rc == ROOST_OK ? "ROOST_OK" : r ? r->name : "ROOST_EUNKNOWN";
}

const char *roost_err_code(int rc)
{
    const struct error_row *r = row_of(rc);
    return rc == ROOST_OK ? "ok" : r ? r->code : "internal_error";
}

int roost_err_http_status(int rc)
{
    const struct error_row *r = row_of(rc);
    return rc == ROOST_OK ? 200 : r ? r->status : 500;
}

int roost_err_from_code(const char *code)
{
    if (code == NULL) {
        return ROOST_EPROTO;
    }
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        if (strcmp(rows[i].code, code) == 0) {
            return -(int)(i + 1);
        }
    }
    return ROOST_EPROTO;
}
