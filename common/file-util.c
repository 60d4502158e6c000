/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reading a file whole (file-util.h), for the configuration and the
 * state, which are both checked in full before anything is applied; and
 * replacing one atomically, for the state and the placement rules.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file-util.h"
#include "macro.h"

int read_file_at(int dirfd, const char *name, int flags, size_t max, char **ret, size_t *ret_size) {
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        size_t n = 0;
        int fd, r = 0;

        fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | flags);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                r = -errno;
        else if (!S_ISREG(st.st_mode))
                r = -EINVAL;
        else if ((uintmax_t) st.st_size > max)
                r = -EFBIG;
        else if (!(buf = malloc((size_t) st.st_size + 1)))
                r = -ENOMEM;
        while (r == 0 && n < (size_t) st.st_size) {
                ssize_t k = read(fd, buf + n, (size_t) st.st_size - n);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        r = -errno;
                else if (k == 0)
                        break;
                else
                        n += (size_t) k;
        }
        close(fd);
        if (r < 0)
                return r;
        buf[n] = 0;
        *ret = TAKE_PTR(buf);
        *ret_size = n;
        return 0;
}

int loop_write(int fd, const void *p, size_t n) {
        const char *c = p;

        while (n > 0) {
                ssize_t k = write(fd, c, n);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                c += k;
                n -= (size_t) k;
        }
        return 0;
}

int fsync_fd(int fd) {
        return fsync(fd) < 0 ? -errno : 0;
}

int write_tmp_file_at(int dirfd, const char *tmp, int fd, const void *data, size_t size, FsyncFunc sync,
                      AtomicStep *ret_step) {
        bool reserved = fd >= 0;
        int r;

        *ret_step = ATOMIC_STEP_CREATE;
        if (!reserved) {
                fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
                if (fd < 0)
                        return -errno;
        }
        *ret_step = ATOMIC_STEP_WRITE;
        r = loop_write(fd, data, size);
        /* Drop what is left of a reservation beyond the contents. */
        if (r >= 0 && reserved && ftruncate(fd, (off_t) size) < 0)
                r = -errno;
        if (r >= 0 && sync)
                r = sync(fd);
        if (close(fd) < 0 && r >= 0)
                r = -errno;
        if (r < 0)
                (void) unlinkat(dirfd, tmp, 0);
        return r;
}

int rename_tmp_file_at(int dirfd, const char *tmp, const char *name, FsyncFunc sync, AtomicStep *ret_step) {
        *ret_step = ATOMIC_STEP_RENAME;
        if (renameat(dirfd, tmp, dirfd, name) < 0) {
                int r = -errno;

                (void) unlinkat(dirfd, tmp, 0);
                return r;
        }
        *ret_step = ATOMIC_STEP_SYNC_DIR;
        return sync ? sync(dirfd) : 0;
}

int write_file_atomic_at(int dirfd, const char *name, const char *tmp, const void *data, size_t size,
                         FsyncFunc sync, AtomicStep *ret_step) {
        AtomicStep step;
        int r;

        r = write_tmp_file_at(dirfd, tmp, -1, data, size, sync, &step);
        if (r >= 0)
                r = rename_tmp_file_at(dirfd, tmp, name, sync, &step);
        if (ret_step)
                *ret_step = step;
        return r;
}
