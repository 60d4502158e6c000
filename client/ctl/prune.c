/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memacctctl prune: one memacct_prune_mirrors() call, printed one line
 * per group. A mirror kept is not a failure (it stays until its sessions
 * or kept charges are gone, and a later prune takes it): the exit status
 * is 0 whenever the daemon answered.
 */

#include <json-c/json.h>
#include <stdlib.h>

#include "options.h"
#include "output.h"
#include "prune.h"

static int prune_print_json(const memacct_pruned *list, FILE *out) {
        json_object *o = json_object_new_object(), *removed = json_object_new_array(),
                    *kept = json_object_new_array();
        int r = 1;

        if (!o || !removed || !kept)
                goto done;
        for (size_t i = 0; i < memacct_pruned_size(list); i++) {
                const memacct_pruned_group *g = memacct_pruned_get(list, i);
                json_object *k;

                if (!g->why) {
                        if (json_object_array_add(removed, json_object_new_string(g->group)) < 0)
                                goto done;
                        continue;
                }
                k = json_object_new_object();
                if (!k || json_object_array_add(kept, k) < 0) {
                        json_object_put(k);
                        goto done;
                }
                json_object_object_add(k, "group", json_object_new_string(g->group));
                json_object_object_add(k, "why", json_object_new_string(g->why));
        }
        json_object_object_add(o, "removed", removed);
        json_object_object_add(o, "kept", kept);
        removed = kept = NULL;
        fprintf(out, "%s\n",
                json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        r = 0;
done:
        json_object_put(removed);
        json_object_put(kept);
        json_object_put(o);
        if (r)
                fputs("memacctctl: out of memory\n", stderr);
        return r;
}

int prune_print(const memacct_pruned *list, bool json, FILE *out) {
        if (json) {
                if (prune_print_json(list, out) != 0)
                        return 1;
        } else
                for (size_t i = 0; i < memacct_pruned_size(list); i++) {
                        const memacct_pruned_group *g = memacct_pruned_get(list, i);

                        if (g->why)
                                fprintf(out, "kept\t%s\t%s\n", g->group, g->why);
                        else
                                fprintf(out, "removed\t%s\n", g->group);
                }
        return fflush(out) == 0 && !ferror(out) ? 0 : 1;
}

int prune_verb_main(memacct **mp, int (*connect)(memacct **ret)) {
        memacct_pruned *list = NULL;
        int r;

        r = connect(mp);
        if (r != 0)
                return r;
        r = memacct_prune_mirrors(*mp, &list);
        if (r < 0)
                return fail(*mp, "prune", "", r);
        r = prune_print(list, arg.json, stdout);
        memacct_pruned_free(list);
        return r;
}
