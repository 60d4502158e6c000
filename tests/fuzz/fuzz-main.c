/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Corpus replay for builds without libFuzzer: every file named on the
 * command line, or found in a directory named there, goes through
 * LLVMFuzzerTestOneInput() once, after LLVMFuzzerInitialize() when the
 * target has one (as libFuzzer calls it: a persistent target makes its
 * state there). Sanitizer builds turn any memory error into a failure;
 * the target's own checks abort on a broken property.
 */

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Weak: only the targets that keep state across inputs define it. */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int run_file(const char *path) {
        FILE *f = fopen(path, "rb");
        uint8_t *buf;
        long n;

        if (!f)
                return -1;
        if (fseek(f, 0, SEEK_END) < 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0) {
                fclose(f);
                return -1;
        }
        buf = malloc((size_t) n + 1);
        if (!buf || fread(buf, 1, (size_t) n, f) != (size_t) n) {
                free(buf);
                fclose(f);
                return -1;
        }
        fclose(f);
        LLVMFuzzerTestOneInput(buf, (size_t) n);
        free(buf);
        return 0;
}

int main(int argc, char **argv) {
        unsigned ok = 0, failed = 0;

        if (LLVMFuzzerInitialize && LLVMFuzzerInitialize(&argc, &argv) != 0)
                return 1;
        for (int i = 1; i < argc; i++) {
                struct stat st;
                DIR *d;
                struct dirent *de;

                if (stat(argv[i], &st) < 0 || !S_ISDIR(st.st_mode)) {
                        run_file(argv[i]) == 0 ? ok++ : failed++;
                        continue;
                }
                d = opendir(argv[i]);
                if (!d) {
                        failed++;
                        continue;
                }
                while ((de = readdir(d))) {
                        char path[4096];

                        if (de->d_name[0] == '.')
                                continue;
                        snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
                        run_file(path) == 0 ? ok++ : failed++;
                }
                closedir(d);
        }
        /* An empty corpus proves nothing: count it as a failure. */
        if (ok == 0)
                failed++;
        printf("%u passed, %u failed\n", ok, failed);
        return failed ? 1 : 0;
}
