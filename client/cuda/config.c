/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The interposer's settings (config.h), parsed with inih. Read once, on
 * the first allocation; a file that is missing, untrusted or wrong
 * leaves the defaults (deny, the system socket), and says so once on
 * stderr, since nobody else would.
 */

#include <errno.h>
#include <ini.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "memacct.h"

#ifndef MA_CUDA_CONFIG
#define MA_CUDA_CONFIG "/etc/memacct/cuda.conf"
#endif

static MaConfig config;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static int on_key(void *userdata, const char *section, const char *key, const char *value) {
        MaConfig *c = userdata;

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

/* Root's, and writable by root alone. */
static bool trusted(const char *path) {
        struct stat st;

        return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH));
}

static void load(void) {
        const char *path = secure_getenv("MEMACCT_CUDA_CONFIG");
        MaConfig c = { .allow_unreachable = false };
        bool named = path && *path;
        int r;

        snprintf(c.socket, sizeof(c.socket), "%s", MEMACCT_SYSTEM_SOCKET);
        if (!named)
                path = MA_CUDA_CONFIG;
        if (!trusted(path)) {
                /* No file at the default path is the default: said nothing. */
                if (named || access(path, F_OK) == 0)
                        fprintf(stderr, "memacct-cuda: %s is not root's alone: ignored, allocations are "
                                "refused when memacctd cannot be reached\n", path);
                config = c;
                return;
        }
        r = ini_parse(path, on_key, &c);
        if (r != 0) {
                fprintf(stderr, "memacct-cuda: %s, line %d: not understood: using the defaults\n", path, r);
                snprintf(c.socket, sizeof(c.socket), "%s", MEMACCT_SYSTEM_SOCKET);
                c.allow_unreachable = false;
        }
        config = c;
}

const MaConfig *ma_config(void) {
        (void) pthread_once(&once, load);
        return &config;
}
