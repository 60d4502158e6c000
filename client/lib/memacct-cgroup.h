/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef MEMACCT_CGROUP_H
#define MEMACCT_CGROUP_H

/*
 * libmemacct and the kernel's memory cgroups: mirroring them as groups
 * (memacct_import_cgroups(), memacct_import_cgroups_report()), removing
 * the mirrors of cgroups that are gone (memacct_prune_mirrors()), and the
 * placement rules that send a kernel cgroup's processes to a group
 * (memacct_rule_*()). Part of memacct.h, which includes it where the types
 * it uses are declared; include memacct.h, not this file.
 */

#include "memacct.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What memacct_import_cgroups() did. */
typedef struct memacct_import_result {
        uint32_t created;   /* mirror groups created */
        uint32_t updated;   /* existing groups whose limits or mirror mark changed */
        uint32_t unchanged; /* mirrors already up to date */
} memacct_import_result;

/**
 * memacct_import_cgroups() - mirror the kernel's memory cgroups from the
 * cgroup @from (NULL or "": "/") as groups @under + cgroup path (NULL or
 * "": the daemon's [cgroup] prefix), limits mapped (memacctd(8),
 * CGROUPS). Root only. Idempotent.
 * @ret: the counts, or NULL
 *
 * Return: 0; -EPERM (not root); -ENOENT (no memory cgroup hierarchy, or no
 * cgroup @from); -EINVAL (a bad path).
 */
int memacct_import_cgroups(memacct *m, const char *from, const char *under, memacct_import_result *ret);

/* One mirror of a vanished kernel cgroup that memacct_prune_mirrors() looked at. */
typedef struct memacct_pruned_group {
        const char *group; /* the mirror group */
        const char *why;   /* NULL: removed; else why it stays ("sessions are attached", ...) */
} memacct_pruned_group;

typedef struct memacct_pruned memacct_pruned;

/**
 * memacct_prune_mirrors() - remove the mirrors of kernel cgroups that no
 * longer exist, deepest first (root only); one with sessions attached,
 * kept charges or groups below it that are not mirrors stays. Saved by
 * the daemon before it answers.
 * @ret: what was removed, then what was kept and why (free with
 *       memacct_pruned_free()), or NULL
 *
 * Return: 0; -EPERM (not root); -ENOENT (the daemon has no cgroup mirror);
 * -ENOSPC (the daemon cannot save its state); -ENOMEM.
 */
int memacct_prune_mirrors(memacct *m, memacct_pruned **ret);

/** memacct_pruned_size() - the number of groups in @list. */
size_t memacct_pruned_size(const memacct_pruned *list);

/** memacct_pruned_get() - group @i of @list (the removed first), NULL when out of range; owned by @list. */
const memacct_pruned_group *memacct_pruned_get(const memacct_pruned *list, size_t i);

/** memacct_pruned_free() - free @list; accepts NULL. Return: NULL. */
memacct_pruned *memacct_pruned_free(memacct_pruned *list);

/* Flags of memacct_import_cgroups_report(). */
#define MEMACCT_IMPORT_RESET_LIMITS 0x01u /* give user-set limits on the mirrors back to the kernel */

/* One mirror whose user-set limits an import kept: ours.set names them. */
typedef struct memacct_kept_limits {
        const char *group;
        memacct_limits ours;   /* the values kept */
        memacct_limits kernel; /* the kernel's values of the same limits */
} memacct_kept_limits;

/* What an import did, read by the accessors below; opaque, so that it may grow. */
typedef struct memacct_import_report memacct_import_report;

/**
 * memacct_import_cgroups_report() - memacct_import_cgroups() with @flags
 * (MEMACCT_IMPORT_RESET_LIMITS) and a report: the counts, the limits the
 * kernel owns on the daemon's host, and the limits a user set on a mirror
 * that the import kept (memacct(7), KERNEL CGROUP MIRRORS), on the socket
 * and the bus alike.
 * @ret: the report, freed with memacct_import_report_free()
 *
 * Return: as memacct_import_cgroups(); -ENOMEM.
 */
int memacct_import_cgroups_report(memacct *m, const char *from, const char *under, unsigned flags,
                                  memacct_import_report **ret);
