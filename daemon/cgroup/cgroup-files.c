/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Kernel cgroup mirror: the files of one cgroup directory, read without
 * libcgroup (mirror.c's paragraph says why). Plain reads of a few
 * small files, no state: any thread, and tests run them on fake trees.
 */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup/mirror-internal.h"

int cgroup_read_file(const char *dir, const char *name, char *buf, size_t size) {
        char path[PATH_MAX];
        ssize_t n;
        int fd;

        if ((size_t) snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
                return -ENAMETOOLONG;
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        n = read(fd, buf, size - 1);
        if (n < 0) {
                int r = -errno;

                close(fd);
                return r;
        }
        close(fd);
        buf[n] = 0;
        return 0;
}

/* A file holding one number, or "max" (v2: UINT64_MAX). */
static int read_u64(const char *dir, const char *name, uint64_t *ret) {
        char buf[64], *end;
        unsigned long long v;
        int r;

        r = cgroup_read_file(dir, name, buf, sizeof(buf));
        if (r < 0)
                return r;
        buf[strcspn(buf, "\n")] = 0;
        if (strcmp(buf, "max") == 0) {
                *ret = UINT64_MAX;
                return 0;
        }
        if (buf[0] < '0' || buf[0] > '9')
                return -EINVAL;
        errno = 0;
        v = strtoull(buf, &end, 10);
        if (errno || *end)
                return -EINVAL;
        *ret = v;
        return 0;
}

uint64_t cgroup_v1_to_limit(uint64_t bytes) {
        return bytes >= CGROUP_V1_UNLIMITED_MIN ? UINT64_MAX : bytes;
}

/* Read @name into *@v and add @bit to @l->set; a missing file leaves it out. */
static int read_limit(const char *dir, const char *name, bool v1, MemLimits *l, MemLimitMask bit, uint64_t *v) {
        int r = read_u64(dir, name, v);

        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        if (v1)
                *v = cgroup_v1_to_limit(*v);
        l->set |= bit;
        return 0;
}

int cgroup_read_limits(const char *dir, bool v2, MemLimits *ret) {
        MemLimits l = {};
        int r;

        if (v2) {
                if ((r = read_limit(dir, "memory.max", false, &l, MEM_LIMIT_MAX, &l.max)) < 0 ||
                    (r = read_limit(dir, "memory.high", false, &l, MEM_LIMIT_HIGH, &l.high)) < 0 ||
                    (r = read_limit(dir, "memory.low", false, &l, MEM_LIMIT_LOW, &l.low)) < 0 ||
                    (r = read_limit(dir, "memory.min", false, &l, MEM_LIMIT_MIN, &l.min)) < 0)
                        return r;
        } else {
                if ((r = read_limit(dir, "memory.limit_in_bytes", true, &l, MEM_LIMIT_MAX, &l.max)) < 0 ||
                    (r = read_limit(dir, "memory.soft_limit_in_bytes", true, &l, MEM_LIMIT_LOW, &l.low)) < 0)
                        return r;
                /* An unlimited v1 soft limit means "no soft limit": such a
                 * group is not protected from reclaim, so low is 0 (as
                 * systemd's MemoryLow default), not "max", which would
                 * protect every group fully and so none. */
                if ((l.set & MEM_LIMIT_LOW) && l.low == UINT64_MAX)
                        l.low = 0;
        }
        *ret = l;
        return 0;
}

int cgroup_read_usage(const char *dir, bool v2, uint64_t *ret) {
        return read_u64(dir, v2 ? "memory.current" : "memory.usage_in_bytes", ret);
}

