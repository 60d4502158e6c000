/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memacctctl run's kernel memory cgroup (run-cgroup.h).
 *
 * The hierarchy is the one this process's memory is accounted in: v1's
 * memory controller when /proc/self/cgroup has a memory line (a hybrid
 * host such as Debian 12 on cgroup v1), else v2's when its root offers
 * the memory controller. The cgroup is a directory and a few files: a
 * mkdir per missing level, on v2 "+memory" in each parent's
 * cgroup.subtree_control so that the level below has the controller, the
 * limits, and the child's pid in cgroup.procs. That is all libcgroup
 * would do here, and memacctctl does not carry the daemon's dependency
 * for it.
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "run-cgroup.h"

/* Does /proc/self/cgroup name v1's memory controller? */
static bool memory_v1(void) {
        char line[4096];
        bool v1 = false;
        FILE *f = fopen("/proc/self/cgroup", "re");

        if (!f)
                return false;
        while (!v1 && fgets(line, sizeof(line), f)) {
                char *ctl = strchr(line, ':'), *end = ctl ? strchr(ctl + 1, ':') : NULL;

                if (!end)
                        continue;
                *end = '\0';
                for (char *tok = strtok(ctl + 1, ","); tok; tok = strtok(NULL, ","))
                        if (strcmp(tok, "memory") == 0)
                                v1 = true;
        }
        fclose(f);
        return v1;
}

/* The mount point of the hierarchy (@v1: the cgroup mount with the memory option; else cgroup2). */
static int hierarchy_mount(bool v1, char *buf, size_t size) {
        char line[8192];
        int r = -ENOENT;
        FILE *f = fopen("/proc/self/mountinfo", "re");

        if (!f)
                return -errno;
        while (r < 0 && fgets(line, sizeof(line), f)) {
                char mnt[4096], fstype[64], super[1024];
                const char *sep = strstr(line, " - ");

                /* ID PARENT MAJ:MIN ROOT MOUNTPOINT ... - FSTYPE SOURCE SUPEROPTS */
                if (!sep || sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1 ||
                    sscanf(sep + 3, "%63s %*s %1023s", fstype, super) != 2)
                        continue;
                if (v1 ? strcmp(fstype, "cgroup") == 0 && strstr(super, "memory") : strcmp(fstype, "cgroup2") == 0) {
                        snprintf(buf, size, "%s", mnt);
                        r = 0;
                }
        }
        fclose(f);
        return r;
}

static int write_file(const char *dir, const char *name, const char *value) {
        char path[4200];
        ssize_t n;
        int fd, e;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        n = write(fd, value, strlen(value));
        e = n < 0 ? errno : 0;
        close(fd);
        return n < 0 ? -e : 0;
}

static bool offers_memory(const char *dir) {
        char path[4200], line[1024] = "";
        FILE *f;

        snprintf(path, sizeof(path), "%s/cgroup.controllers", dir);
        f = fopen(path, "re");
        if (!f)
                return false;
        if (!fgets(line, sizeof(line), f))
                line[0] = '\0';
        fclose(f);
        for (char *tok = strtok(line, " \n"); tok; tok = strtok(NULL, " \n"))
                if (strcmp(tok, "memory") == 0)
                        return true;
        return false;
}

/* Does the cgroup @dir hold no process? */
static bool empty(const char *dir) {
        char path[4200];
        int c = EOF;
        FILE *f;

        snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
        f = fopen(path, "re");
        if (f) {
                c = fgetc(f);
                fclose(f);
        }
        return c == EOF;
}

/*
 * The leaf was there already: the group is new (the daemon refused an
 * existing one), so this is what a run killed with SIGKILL left, which
 * could not remove it. Made again, its old limits gone with it; one that
 * holds processes is someone's and refused.
 */
static int fresh_leaf(RunCgroup *c, char *why, size_t whylen) {
        if (!empty(c->dir)) {
                snprintf(why, whylen, "the kernel cgroup %s is there already and holds processes", c->dir);
                return -EBUSY;
        }
        if (rmdir(c->dir) < 0 || mkdir(c->dir, 0755) < 0) {
                int r = -errno;

                snprintf(why, whylen, "cannot make %s afresh: %s", c->dir, strerror(-r));
                return r;
        }
        return 0;
}

