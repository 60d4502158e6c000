/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The cgroup import with its report: the counts, the limits the kernel
 * owns on the daemon's host, and per group the user-set limits an import
 * kept. A new call beside memacct_import_cgroups(), whose result struct
 * is part of the ABI and so does not grow; the report is opaque and read
 * by accessors, so it may. On a bus handle the method is
 * ImportCgroupsKeepingLimits, which carries the same.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client-bus-import.h"
#include "client-error.h"
#include "client-reconnect.h"
#include "macro.h"
#include "memacct.h"

static memacct_limits limits_from_wire(const Memacct__V1__Limits *l) {
        memacct_limits m = {};

        if (!l)
                return m;
        if (l->has_max)
                m.set |= MEMACCT_LIMIT_MAX, m.max = l->max;
        if (l->has_high)
                m.set |= MEMACCT_LIMIT_HIGH, m.high = l->high;
        if (l->has_low)
                m.set |= MEMACCT_LIMIT_LOW, m.low = l->low;
        if (l->has_min)
                m.set |= MEMACCT_LIMIT_MIN, m.min = l->min;
        return m;
}

/* @ir into @r: the strings copied. Return: 0, -ENOMEM. */
static int report_from_wire(const Memacct__V1__ImportReply *ir, memacct_import_report *r) {
        r->counts = (memacct_import_result) { .created = ir->created, .updated = ir->updated,
                                              .unchanged = ir->unchanged };
        r->kernel_limits = ir->kernel_owned;
        r->kept = ir->kept;
        if (ir->n_kept_limits == 0)
                return 0;
        r->v = calloc(ir->n_kept_limits, sizeof(*r->v));
        if (!r->v)
                return -ENOMEM;
        for (size_t i = 0; i < ir->n_kept_limits; i++) {
                const Memacct__V1__KeptLimits *k = ir->kept_limits[i];
                char *g = strdup(k->group ? k->group : "");

                if (!g)
                        return -ENOMEM;
                r->v[r->n++] = (memacct_kept_limits) {
                        .group = g,
                        .ours = limits_from_wire(k->ours),
                        .kernel = limits_from_wire(k->kernel),
                };
        }
        return 0;
}

_public_ memacct_import_report *memacct_import_report_free(memacct_import_report *r) {
        if (!r)
                return NULL;
        for (size_t i = 0; i < r->n; i++)
                free((char *) r->v[i].group);
        free(r->v);
        free(r);
        return NULL;
}

_public_ int memacct_import_cgroups_report(memacct *m, const char *from, const char *under, unsigned flags,
                                           memacct_import_report **ret) {
        Memacct__V1__ImportCgroups imp = MEMACCT__V1__IMPORT_CGROUPS__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;
        memacct_import_report *r;
        Response *resp = NULL;
        int k;

        if (!m || !ret || (flags & ~MEMACCT_IMPORT_RESET_LIMITS))
                return client_error(m, -EINVAL, "invalid argument", NULL);
        r = calloc(1, sizeof(*r));
        if (!r)
                return client_error(m, -ENOMEM, "out of memory", NULL);
        if (m->bus) {
                k = client_bus_import_report(m, from, under, flags, r);
                if (k < 0) {
                        memacct_import_report_free(r);
                        return k;
                }
                *ret = r;
                return 0;
        }
        imp.from_cgroup = (char *) (from ? from : "");
        imp.under = (char *) (under ? under : "");
        imp.has_reset_limits = true;
        imp.reset_limits = !!(flags & MEMACCT_IMPORT_RESET_LIMITS);
        req.op_case = MEMACCT__V1__REQUEST__OP_IMPORT_CGROUPS;
        req.import_cgroups = &imp;
        /* Repeatable: an import, with a reset or not, is idempotent. */
        k = client_call(m, &req, true, &resp);
        if (k < 0) {
                free(r);
                return k;
        }
        if (resp->result_case == MEMACCT__V1__RESPONSE__RESULT_IMPORT_REPLY &&
            report_from_wire(resp->import_reply, r) < 0) {
                memacct__v1__response__free_unpacked(resp, NULL);
                memacct_import_report_free(r);
                return client_error(m, -ENOMEM, "out of memory", NULL);
        }
        memacct__v1__response__free_unpacked(resp, NULL);
        *ret = r;
        return 0;
}

_public_ const memacct_import_result *memacct_import_report_counts(const memacct_import_report *r) {
        return r ? &r->counts : NULL;
}

_public_ unsigned memacct_import_report_kernel_limits(const memacct_import_report *r) {
        return r ? r->kernel_limits : 0;
}

_public_ uint32_t memacct_import_report_kept(const memacct_import_report *r) {
        return r ? r->kept : 0;
}

_public_ const memacct_kept_limits *memacct_import_report_get(const memacct_import_report *r, size_t i) {
        return r && i < r->n ? &r->v[i] : NULL;
}
