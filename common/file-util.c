/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reading a file whole (file-util.h), for the configuration and the
 * state, which are both checked in full before anything is applied.
 */

#include <errno.h>
#include <fcntl.h>
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
