/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Kernel cgroup mirror
 *
 * One memory hierarchy exists at a time (the kernel binds a controller to
 * one hierarchy): the v1 memory controller's, or cgroup2's when memory is
 * enabled there. libcgroup finds it (cgroup_init(),
 * cgroup_get_subsys_mount_point()), walks it (cgroup_walk_tree_*()) and
 * reads a process's cgroup (cgroup_get_current_controller_path()); the
 * few files a mirror needs are read directly, which keeps that part
 * testable on a fake tree and cheap to poll (cgroup_get_cgroup() reads
 * every file of every controller).
 *
 * Invariants: a mirror is the group @under + cgroup path; the table
 * `mirrors` holds, for every group this object marked as a mirror, the
 * cgroup it mirrors, and is what the sampler reads. Everything runs under
 * `lock`: libcgroup's own structures are not for sharing between threads.
 * Mirrors are not persisted as such: after a restart, import again
 * ([cgroup] import-at-start). The limits a user set on a mirror
 * (group_user_limits(), persisted with the group) are the user's: an
 * import keeps them and takes the kernel's value only for the others,
 * until an import with CGROUP_IMPORT_RESET_LIMITS gives them back.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libcgroup.h>
#include <mntent.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/group.h"
#include "cgroup/mirror-internal.h"
#include "base/log.h"
#include "cgroup/placement.h"

/* ---- paths ---- */

/* @dir + @cgroup ("/" for the root) as a directory name. */
static int cgroup_dir(CgroupMirror *cs, const char *cgroup, char *buf, size_t size) {
        if ((size_t) snprintf(buf, size, "%s%s", cs->mount, strcmp(cgroup, "/") == 0 ? "" : cgroup) >= size)
                return -ENAMETOOLONG;
        return 0;
}

/* The group mirroring @cgroup: @under + @cgroup. */
int cgroup_mirror_path(const char *under, const char *cgroup, char *buf, size_t size) {
        int n;

        if (strcmp(cgroup, "/") == 0)
                n = snprintf(buf, size, "%s", under);
        else if (strcmp(under, "/") == 0)
                n = snprintf(buf, size, "%s", cgroup);
        else
                n = snprintf(buf, size, "%s%s", under, cgroup);
        return n < 0 || (size_t) n >= size ? -ENAMETOOLONG : 0;
}

/* ---- set-up ---- */

/* Where cgroup2 is mounted and whether memory is enabled there. */
static void describe_cgroup2(CgroupMirror *cs, char *buf, size_t size) {
        struct mntent *me;
        FILE *f;

        buf[0] = 0;
        f = setmntent("/proc/self/mounts", "re");
        if (!f)
                return;
        while ((me = getmntent(f))) {
                char ctl[1024];

                if (strcmp(me->mnt_type, "cgroup2") != 0 || (cs->mount && strcmp(me->mnt_dir, cs->mount) == 0))
                        continue;
                if (cgroup_read_file(me->mnt_dir, "cgroup.controllers", ctl, sizeof(ctl)) < 0)
                        ctl[0] = 0;
                ctl[strcspn(ctl, "\n")] = 0;
                /* A log line: long names are cut, never the buffer overrun. */
                snprintf(buf, size, "; cgroup2 at %.64s has no memory controller (controllers: %.128s)",
                         me->mnt_dir, *ctl ? ctl : "none");
                break;
        }
        endmntent(f);
}

