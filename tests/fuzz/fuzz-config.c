/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* config_parse() on arbitrary bytes: never crashes, and either succeeds
 * with every value inside its documented range (the regions declared
 * valid, distinct and few enough for a core), or fails with a message
 * that names the file. */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The regions a parsed file declares: what core_region_add() takes, each name once. */
static bool regions_valid(const Config *c) {
        if (c->n_regions > MEM_REGION_MAX - 1)
                return false;
        for (unsigned i = 0; i < c->n_regions; i++) {
                if (mem_region_name_check(c->regions[i].name) < 0 ||
                    strcmp(c->regions[i].name, MEM_REGION_MEMORY_NAME) == 0)
                        return false;
                for (unsigned k = 0; k < i; k++)
                        if (strcmp(c->regions[i].name, c->regions[k].name) == 0)
                                return false;
        }
        return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *error = NULL;
        Config c;
        int r;

        if (size > 64 * 1024)
                return 0;
        r = config_parse((const char *) data, size, "fuzz.conf", &c, &error);
        if (r == 0) {
                if (error)
                        abort();
                if (c.frame_size < 1024 || c.max_groups < 1 || c.max_depth < 1 || c.max_depth > 255 ||
                    c.outstanding_requests < 1 || c.flush_interval_msec < 10 || c.workers > 1024 ||
                    c.read_access < 0 || c.read_access >= _READ_ACCESS_MAX ||
                    (c.socket_path && (!*c.socket_path || strlen(c.socket_path) > 107)) ||
                    (c.state_dir && !*c.state_dir) || !regions_valid(&c))
                        abort();
                config_done(&c);
        } else if (r == -EINVAL) {
                if (!error || strncmp(error, "fuzz.conf:", 10) != 0)
                        abort();
                free(error);
        } else if (r != -ENOMEM)
                abort();
        return 0;
}
