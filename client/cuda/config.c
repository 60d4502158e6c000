/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The interposer's settings (config.h; the grammar common/cuda-config.h's). Read once, on
 * the first allocation; a file that is missing, untrusted or wrong
 * leaves the defaults (deny, the system socket), and says so once on
 * stderr, since nobody else would.
 */

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "memacct.h"

#ifndef MA_CUDA_CONFIG
#define MA_CUDA_CONFIG "/etc/memacct/cuda.conf"
#endif

static MaConfig config;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void) {
        const char *path = secure_getenv("MEMACCT_CUDA_CONFIG");
        MaConfig c = { .allow_unreachable = false };
        bool named = path && *path;
        int r;

        snprintf(c.socket, sizeof(c.socket), "%s", MEMACCT_SYSTEM_SOCKET);
        if (!named)
                path = MA_CUDA_CONFIG;
        if (!cuda_config_trusted(path)) {
                /* No file at the default path is the default: said nothing. */
                if (named || access(path, F_OK) == 0)
                        fprintf(stderr, "memacct-cuda: %s is not root's alone: ignored, allocations are "
                                "refused when memacctd cannot be reached\n", path);
                config = c;
                return;
        }
        r = cuda_config_parse(path, &c);
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