int cgroup_mirror_new(MemCore *core, CgroupNotifyFn notify, void *userdata, const char *mount_root,
                      const char *prefix,
                    bool auto_create, CgroupMirror **ret) {
        CgroupMirror *cs = calloc(1, sizeof(*cs));
        char *mp = NULL, v2note[300], probe[PATH_MAX];
        struct stat st;

        if (!cs)
                return -ENOMEM;
        cs->core = core;
        cs->notify = notify;
        cs->notify_userdata = userdata;
        pthread_mutex_init(&cs->lock, NULL);
        cs->auto_create = auto_create;
        cs->prefix = strdup(prefix ? prefix : "/");
        if (!cs->prefix)
                return (void) cgroup_mirror_free(cs), -ENOMEM;
        if (mount_root) {
                cs->mount = strdup(mount_root);
                if (!cs->mount)
                        return (void) cgroup_mirror_free(cs), -ENOMEM;
        } else {
                int r = cgroup_init();

                if (r != 0)
                        snprintf(cs->describe, sizeof(cs->describe),
                                 "no cgroup hierarchy (libcgroup: %s)", cgroup_strerror(r));
                else {
                        cs->libcgroup = true;
                        if (cgroup_get_subsys_mount_point("memory", &mp) == 0 && mp) {
                                cs->mount = mp;
                        } else
                                snprintf(cs->describe, sizeof(cs->describe),
                                         "no memory cgroup hierarchy is mounted");
                }
        }
        if (cs->mount) {
                snprintf(probe, sizeof(probe), "%s/cgroup.controllers", cs->mount);
                cs->v2 = stat(probe, &st) == 0;
                v2note[0] = 0;
                if (!cs->v2 && !mount_root)
                        describe_cgroup2(cs, v2note, sizeof(v2note));
                snprintf(cs->describe, sizeof(cs->describe), "memory cgroup hierarchy at %s (cgroup %s)%s",
                         cs->mount, cs->v2 ? "v2" : "v1", v2note);
        }
        cgroup_dmem_find(cs, mount_root != NULL);
        if (cs->dmem) {
                size_t n = strlen(cs->describe);

                snprintf(cs->describe + n, sizeof(cs->describe) - n, "; dmem at %.200s", cs->dmem);
        }
        *ret = cs;
        return 0;
}

CgroupMirror *cgroup_mirror_free(CgroupMirror *cs) {
        if (!cs)
                return NULL;
        for (size_t i = 0; i < cs->nmirrors; i++) {
                free(cs->mirrors[i].group);
                free(cs->mirrors[i].cgroup);
        }
        free(cs->mirrors);
        free(cs->mount);
        free(cs->dmem);
        free(cs->prefix);
        pthread_mutex_destroy(&cs->lock);
        free(cs);
        return NULL;
}

bool cgroup_mirror_available(CgroupMirror *cs) {
        return cs && cs->mount;
}

const char *cgroup_mirror_describe(CgroupMirror *cs) {
        return cs->describe;
}

int cgroup_mirror_set_config(CgroupMirror *cs, const char *prefix, bool auto_create) {
        char *p = strdup(prefix ? prefix : "/");

        if (!p)
                return -ENOMEM;
        pthread_mutex_lock(&cs->lock);
        free(cs->prefix);
        cs->prefix = p;
        cs->auto_create = auto_create;
        pthread_mutex_unlock(&cs->lock);
        return 0;
}

/* ---- the mirror table ---- */

static int mirror_remember(CgroupMirror *cs, const char *group, const char *cgroup) {
        Mirror *v;
        char *g, *c;

        for (size_t i = 0; i < cs->nmirrors; i++)
                if (strcmp(cs->mirrors[i].group, group) == 0) {
                        if (strcmp(cs->mirrors[i].cgroup, cgroup) == 0)
                                return 0;
                        c = strdup(cgroup);
                        if (!c)
                                return -ENOMEM;
                        free(cs->mirrors[i].cgroup);
                        cs->mirrors[i].cgroup = c;
                        return 0;
                }
        v = realloc(cs->mirrors, (cs->nmirrors + 1) * sizeof(*v));
        if (!v)
                return -ENOMEM;
        cs->mirrors = v;
        g = strdup(group);
        c = strdup(cgroup);
        if (!g || !c) {
                free(g);
                free(c);
                return -ENOMEM;
        }
        cs->mirrors[cs->nmirrors++] = (Mirror) { .group = g, .cgroup = c };
        return 0;
}

/* ---- import ---- */

typedef struct PathList {
        char **v;
        size_t n;
} PathList;

static void path_list_done(PathList *l) {
        for (size_t i = 0; i < l->n; i++)
                free(l->v[i]);
        free(l->v);
        *l = (PathList) {};
}

