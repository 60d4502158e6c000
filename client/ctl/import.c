/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memacctctl import-cgroups: what the daemon reports of an import, in
 * words. A limit a user set on a mirror is the user's and an import
 * keeps it (memacct(7), KERNEL CGROUP MIRRORS); saying so after the
 * counts is what keeps that rule from looking like a lost update.
 */

#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>

#include "import.h"
#include "macro.h"
#include "output.h"

static const struct {
        const char *name;
        unsigned bit;
} limits[] = {
        { "max", MEMACCT_LIMIT_MAX },
        { "high", MEMACCT_LIMIT_HIGH },
        { "low", MEMACCT_LIMIT_LOW },
        { "min", MEMACCT_LIMIT_MIN },
};

static uint64_t limit_value(const memacct_limits *l, unsigned bit) {
        switch (bit) {
        case MEMACCT_LIMIT_MAX: return l->max;
        case MEMACCT_LIMIT_HIGH: return l->high;
        case MEMACCT_LIMIT_LOW: return l->low;
        default: return l->min;
        }
}

/* A limit as `set` takes it: "max", or bytes in the largest exact unit. */
static const char *limit_text(uint64_t v, char buf[static 32]) {
        static const char units[] = "KMGTPE";
        int u = -1;

        if (v == MEMACCT_UNLIMITED)
                return "max";
        while (v != 0 && v % 1024 == 0 && u < 5) {
                v /= 1024;
                u++;
        }
        if (u < 0)
                snprintf(buf, 32, "%" PRIu64, v);
        else
                snprintf(buf, 32, "%" PRIu64 "%c", v, units[u]);
        return buf;
}

/* {"max": bytes, ...} of the limits @l sets; "max" for none, as `show --json` has it. */
static json_object *json_limits(const memacct_limits *l) {
        json_object *o = json_object_new_object();

        for (size_t i = 0; o && i < ELEMENTSOF(limits); i++) {
                uint64_t v;

                if (!(l->set & limits[i].bit))
                        continue;
                v = limit_value(l, limits[i].bit);
                json_object_object_add(o, limits[i].name,
                                       v == MEMACCT_UNLIMITED ? json_object_new_string("max")
                                                              : json_object_new_uint64(v));
        }
        return o;
}

static int print_import_json(const memacct_import_report *r) {
        const memacct_import_result *c = memacct_import_report_counts(r);
        unsigned owned = memacct_import_report_kernel_limits(r);
        json_object *o = json_object_new_object(), *names = json_object_new_array(),
                    *kept = json_object_new_array();
        const memacct_kept_limits *k;

        if (!o || !names || !kept) {
                json_object_put(o);
                json_object_put(names);
                json_object_put(kept);
                fputs("memacctctl: out of memory\n", stderr);
                return EXIT_FAILURE;
        }
        json_object_object_add(o, "created", json_object_new_uint64(c->created));
        json_object_object_add(o, "updated", json_object_new_uint64(c->updated));
        json_object_object_add(o, "unchanged", json_object_new_uint64(c->unchanged));
        json_object_object_add(o, "kept", json_object_new_uint64(memacct_import_report_kept(r)));
        for (size_t i = 0; i < ELEMENTSOF(limits); i++)
                if (owned & limits[i].bit)
                        json_object_array_add(names, json_object_new_string(limits[i].name));
        json_object_object_add(o, "kernel_owns", names);
        for (size_t n = 0; (k = memacct_import_report_get(r, n)); n++) {
                json_object *e = json_object_new_object();

                if (!e)
                        continue;
                json_object_object_add(e, "group", json_object_new_string(k->group));
                json_object_object_add(e, "ours", json_limits(&k->ours));
                json_object_object_add(e, "kernel", json_limits(&k->kernel));
                json_object_array_add(kept, e);
        }
        json_object_object_add(o, "kept_limits", kept);
        puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(o);
        return fflush(stdout) == 0 ? 0 : EXIT_FAILURE;
}

int print_import_report(const memacct_import_report *r, bool json) {
        unsigned owned = memacct_import_report_kernel_limits(r);
        const memacct_kept_limits *k;
        const char *sep = "";
        int res;

        if (json)
                return print_import_json(r);
        res = print_import(memacct_import_report_counts(r), false);
        if (res != 0)
                return res;
        printf("kept: %" PRIu32 "\n", memacct_import_report_kept(r));
        if (owned) {
                printf("kernel owns:");
                for (size_t i = 0; i < ELEMENTSOF(limits); i++)
                        if (owned & limits[i].bit)
                                printf(" %s", limits[i].name);
                printf(" (a limit set on a mirror is kept until import-cgroups --reset-limits)\n");
        }
        for (size_t n = 0; (k = memacct_import_report_get(r, n)); n++) {
                printf("%s: kept", k->group);
                sep = " ";
                for (size_t i = 0; i < ELEMENTSOF(limits); i++) {
                        char a[32], b[32];

                        if (!(k->ours.set & limits[i].bit))
                                continue;
                        printf("%s%s=%s (set by a user; the kernel has %s)", sep, limits[i].name,
                               limit_text(limit_value(&k->ours, limits[i].bit), a),
                               limit_text(limit_value(&k->kernel, limits[i].bit), b));
                        sep = ", ";
                }
                printf("\n");
        }
        return fflush(stdout) == 0 ? 0 : EXIT_FAILURE;
}
