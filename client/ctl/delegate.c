/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Delegation from the command line: create and set take owner=UID|USER
 * beside the limits. A user name is looked up here, in this machine's
 * password database (the daemon only knows uids); a number is a uid as it
 * is, so a uid without a name can be delegated to. Every argument is
 * checked before connecting, as every verb does.
 */

#include <errno.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "delegate.h"
#include "macro.h"
#include "limit-names.h"
#include "options.h"
#include "output.h"
#include "parse-size.h"
#include "regions.h"

int owner_parse(const char *s, uint32_t *ret) {
        struct passwd *pw;
        char *end;
        unsigned long v;

        if (!*s)
                return -EINVAL;
        if (strspn(s, "0123456789") == strlen(s)) {
                errno = 0;
                v = strtoul(s, &end, 10);
                if (errno != 0 || *end || v >= MEMACCT_NO_OWNER)
                        return -EINVAL;
                *ret = (uint32_t) v;
                return 0;
        }
        pw = getpwnam(s);
        if (!pw || pw->pw_uid == (uid_t) MEMACCT_NO_OWNER)
                return -EINVAL;
        *ret = (uint32_t) pw->pw_uid;
        return 0;
}

const char *owner_name(uint32_t uid, char *buf, size_t size) {
        struct passwd *pw = getpwuid((uid_t) uid);

        snprintf(buf, size, "%s", pw ? pw->pw_name : "-");
        return buf;
}

/* KEY=SIZE, owner=UID|USER or a region's setting into @l, @owner or
 * @rs. Return: 0 or EXIT_USAGE. */
static int parse_setting(const char *s, memacct_limits *l, uint32_t *owner, RegionSettings **rs) {
        const char *eq = strchr(s, '=');
        unsigned bit;
        uint64_t v;
        int r;

        r = region_setting_parse(s, rs);
        if (r != 0)
                return r == 1 ? 0 : r;
        if (!eq)
                return usage_error("expected KEY=SIZE or owner=USER, got '%s'", s);
        if ((size_t) (eq - s) == 5 && strncmp(s, "owner", 5) == 0) {
                if (*owner != MEMACCT_NO_OWNER)
                        return usage_error("owner= given twice");
                if (owner_parse(eq + 1, owner) < 0)
                        return usage_error("unknown user or invalid uid in '%s'", s);
                return 0;
        }
        bit = limit_by_name(s, (size_t) (eq - s));
        if (bit == 0)
                return usage_error("unknown key in '%s' (keys: max high low min owner, REGION.max, dmem.max ...)", s);
        if (parse_size(eq + 1, &v) < 0)
                return usage_error("invalid size in '%s'", s);
        limits_set(l, bit, v);
        return 0;
}

int delegate_verb_main(memacct **mp, int argc, char **argv, bool force, int (*connect)(memacct **ret)) {
        _cleanup_(region_settings_freep) RegionSettings *rs = NULL;
        bool create = strcmp(argv[0], "create") == 0;
        uint32_t owner = MEMACCT_NO_OWNER;
        memacct_limits l = {};
        int r = 0;

        for (int i = 2; r == 0 && i < argc; i++)
                r = parse_setting(argv[i], &l, &owner, &rs);
        if (r != 0)
                return r;
        if (rs && create)
                return usage_error("create: set a region's limits with set, once the group exists");
        r = connect(mp);
        if (r != 0)
                return r;
        if (create) {
                r = memacct_create_group(*mp, argv[1], l.set ? &l : NULL, owner);
                return r < 0 ? fail(*mp, "create", argv[1], r) : 0;
        }
        if (l.set) {
                r = memacct_set_limits(*mp, argv[1], &l,
                                       (force ? MEMACCT_FORCE : 0) | (arg.no_wait ? MEMACCT_NO_WAIT : 0));
                if (r < 0)
                        return fail(*mp, "set", argv[1], r);
        }
        if (rs) {
                r = region_settings_apply(*mp, argv[1], rs);
                if (r != 0)
                        return r;
        }
        if (owner != MEMACCT_NO_OWNER) {
                r = memacct_set_owner(*mp, argv[1], owner);
                if (r < 0)
                        return fail(*mp, l.set ? "set owner (the limits are set)" : "set owner", argv[1], r);
        }
        return 0;
}
