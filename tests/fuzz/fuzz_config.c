/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the roostd config parser (config_load_file, then config_finalize). It
 * only reads files, so each input is written to one private temporary file first. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/config.h"

#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64];

static void remove_tmp(void)
{
    unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    if (fd < 0) {
        snprintf(path, sizeof path, "/tmp/roost-fuzz-config-XXXXXX");
        fd = mkstemp(path);
        if (fd < 0) {
            abort();
        }
        /* Removed at a normal exit; a crash leaves it behind next to the crash artifact. */
        atexit(remove_tmp);
    }
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size) {
        abort();
    }
    struct config cfg;
    char err[256];
    if (config_init(&cfg) != 0) {
        return 0;
    }
    if (config_load_file(&cfg, path, err, sizeof err) == 0) {
        (void)config_finalize(&cfg, err, sizeof err);
    }
    config_cleanup(&cfg);
    return 0;
}
