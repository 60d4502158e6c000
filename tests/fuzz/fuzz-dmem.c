/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel's dmem files (cgroup_dmem_parse(), mirror-dmem.c) on
 * arbitrary bytes, and the region registry they feed. Whatever the
 * input, every line the parser hands on names a valid region, the parser
 * either takes the whole file or refuses it, and the regions registered
 * from it can all be removed again: the core ends as it began, holding
 * "memory" alone, which is what makes the target persistent (one core,
 * made in LLVMFuzzerInitialize, serves every input).
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup/mirror-internal.h"
#include "core/core.h"
#include "core/region.h"
#include "fuzz-rcu.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static MemCore *core;

typedef struct Seen {
        unsigned lines, added;
        char names[MEM_REGION_MAX][MEM_REGION_NAME_MAX + 1];
} Seen;

static int take(void *userdata, const char *region, uint64_t value) {
        Seen *s = userdata;
        int key;

        if (mem_region_name_check(region) < 0)
                abort(); /* the parser let a bad name through */
        if (++s->lines > MEM_REGION_MAX)
                abort(); /* more lines than a dmem file can hold */
        key = core_region_add(core, region, value);
        if (key > 0 && core_region_lookup(core, region) != key)
                abort();
        if (key > 0 && s->added < MEM_REGION_MAX)
                strcpy(s->names[s->added++], region);
        else if (key != -EINVAL && key != -EEXIST && key != -ENOSPC && key <= 0)
                abort();
        return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        MemCoreConfig cfg = MEM_CORE_CONFIG_DEFAULT;

        (void) argc, (void) argv;
        cfg.max_groups = 16;
        if (core_new(&cfg, &core) < 0 || core_thread_register(core) < 0)
                abort();
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        MemRegionDesc list[MEM_REGION_MAX];
        Seen seen = {};
        int r;

        r = cgroup_dmem_parse((const char *) data, size, take, &seen);
        if (r < 0 && r != -EINVAL)
                abort();
        /* Whatever was registered goes again, and nothing else is left. */
        for (unsigned i = 0; i < seen.added; i++)
                if (core_region_remove(core, seen.names[i]) < 0 && core_region_lookup(core, seen.names[i]) >= 0)
                        abort();
        if (core_region_list(core, list, MEM_REGION_MAX) != 1)
                abort();
        /* The removed regions are freed by RCU callbacks: now (fuzz-rcu.h). */
        urcu_memb_barrier();
        return 0;
}