/** memacct_import_report_counts() - created, updated, unchanged; owned by @r. */
const memacct_import_result *memacct_import_report_counts(const memacct_import_report *r);
/** memacct_import_report_kernel_limits() - MEMACCT_LIMIT_* bits the kernel owns; 0: unknown. */
unsigned memacct_import_report_kernel_limits(const memacct_import_report *r);
/** memacct_import_report_kept() - user-set limits kept, over all groups. */
uint32_t memacct_import_report_kept(const memacct_import_report *r);
/** memacct_import_report_get() - kept limits of group @i, NULL when out of range; owned by @r. */
const memacct_kept_limits *memacct_import_report_get(const memacct_import_report *r, size_t i);
/** memacct_import_report_free() - free @r; accepts NULL. Return: NULL. */
memacct_import_report *memacct_import_report_free(memacct_import_report *r);

/*
 * Placement rules (memacct(7), PLACEMENT RULES): an attach to "" or
 * "auto" of a process whose kernel memory cgroup is a rule's cgroup or
 * below it (by whole components: "/a" covers "/a/b", not "/ab") goes to
 * the rule's group; the explicit rule with the longest cgroup wins, and
 * with none the mirrors decide: the cgroup's own, else its nearest
 * mirrored ancestor's. The mirrors are listed as rules with @mirror set.
 *
 * A memacct_rule is only ever the library's (memacct_rules_get() returns
 * a pointer into the list), so fields are added at its end only.
 */
typedef struct memacct_rule {
        const char *cgroup; /* a kernel cgroup path, "/..." */
        const char *group;  /* a group path */
        int mirror;         /* 1: a kernel cgroup mirror, not removable as a rule; 0: an explicit rule */
        int confine;        /* 1: the rule confines its cgroup's processes to its group (socket only; 0 on a bus) */
} memacct_rule;

/* memacct_rule_add_flags()'s @flags. */
#define MEMACCT_RULE_CONFINE 1u /* the cgroup is a container's: its processes are confined to the group */

typedef struct memacct_rules memacct_rules;

/**
 * memacct_rule_add() - the rule @cgroup -> @group (which must exist);
 * saved by the daemon before it answers. A cgroup has one rule: the same
 * rule again succeeds, another is -EEXIST (remove the old one first). Root
 * only. Return: 0; -EPERM; -ENOENT (no group @group); -EINVAL (not a
 * cgroup path); -EEXIST; -ENOSPC (too many rules).
 */
int memacct_rule_add(memacct *m, const char *cgroup, const char *group);

/**
 * memacct_rule_add_flags() - memacct_rule_add() with @flags:
 * MEMACCT_RULE_CONFINE confines every process of @cgroup to @group,
 * whatever its uid (memacct(7), CONFINEMENT), as the OCI hook does for a
 * container; such a rule is refused (-EINVAL) for "/" and for a cgroup
 * that holds the daemon. Unknown flags are -EINVAL.
 */
int memacct_rule_add_flags(memacct *m, const char *cgroup, const char *group, unsigned flags);

/**
 * memacct_rule_remove() - remove the explicit rule of @cgroup. Root only.
 * Return: 0; -EPERM; -ENOENT; -EINVAL; -EBUSY (@cgroup has no explicit
 * rule but a mirror: remove its group, or prune it once the cgroup is gone).
 */
int memacct_rule_remove(memacct *m, const char *cgroup);

/**
 * memacct_rule_list() - the rules whose group the caller may read (root:
 * every rule), the explicit ones and the kernel cgroup mirrors (mirror
 * set), sorted by cgroup, in *@ret (free with memacct_rules_free()).
 * Return: 0; -ENOMEM.
 */
int memacct_rule_list(memacct *m, memacct_rules **ret);

/** memacct_rules_size() - the number of rules in @list. */
size_t memacct_rules_size(const memacct_rules *list);

/** memacct_rules_get() - rule @i of @list, NULL when out of range; owned by @list. */
const memacct_rule *memacct_rules_get(const memacct_rules *list, size_t i);

/** memacct_rules_free() - free @list; accepts NULL. Return: NULL. */
memacct_rules *memacct_rules_free(memacct_rules *list);

#ifdef __cplusplus
}
#endif

#endif /* MEMACCT_CGROUP_H */
