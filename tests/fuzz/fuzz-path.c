/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Group paths on arbitrary bytes: the input is split at newlines into
 * paths that are created, looked up and removed in one core. Whatever the
 * input, a path either passes mem_path_check() or fails with one of its
 * documented errors, create never accepts a path the check refuses, and
 * the tree ends as it began: removing everything created (deepest first)
 * leaves the root alone. That is also what makes the target persistent:
 * one core, made in LLVMFuzzerInitialize, serves every input.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "fuzz-rcu.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PATHS 64
#define MAX_DEPTH 8

static MemCore *core;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        MemCoreConfig cfg = MEM_CORE_CONFIG_DEFAULT;

        (void) argc, (void) argv;
        cfg.max_depth = MAX_DEPTH;
        cfg.max_groups = 128;
        if (core_new(&cfg, &core) < 0 || core_thread_register(core) < 0)
                abort();
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *buf, *paths[MAX_PATHS];
        unsigned n = 0, created = 0;
        bool made[MAX_PATHS] = {};

        if (size > 64 * 1024)
                return 0;
        if (core_group_count(core) != 1)
                abort();
        buf = malloc(size + 1);
        if (!buf)
                abort();
        memcpy(buf, data, size);
        buf[size] = 0;
        for (char *save = NULL, *p = strtok_r(buf, "\n", &save); p && n < MAX_PATHS;
             p = strtok_r(NULL, "\n", &save))
                paths[n++] = p;

        for (unsigned i = 0; i < n; i++) {
                MemPathError why;
                int depth = mem_path_check(paths[i], MAX_DEPTH, &why);
                int r = group_create(core, paths[i], 0);

                if (depth < 0 && (depth != -EINVAL && depth != -ENAMETOOLONG && depth != -EMLINK))
                        abort();
                if (depth < 0 && (r != depth || why == MEM_PATH_OK))
                        abort();
                if (r == 0) {
                        MemGroup *g;

                        made[i] = true;
                        created++;
                        core_read_lock();
                        g = group_lookup(core, paths[i]);
                        if (!g || strcmp(g->path, paths[i]) != 0)
                                abort();
                        core_read_unlock();
                }
        }
        if (core_group_count(core) != created + 1)
                abort();
        /* Remove in reverse creation order: children were created after
         * their parents, so they go first. */
        for (unsigned i = n; i-- > 0;)
                if (made[i] && group_remove(core, paths[i]) != 0)
                        abort();
        if (core_group_count(core) != 1)
                abort();
        free(buf);
        /* The removed groups are freed by RCU callbacks: now (fuzz-rcu.h). */
        urcu_memb_barrier();
        return 0;
}
