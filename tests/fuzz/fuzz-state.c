/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The state-file loader on arbitrary bytes: persist_check() never
 * crashes, and whatever it accepts, persist_restore() applies to a fresh
 * core exactly (the group count it said), and the tree it builds formats
 * back to a state that checks again with the same count. A state file is
 * the one input the daemon reads that a client does not send: a damaged
 * disk, a hand edit.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "base/log.h"
#include "state/persist.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_GROUPS 256
#define MAX_DEPTH 8

static int write_state(const char *dir, const uint8_t *data, size_t size) {
        char path[256];
        FILE *f;

        snprintf(path, sizeof(path), "%s/" PERSIST_STATE, dir);
        f = fopen(path, "wb");
        if (!f || fwrite(data, 1, size, f) != size) {
                if (f)
                        fclose(f);
                return -1;
        }
        return fclose(f) == 0 ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        MemCoreConfig cfg = MEM_CORE_CONFIG_DEFAULT;
        char dir[] = "/tmp/fuzz-state-XXXXXX";
        char *text = NULL, *error = NULL;
        MemCore *core;
        size_t n;
        int groups, again;

        if (size > 256 * 1024)
                return 0;
        groups = persist_check((const char *) data, size, MAX_DEPTH, MAX_GROUPS, &error);
        free(error);
        if (groups < 0) {
                if (groups != -EBADMSG && groups != -EMLINK && groups != -ENOSPC && groups != -ENOMEM)
                        abort();
                return 0;
        }
        /* Accepted: it must restore as checked, and round-trip. */
        log_set_max_level(LOG_CRIT);
        cfg.max_groups = MAX_GROUPS;
        cfg.max_depth = MAX_DEPTH;
        if (!mkdtemp(dir) || write_state(dir, data, size) < 0)
                abort();
        if (core_new(&cfg, &core) < 0 || core_thread_register(core) < 0)
                abort();
        if (persist_restore(core, dir) < 0 || (int) core_group_count(core) != groups)
                abort();
        if (persist_format(core, &text, &n) < 0)
                abort();
        again = persist_check(text, n, MAX_DEPTH, MAX_GROUPS, NULL);
        if (again != groups)
                abort();
        free(text);
        core_thread_unregister(core);
        core_free(core);
        {
                char path[256];

                snprintf(path, sizeof(path), "%s/" PERSIST_STATE, dir);
                (void) unlink(path);
                (void) rmdir(dir);
        }
        return 0;
}
