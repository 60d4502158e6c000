/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memacctctl's rule verbs: add, remove and list the daemon's placement
 * rules, the explicit ones and the kernel cgroup mirrors (kind mirror). As every verb, the arguments are checked before connecting: a
 * cgroup that is not absolute is a usage error (exit status 2), whether
 * or not the daemon runs; what else a cgroup path may not be, the daemon
 * says.
 */

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "output.h"
#include "rules.h"

/* @s as a JSON string body: quotes, backslashes and control bytes escaped. */
static void json_string(FILE *out, const char *s) {
        fputc('"', out);
        for (; *s; s++) {
                unsigned char c = (unsigned char) *s;

                if (c == '"' || c == '\\')
                        fprintf(out, "\\%c", c);
                else if (c < 0x20)
                        fprintf(out, "\\u%04x", c);
                else
                        fputc(c, out);
        }
        fputc('"', out);
}

int rule_print_list(const memacct_rules *rules, bool json, FILE *out) {
        size_t n = memacct_rules_size(rules);

        if (json)
                fputc('[', out);
        for (size_t i = 0; i < n; i++) {
                const memacct_rule *r = memacct_rules_get(rules, i);

                if (!json) {
                        /* Two columns for an explicit rule, as scripts and
                         * the OCI hook read them; a third names a mirror or
                         * a confining rule. */
                        fprintf(out, "%s\t%s%s\n", r->cgroup, r->group,
                                r->mirror ? "\tmirror" : r->confine ? "\tconfine" : "");
                        continue;
                }
                fputs(i ? ",{\"cgroup\":" : "{\"cgroup\":", out);
                json_string(out, r->cgroup);
                fputs(",\"group\":", out);
                json_string(out, r->group);
                fprintf(out, ",\"mirror\":%s,\"confine\":%s}", r->mirror ? "true" : "false",
                        r->confine ? "true" : "false");
        }
        if (json)
                fputs("]\n", out);
        return fflush(out) == 0 && !ferror(out) ? 0 : 1;
}

static int check_cgroup(const char *cgroup) {
        if (cgroup[0] != '/')
                return usage_error("rule: '%s' is not a kernel cgroup path (it starts with '/')", cgroup);
        return 0;
}

int rule_verb_main(memacct **mp, int argc, char **argv, int (*connect)(memacct **ret)) {
        const char *sub = argc > 1 ? argv[1] : NULL;
        memacct_rules *rules = NULL;
        int r;

        if (!sub)
                return usage_error("rule: add, remove or list?");
        if (arg.confine && strcmp(sub, "add") != 0)
                return usage_error("rule %s: --confine is for rule add", sub);
        if (strcmp(sub, "add") == 0) {
                if (argc != 4)
                        return usage_error("rule add: [--confine] CGROUP GROUP");
        } else if (strcmp(sub, "remove") == 0) {
                if (argc != 3)
                        return usage_error("rule remove: CGROUP");
        } else if (strcmp(sub, "list") == 0) {
                if (argc != 2)
                        return usage_error("rule list: too many arguments");
        } else
                return usage_error("rule: unknown subcommand '%s' (add, remove, list)", sub);
        if (argc > 2 && (r = check_cgroup(argv[2])) != 0)
                return r;

        r = connect(mp);
        if (r != 0)
                return r;
        if (strcmp(sub, "add") == 0) {
                r = memacct_rule_add_flags(*mp, argv[2], argv[3], arg.confine ? MEMACCT_RULE_CONFINE : 0);
                return r < 0 ? fail(*mp, "rule add", argv[2], r) : 0;
        }
        if (strcmp(sub, "remove") == 0) {
                r = memacct_rule_remove(*mp, argv[2]);
                return r < 0 ? fail(*mp, "rule remove", argv[2], r) : 0;
        }
        r = memacct_rule_list(*mp, &rules);
        if (r < 0)
                return fail(*mp, "rule list", "", r);
        r = rule_print_list(rules, arg.json, stdout);
        memacct_rules_free(rules);
        return r;
}
