/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Placement rules: a table "kernel cgroup path -> group path" that an
 * Attach of "" or "auto" consults before the cgroup mirror, so that a
 * container's processes land in the group made for it (memacct(7),
 * PLACEMENT RULES). The rule whose cgroup is the longest prefix, by whole
 * path components, of the process's cgroup wins: "/a" covers "/a" and
 * "/a/b", never "/ab".
 *
 * The table is saved in its own file, <state-dir>/rules, replaced
 * atomically (a temporary file, fsync, rename, fsync of the directory:
 * persist_save()'s pattern) on every change, before the change is
 * answered. Its own file rather than lines of the state file: rules are
 * few and rarely change, so they need neither the journal nor group
 * commit, and the state file's format stays as it is.
 *
 * Thread-safety: every call takes the table's mutex; any thread.
 */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define PLACEMENT_FILE "rules"
#define PLACEMENT_FILE_BAD "rules.bad"
/* A bound, like every other input: rules are one per container. */
#define PLACEMENT_RULES_MAX 65536
/* The bytes of a kernel cgroup path in a rule, NUL excluded. */
#define PLACEMENT_CGROUP_MAX 4096

typedef struct Placement Placement;

/** placement_new() - an empty table, saved in @dir (NULL: never saved). Return: 0, -ENOMEM. */
int placement_new(const char *dir, Placement **ret);
Placement *placement_free(Placement *pl);

/**
 * placement_load() - replace the table by @dir/rules and save there from
 * now on. A missing file is an empty table; a damaged one is renamed to
 * rules.bad and the table is empty. Before other threads use @pl.
 * Logs what it found. Return: the rules loaded; -ENOMEM, another -errno.
 */
int placement_load(Placement *pl, const char *dir);

/**
 * placement_cgroup_check() - is @cgroup a kernel cgroup path a rule can
 * name: absolute, no empty, "." or ".." component, no trailing "/" (but
 * "/" itself), no control character? Return: 0, -EINVAL, -ENAMETOOLONG.
 */
int placement_cgroup_check(const char *cgroup);

/**
 * placement_covers() - is @rule a prefix of @cgroup by whole components
 * ("/" covers everything)? Pure.
 */
bool placement_covers(const char *rule, const char *cgroup);

/* What a rule does besides placing (placement_add()'s @flags). */
typedef enum PlacementFlags {
        /* The cgroup is a container's: its processes are confined to the
         * group, whatever their uid (service/authz.h). */
        PLACEMENT_CONFINE = 1 << 0,
        _PLACEMENT_FLAGS_ALL = PLACEMENT_CONFINE,
} PlacementFlags;

/**
 * placement_add() - the rule @cgroup -> @group with @flags, saved before
 * it returns. One cgroup is placed by one rule: a rule of @cgroup that
 * says something else is left as it is. Paths checked by the caller.
 * Return: 0 (new), 1 (the same rule was there); -EEXIST (another rule of
 * @cgroup), -ENOSPC (PLACEMENT_RULES_MAX), -ENOMEM, or the -errno of the
 * save (nothing changed then).
 */
int placement_add(Placement *pl, const char *cgroup, const char *group, unsigned flags);

/**
 * placement_rule_of() - the rule of @cgroup exactly: its group and flags.
 * Return: 0, -ENOENT, -ENAMETOOLONG (@size too small).
 */
int placement_rule_of(Placement *pl, const char *cgroup, char *ret_group, size_t size, unsigned *ret_flags);

/**
 * placement_confinement() - the group of the confining rule nearest above
 * @cgroup (or of @cgroup itself), into @ret_group. Return: 0; -ENOENT
 * (no confining rule covers it); -ENAMETOOLONG.
 */
int placement_confinement(Placement *pl, const char *cgroup, char *ret_group, size_t size);

/** placement_confining() - how many rules confine: 0 spares the look-ups. Any thread. */
size_t placement_confining(Placement *pl);

/**
 * placement_remove() - remove the rule of @cgroup, saved before it
 * returns. Return: 0; -ENOENT (no such rule); the -errno of the save
 * (nothing changed then).
 */
int placement_remove(Placement *pl, const char *cgroup);

/**
 * placement_match() - the group of the rule that covers @cgroup with the
 * longest cgroup, into @ret_group (@size bytes), and optionally that
 * rule's cgroup into @ret_rule (@rule_size bytes).
 * Return: 0; -ENOENT (no rule covers it), -ENAMETOOLONG.
 */
int placement_match(Placement *pl, const char *cgroup, char *ret_group, size_t size, char *ret_rule,
                    size_t rule_size);

/* Called for each rule (with its PlacementFlags), sorted by cgroup; a negative return stops the walk. */
typedef int (*PlacementFn)(void *userdata, const char *cgroup, const char *group, unsigned flags);

/** placement_list() - call @fn for each rule, under the table's mutex. Return: 0 or @fn's error. */
int placement_list(Placement *pl, PlacementFn fn, void *userdata);

/** placement_count() - the rules now. */
size_t placement_count(Placement *pl);

/**
 * placement_parse() - the rules file text @text (@size bytes) into @pl's
 * table, replacing it. Pure but for @pl; for tests and fuzzing.
 * Return: the rules; -EBADMSG (damaged), -ENOSPC, -ENOMEM.
 */
int placement_parse(Placement *pl, const char *text, size_t size);

/**
 * placement_proc_cgroup() - the memory cgroup of @pid from
 * /proc/PID/cgroup: the line of the v1 "memory" controller when there is
 * one, else the unified ("0::") line. The OCI hook reads the same lines
 * the same way. Return: 0; -ESRCH (no such process), -ENOENT (no line),
 * -ENAMETOOLONG, another -errno.
 */
int placement_proc_cgroup(pid_t pid, char *buf, size_t size);