/* Every level of @c->dir below @mount, made; on v2 with the memory controller given down. */
static int make_levels(RunCgroup *c, size_t mount_len, char *why, size_t whylen) {
        char *p = c->dir + mount_len;
        int r;

        /* Each level in turn: the path cut at the next '/', then whole. */
        for (;;) {
                p = strchr(p + 1, '/');
                if (p)
                        *p = '\0';
                if (c->v2) {
                        /* The parent gives its children the memory controller. */
                        char *slash = strrchr(c->dir, '/');

                        *slash = '\0';
                        r = write_file(c->dir, "cgroup.subtree_control", "+memory");
                        *slash = '/';
                        if (r < 0) {
                                snprintf(why, whylen, "cannot give the memory controller to %s: %s", c->dir,
                                         strerror(-r));
                                return r;
                        }
                }
                if (mkdir(c->dir, 0755) < 0 && errno != EEXIST) {
                        r = -errno;
                        snprintf(why, whylen, "cannot make %s: %s", c->dir, strerror(errno));
                        return r;
                }
                if (!p)
                        return fresh_leaf(c, why, whylen);
                *p = '/';
        }
}

static void limit_value(uint64_t v, bool v2, char *buf, size_t size) {
        if (v == MEMACCT_UNLIMITED)
                snprintf(buf, size, "%s", v2 ? "max" : "-1");
        else
                snprintf(buf, size, "%" PRIu64, v);
}

static int set_limits(RunCgroup *c, const memacct_limits *l, char *why, size_t whylen) {
        static const struct {
                unsigned bit;
                const char *v2, *v1;
        } files[] = {
                { MEMACCT_LIMIT_MAX, "memory.max", "memory.limit_in_bytes" },
                { MEMACCT_LIMIT_HIGH, "memory.high", NULL },
                { MEMACCT_LIMIT_LOW, "memory.low", NULL },
                { MEMACCT_LIMIT_MIN, "memory.min", NULL },
        };
        const uint64_t values[] = { l->max, l->high, l->low, l->min };

        for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
                const char *name = c->v2 ? files[i].v2 : files[i].v1;
                char v[32];
                int r;

                if (!(l->set & files[i].bit))
                        continue;
                if (!name) {
                        /* Not the kernel's here: the group's alone (libmemacct's clients). */
                        snprintf(c->note, sizeof(c->note), "high=, low= and min= are the group's alone: cgroup v1's "
                                 "memory controller has memory.limit_in_bytes (max=) only");
                        continue;
                }
                limit_value(values[i], c->v2, v, sizeof(v));
                r = write_file(c->dir, name, v);
                if (r < 0) {
                        snprintf(why, whylen, "cannot set %s/%s to %s: %s", c->dir, name, v, strerror(-r));
                        return r;
                }
        }
        return 0;
}

int run_cgroup_create(RunCgroup *c, const char *path, const memacct_limits *l, char *why, size_t whylen) {
        char mount[4096];
        size_t len;
        int r;

        c->dir[0] = c->note[0] = '\0';
        c->v2 = !memory_v1();
        r = hierarchy_mount(!c->v2, mount, sizeof(mount));
        if (r < 0) {
                snprintf(why, whylen, "no memory cgroup hierarchy is mounted");
                return r;
        }
        if (c->v2 && !offers_memory(mount)) {
                snprintf(why, whylen, "the cgroup v2 hierarchy at %s offers no memory controller", mount);
                return -EOPNOTSUPP;
        }
        len = strlen(mount);
        if (snprintf(c->dir, sizeof(c->dir), "%s%s", mount, path) >= (int) sizeof(c->dir)) {
                c->dir[0] = '\0';
                snprintf(why, whylen, "the cgroup path is too long");
                return -ENAMETOOLONG;
        }
        r = make_levels(c, len, why, whylen);
        if (r >= 0)
                r = set_limits(c, l, why, whylen);
        if (r < 0) {
                (void) rmdir(c->dir);
                c->dir[0] = '\0';
        }
        return r;
}

int run_cgroup_enter(const RunCgroup *c) {
        char pid[24];

        snprintf(pid, sizeof(pid), "%d", (int) getpid());
        return write_file(c->dir, "cgroup.procs", pid);
}

void run_cgroup_remove(RunCgroup *c) {
        const struct timespec step = { .tv_nsec = 50 * 1000 * 1000 };

        if (!c->dir[0])
                return;
        /* Its last processes may still be exiting. */
        for (int i = 0; rmdir(c->dir) < 0; i++) {
                if (errno != EBUSY || i >= 40) {
                        if (errno != ENOENT)
                                fprintf(stderr, "memacctctl: run: leaving the kernel cgroup %s: %s\n", c->dir,
                                        strerror(errno));
                        break;
                }
                nanosleep(&step, NULL);
        }
        c->dir[0] = '\0';
}
