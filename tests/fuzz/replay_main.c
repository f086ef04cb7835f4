/* SPDX-License-Identifier: MIT */
/* A stand-in for libFuzzer's driver in ordinary (gcc, ROOST_FUZZ=OFF) builds: feeds every file
 * named on the command line, or found directly inside a named directory, to
 * LLVMFuzzerTestOneInput once. Used by the ctest fuzz_replay_<target> tests to replay the
 * committed corpus; fails when it found no input at all, so an empty corpus cannot pass. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/banned.h"

#define REPLAY_MAX_INPUT_BYTES (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    /* One extra byte tells an over-long input from one exactly at the cap. */
    uint8_t *buf = malloc(REPLAY_MAX_INPUT_BYTES + 1);
    if (buf == NULL) {
        fclose(f);
        return -1;
    }
    size_t n = fread(buf, 1, REPLAY_MAX_INPUT_BYTES + 1, f);
    fclose(f);
    if (n > REPLAY_MAX_INPUT_BYTES) {
        fprintf(stderr, "replay: %s is larger than %u bytes\n", path, REPLAY_MAX_INPUT_BYTES);
        free(buf);
        return -1;
    }
    /* A private copy of exactly n bytes lets ASan catch reads past the input. */
    uint8_t *exact = malloc(n > 0 ? n : 1);
    if (exact == NULL) {
        free(buf);
        return -1;
    }
    memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    size_t count = 0;
    int failed = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s does not exist\n", argv[i]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            failed |= replay_file(argv[i]) != 0;
            count++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (d == NULL) {
            return 1;
        }
        char **names = NULL;
        size_t n = 0;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.') {
                continue;
            }
            char **nn = realloc(names, (n + 1) * sizeof *nn);
            if (nn == NULL) {
                return 1;
            }
            names = nn;
            names[n++] = strdup(e->d_name);
        }
        closedir(d);
        /* Sorted, so a failure reproduces in the same order. */
        qsort(names, n, sizeof *names, cmp_names);
        for (size_t k = 0; k < n; k++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], names[k]);
            failed |= replay_file(path) != 0;
            count++;
            free(names[k]);
        }
        free(names);
    }
    printf("replayed %zu inputs\n", count);
    return failed || count == 0 ? 1 : 0;
}
