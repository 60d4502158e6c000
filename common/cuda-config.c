/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The CUDA interposer's settings file (cuda-config.h), parsed with inih.
 * Compiled into the interposer and memacctctl, which both carry inih;
 * not into libmemacct-common, which everything links.
 */

#include <errno.h>
#include <ini.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cuda-config.h"

static int on_key(void *userdata, const char *section, const char *key, const char *value) {
        CudaConfig *c = userdata;

        if (strcmp(section, "interposer") != 0)
                return 1; /* another program's section: not ours to judge */
        if (strcmp(key, "socket") == 0 && value[0] == '/' && strlen(value) < sizeof(c->socket)) {
                snprintf(c->socket, sizeof(c->socket), "%s", value);
                return 1;
        }
        if (strcmp(key, "on-unreachable") == 0 && (strcmp(value, "allow") == 0 || strcmp(value, "deny") == 0)) {
                c->allow_unreachable = strcmp(value, "allow") == 0;
                return 1;
        }
        return 0;
}

bool cuda_config_trusted(const char *path) {
        struct stat st;

        return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH));
}

int cuda_config_parse(const char *path, CudaConfig *ret) {
        int r = ini_parse(path, on_key, ret);

        return r < 0 ? -EIO : r;
}