static int path_list_add(PathList *l, const char *p) {
        char **v = realloc(l->v, (l->n + 1) * sizeof(*v));

        if (!v)
                return -ENOMEM;
        l->v = v;
        v[l->n] = strdup(p);
        if (!v[l->n])
                return -ENOMEM;
        l->n++;
        return 0;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* Every directory at and below @dir (a cgroup path @rel), by readdir: for a
 * mount given by the caller (tests), which libcgroup does not know. */
static int walk_readdir(CgroupMirror *cs, const char *rel, PathList *out) {
        char dir[PATH_MAX];
        struct dirent *de;
        DIR *d;
        int r;

        r = cgroup_dir(cs, rel, dir, sizeof(dir));
        if (r < 0)
                return r;
        d = opendir(dir);
        if (!d)
                return -errno;
        r = path_list_add(out, rel);
        while (r >= 0 && (de = readdir(d))) {
                char child[PATH_MAX];

                if (de->d_type != DT_DIR || strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if ((size_t) snprintf(child, sizeof(child), "%s/%s", strcmp(rel, "/") == 0 ? "" : rel,
                                      de->d_name) >= sizeof(child))
                        continue;
                r = walk_readdir(cs, child, out);
        }
        closedir(d);
        return r;
}

/* The same with libcgroup's walker: directories only (it returns files
 * too), paths made relative by stripping the mount point. */
static int walk_libcgroup(CgroupMirror *cs, const char *rel, PathList *out) {
        struct cgroup_file_info info;
        size_t mlen = strlen(cs->mount);
        void *h = NULL;
        int base, r;

        r = cgroup_walk_tree_begin("memory", rel, 0, &h, &info, &base);
        if (r != 0) {
                if (h)
                        cgroup_walk_tree_end(&h);
                /* Unknown controller: h stays NULL and end would crash. */
                return r == ECGROUPNOTEXIST ? -ENOENT : -EIO;
        }
        for (;;) {
                if (info.type == CGROUP_FILE_TYPE_DIR && strncmp(info.full_path, cs->mount, mlen) == 0) {
                        char p[PATH_MAX];
                        size_t n;

                        snprintf(p, sizeof(p), "%s", info.full_path + mlen);
                        n = strlen(p);
                        while (n > 1 && p[n - 1] == '/')
                                p[--n] = 0;
                        if (n == 0)
                                strcpy(p, "/");
                        r = path_list_add(out, p);
                        if (r < 0)
                                break;
                }
                r = cgroup_walk_tree_next(0, &h, &info, base);
                if (r == ECGEOF) {
                        r = 0;
                        break;
                }
                if (r != 0) {
                        r = -EIO;
                        break;
                }
        }
        cgroup_walk_tree_end(&h);
        return r;
}

/* Create the missing groups above @path, plainly. Caller holds cs->lock. */
int cgroup_make_parents(CgroupMirror *cs, const char *path) {
        char buf[MEM_PATH_MAX + 1];
        char *s;
        int r;

        snprintf(buf, sizeof(buf), "%s", path);
        for (s = strchr(buf + 1, '/'); s; s = strchr(s + 1, '/')) {
                *s = 0;
                r = group_create(cs->core, buf, 0);
                if (r == 0)
                        mirror_notify(cs, EVENT_GROUP_ADDED, buf, 0);
                *s = '/';
                if (r < 0 && r != -EEXIST)
                        return r;
        }
        return 0;
}

const char *cgroup_errno_text(int r) {
        switch (r) {
        case -EMLINK: return "too deep";
        case -ENOSPC: return "group limit reached";
        case -ENAMETOOLONG: return "path too long";
        default: return strerror(-r);
        }
}

/* The limits @l names whose values differ from @info's (MemLimitMask). */
static unsigned limits_differ(const MemLimits *l, const MemGroupInfo *info) {
        unsigned m = 0;

        if ((l->set & MEM_LIMIT_MAX) && l->max != info->max)
                m |= MEM_LIMIT_MAX;
        if ((l->set & MEM_LIMIT_HIGH) && l->high != info->high)
                m |= MEM_LIMIT_HIGH;
        if ((l->set & MEM_LIMIT_LOW) && l->low != info->low)
                m |= MEM_LIMIT_LOW;
        if ((l->set & MEM_LIMIT_MIN) && l->min != info->min)
                m |= MEM_LIMIT_MIN;
        return m;
}

/* Tell @run of the user-set limits @kept of @group, ours in @info, the kernel's in @l. */
static void report_kept(ImportRun *run, const char *group, unsigned kept, const MemGroupInfo *info,
                        const MemLimits *l) {
        MemLimits ours = { .set = kept, .max = info->max, .high = info->high, .low = info->low, .min = info->min };
        MemLimits kernel = *l;

        run->kept += (unsigned) __builtin_popcount(kept);
        kernel.set = kept;
        if (run->fn)
                run->fn(run->userdata, group, kept, &ours, &kernel);
}

/* Mirror one cgroup (mirror-internal.h). */
int cgroup_import_one(CgroupMirror *cs, ImportRun *run, const char *cgroup, const char *group) {
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        char dir[PATH_MAX];
        MemLimits l, take;
        MemGroupInfo info;
        unsigned user, kept;
        bool reset = false;
        int r, ret = 0;

        r = cgroup_dir(cs, cgroup, dir, sizeof(dir));
        if (r < 0)
                return r;
        r = cgroup_read_limits(dir, cs->v2, &l);
        if (r < 0)
                return r;
        r = group_get(cs->core, group, &g);
        if (r == -ENOENT) {
                r = group_create(cs->core, group, 0);
                if (r < 0)
                        return r;
                mirror_notify(cs, EVENT_GROUP_ADDED, group, 0);
                r = group_get(cs->core, group, &g);
                ret = 2;
        }
        if (r < 0)
                return r;
        group_read(cs->core, g, NULL, false, &info);
        user = group_user_limits(g);
        if ((run->flags & CGROUP_IMPORT_RESET_LIMITS) && user) {
                /* Given back: the kernel owns them again, from this import on. */
                group_set_user_limits(g, 0);
                user = 0;
                reset = true;
        }
        take = l;
        take.set &= ~user;
        kept = l.set & user & limits_differ(&l, &info);
        if (limits_differ(&take, &info) || !info.mirror || reset) {
                /* The kernel's word is final for what it owns: a max below
                 * our usage is taken (force), like a memory.max write. */
                (void) group_set_limits(g, &take, true);
                group_set_mirror(g, true);
                if (take.set)
                        mirror_notify(cs, EVENT_LIMITS_CHANGED, group, take.set);
                if (ret == 0)
                        ret = 1;
        }
        if (kept)
                report_kept(run, group, kept, &info, &l);
        r = mirror_remember(cs, group, cgroup);
        if (r < 0)
                return r;
        /* A first sample, so that a new mirror does not show 0 for an interval. */
        {
                uint64_t u;

                if (cgroup_read_usage(dir, cs->v2, &u) == 0)
                        group_set_kernel_current(g, u);
        }
        /* Its device regions: a cgroup whose dmem files cannot be read
         * keeps its memory mirror, and says why once. */
        r = cgroup_dmem_import_one(cs, cgroup, g);
        if (r < 0)
                log_warning("cgroup %s: dmem not mirrored: %s", cgroup, cgroup_errno_text(r));
        else if (r > 0 && ret == 0)
                ret = 1;
        return ret;
}

static int check_path(const char *what, const char *path, Refusal *rf) {
        MemPathError why = MEM_PATH_OK;

        if (mem_path_check(path, UINT32_MAX, &why) < 0)
                return refusal_set(rf, -EINVAL, "%s %s: %s", what, path, mem_path_error_to_string(why));
        return 0;
}

static int import_locked(CgroupMirror *cs, const char *from, const char *under, ImportRun *run,
                         CgroupCounts *ret, Refusal *rf) {
        CgroupCounts counts = {};
        PathList list = {};
        char skip[PATH_MAX] = "";
        int r;

        if (!cs->mount)
                return refusal_set(rf, -ENOENT, "cannot import: %s", cs->describe);
        if (!from || !*from)
                from = "/";
        if (!under || !*under)
                under = cs->prefix;
        r = check_path("cgroup", from, rf);
        if (r < 0)
                return r;
        r = check_path("group", under, rf);
        if (r < 0)
                return r;

        {
                char dir[PATH_MAX];
                struct stat st;

                if (cgroup_dir(cs, from, dir, sizeof(dir)) < 0 || stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
                        return refusal_set(rf, -ENOENT, "cgroup %s: no such cgroup in %s", from,
                                       cs->mount);
        }
        r = cgroup_dmem_import_regions(cs);
        if (r < 0)
                log_warning("dmem regions of %s not mirrored: %s", cs->dmem, cgroup_errno_text(r));
        r = cs->libcgroup ? walk_libcgroup(cs, from, &list) : walk_readdir(cs, from, &list);
        if (r == -ENOENT || (r >= 0 && list.n == 0)) {
                path_list_done(&list);
                return refusal_set(rf, -ENOENT, "cgroup %s: no such cgroup in %s", from, cs->mount);
        }
        if (r < 0) {
                path_list_done(&list);
                return refusal_set(rf, r, "cgroup %s: cannot walk %s: %s", from, cs->mount,
                               strerror(-r));
        }
        /* Sorted, a parent comes before its children (it is their prefix). */
        qsort(list.v, list.n, sizeof(*list.v), cmp_str);

        for (size_t i = 0; i < list.n; i++) {
                const char *cg = list.v[i];
                char group[MEM_PATH_MAX + 1];
                size_t n = strlen(skip);

                if (n && strncmp(cg, skip, n) == 0 && cg[n] == '/')
                        continue; /* below a skipped cgroup */
                r = cgroup_mirror_path(under, cg, group, sizeof(group));
                if (r >= 0)
                        r = mem_path_check(group, UINT32_MAX, NULL);
                if (r >= 0 && i == 0)
                        r = cgroup_make_parents(cs, group);
                if (r >= 0)
                        r = cgroup_import_one(cs, run, cg, group);
                if (r < 0) {
                        /* Not an error of the request (the rest is mirrored):
                         * logged here, the only place that knows which. */
                        log_warning("cgroup %s: not mirrored (%s), nor anything below it", cg,
                                    r == -EINVAL ? "not a valid group name" : cgroup_errno_text(r));
                        snprintf(skip, sizeof(skip), "%s", cg);
                        continue;
                }
                if (r == 2)
                        counts.created++;
                else if (r == 1)
                        counts.updated++;
                else
                        counts.unchanged++;
        }
        path_list_done(&list);
        counts.kept = run->kept;
        counts.kernel_owned = cgroup_mirror_kernel_limits(cs);
        *ret = counts;
        return (int) (counts.created + counts.updated);
}

int cgroup_mirror_import_with(CgroupMirror *cs, const char *from, const char *under, unsigned flags,
                            CgroupKeptFn fn, void *userdata, CgroupCounts *ret, Refusal *rf) {
        ImportRun run = { .flags = flags, .fn = fn, .userdata = userdata };
        int r;

        pthread_mutex_lock(&cs->lock);
        r = import_locked(cs, from, under, &run, ret, rf);
        pthread_mutex_unlock(&cs->lock);
        return r;
}

int cgroup_mirror_import(CgroupMirror *cs, const char *from, const char *under, CgroupCounts *ret,
                       Refusal *rf) {
        return cgroup_mirror_import_with(cs, from, under, 0, NULL, NULL, ret, rf);
}

unsigned cgroup_mirror_kernel_limits(CgroupMirror *cs) {
        if (!cs || !cs->mount)
                return 0;
        /* What cgroup_read_limits() reads: v1 has no high and no min. */
        return cs->v2 ? MEM_LIMIT_MAX | MEM_LIMIT_HIGH | MEM_LIMIT_LOW | MEM_LIMIT_MIN
                      : MEM_LIMIT_MAX | MEM_LIMIT_LOW;
}

int cgroup_mirror_pid_cgroup(CgroupMirror *cs, pid_t pid, char *buf, size_t size) {
        char *lp = NULL;
        int r = -ENOENT;

        pthread_mutex_lock(&cs->lock); /* libcgroup's structures are not for sharing */
        if (cs->libcgroup && cgroup_get_current_controller_path(pid, "memory", &lp) == 0 && lp)
                r = (size_t) snprintf(buf, size, "%s", *lp ? lp : "/") >= size ? -ENAMETOOLONG : 0;
        pthread_mutex_unlock(&cs->lock);
        free(lp);
        if (r == -ENOENT)
                r = placement_proc_cgroup(pid, buf, size); /* the placement rules read it alike */
        return r;
}

void cgroup_mirror_sample(void *userdata) {
        CgroupMirror *cs = userdata;

        pthread_mutex_lock(&cs->lock);
        cs->unreadable = 0;
        for (size_t i = 0; i < cs->nmirrors; i++) {
                _cleanup_(group_unrefp) MemGroup *g = NULL;
                char dir[PATH_MAX];
                uint64_t u;

                if (group_get(cs->core, cs->mirrors[i].group, &g) < 0)
                        continue; /* removed: forgotten below at the next import */
                if (cgroup_dir(cs, cs->mirrors[i].cgroup, dir, sizeof(dir)) < 0 ||
                    cgroup_read_usage(dir, cs->v2, &u) < 0) {
                        cs->unreadable++;
                        continue; /* the cgroup is gone: the last sample stays */
                }
                group_set_kernel_current(g, u);
                (void) cgroup_dmem_sample_one(cs, cs->mirrors[i].cgroup, g);
        }
        pthread_mutex_unlock(&cs->lock);
}

size_t cgroup_mirror_unreadable(CgroupMirror *cs) {
        size_t n;

        pthread_mutex_lock(&cs->lock);
        n = cs->unreadable;
        pthread_mutex_unlock(&cs->lock);
        return n;
}

/* Deepest first, so that a mirror's mirrored children go before it. */
static int cmp_mirror_deepest(const void *a, const void *b) {
        return strcmp(((const Mirror *) b)->group, ((const Mirror *) a)->group);
}

/* Is a mirror among the first @n of cs->mirrors below the group @path? */
static bool mirror_below(CgroupMirror *cs, size_t n, const char *path) {
        size_t len = strlen(path);

        for (size_t j = 0; j < n; j++)
                if (strncmp(cs->mirrors[j].group, path, len) == 0 && cs->mirrors[j].group[len] == '/')
                        return true;
        return false;
}

/* Why the mirror @g of a vanished cgroup stays; NULL: it may go. The
 * mirrors kept so far are the first @kept of cs->mirrors: deepest first,
 * they hold every kept mirror below @g (a cgroup below a vanished one has
 * vanished too), so a child that stays is told apart from one that is no
 * mirror. */
static const char *prune_blocker(CgroupMirror *cs, MemGroup *g, size_t kept) {
        MemGroupInfo info;

        group_read(cs->core, g, NULL, false, &info);
        if (info.nr_attached)
                return "sessions are attached";
        for (unsigned k = 0; k < _MEM_STAT_MAX; k++)
                if (info.kept[k])
                        return "it holds kept charges";
        if (info.nr_children)
                return mirror_below(cs, kept, g->path) ? "a mirror below it stays"
                                                       : "it has groups below it that are not mirrors";
        return NULL;
}

int cgroup_mirror_prune(CgroupMirror *cs, CgroupPruneFn fn, void *userdata) {
        size_t keep = 0;
        int removed = 0;

        pthread_mutex_lock(&cs->lock);
        if (cs->nmirrors > 1) /* no table yet before the first mirror */
                qsort(cs->mirrors, cs->nmirrors, sizeof(*cs->mirrors), cmp_mirror_deepest);
        for (size_t i = 0; i < cs->nmirrors; i++) {
                _cleanup_(group_unrefp) MemGroup *g = NULL;
                Mirror *mi = &cs->mirrors[i];
                const char *why = NULL;
                char dir[PATH_MAX];
                struct stat st;
                bool drop = false, gone = false;

                if (!cs->mount || cgroup_dir(cs, mi->cgroup, dir, sizeof(dir)) < 0 ||
                    stat(dir, &st) == 0) {
                        cs->mirrors[keep++] = *mi; /* still there (or unknowable) */
                        continue;
                }
                if (group_get(cs->core, mi->group, &g) < 0 || !group_is_mirror(g))
                        drop = true; /* removed, or no longer ours: forget it */
                else if ((why = prune_blocker(cs, g, keep))) {
                        if (why != mi->kept_why)
                                log_info("Mirror %s of vanished cgroup %s: kept, %s", mi->group, mi->cgroup,
                                         why);
                        mi->kept_why = why;
                } else if (group_remove(cs->core, mi->group) == 0) {
                        log_info("Mirror %s of vanished cgroup %s: removed", mi->group, mi->cgroup);
                        mirror_notify(cs, EVENT_GROUP_REMOVED, mi->group, 0);
                        removed++;
                        drop = gone = true;
                } else
                        why = "it is busy";
                if (fn && (why || gone))
                        fn(userdata, mi->group, why);
                if (drop) {
                        free(mi->group);
                        free(mi->cgroup);
                } else
                        cs->mirrors[keep++] = *mi;
        }
        cs->nmirrors = keep;
        pthread_mutex_unlock(&cs->lock);
        return removed;
}
