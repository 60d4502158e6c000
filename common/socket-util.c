/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Small socket helpers shared by the daemon's listeners. */

#include <errno.h>
#include <unistd.h>

#include "socket-util.h"

int unix_socket_is_live(const struct sockaddr *sa, socklen_t len) {
        int fd, r;

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        r = connect(fd, sa, len);
        if (r == 0 || errno == EAGAIN || errno == EINPROGRESS)
                r = 1; /* accepted, or a live listener with a full backlog */
        else if (errno == ECONNREFUSED || errno == ENOENT)
                r = 0;
        else
                r = -errno;
        close(fd);
        return r;
}
