/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The journal replay on arbitrary bytes: persist_journal_check() over a
 * fixed state (a small tree with a delegation and kept charges, in memory
 * and in a device region) never crashes, and whatever it accepts is a
 * valid state of at least the root.
 * The journal is, like the state file, an input a client does not send:
 * a save cut short, a damaged disk, a hand edit.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state/persist.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char state[] = "memacctd-state 2\n"
                            "region gpu0 capacity=1073741824\n"
                            "group / owner=0 max=max high=max low=0 min=0 dmem:gpu0.high=4096\n"
                            "group /a owner=0 max=1073741824 high=max low=0 min=0 kept.anon=4096 "
                            "dmem:gpu0.max=65536\n"
                            "group /a/d owner=1000 max=max high=max low=0 min=0 kept.anon=8192 "
                            "kept-delegator.anon=4096 dmem:gpu0.kept=8192 dmem:gpu0.kept-delegator=4096\n"
                            "group /a/d/x owner=1000 max=max high=max low=0 min=0\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static char *text;
        static size_t text_size;
        char *error = NULL;
        int r;

        if (size > 256 * 1024)
                return 0;
        if (!text) {
                /* The state with its trailer, made once by the daemon's own formatter's rules. */
                uint64_t h = UINT64_C(0xcbf29ce484222325);

                for (size_t i = 0; i < strlen(state); i++)
                        h = (h ^ (uint8_t) state[i]) * UINT64_C(0x100000001b3);
                if (asprintf(&text, "%send 4 fnv1a64=%016llx\n", state, (unsigned long long) h) < 0)
                        abort();
                text_size = strlen(text);
                if (persist_journal_check(text, text_size, "memacctd-journal 1\n", 19, 8, 256, NULL) != 4)
                        abort();
        }
        r = persist_journal_check(text, text_size, (const char *) data, size, 8, 256, &error);
        if (r == 0)
                abort(); /* an accepted replay keeps at least the root */
        free(error);
        return 0;
}
