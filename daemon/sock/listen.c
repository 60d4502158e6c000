/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The listening socket (listen.h). Binding refuses to replace a socket a
 * daemon still listens on (unix_socket_is_live()), and anything that is
 * not a socket; a stale socket file is removed and bound again.
 */

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "macro.h"
#include "base/log.h"
#include "socket-util.h"
#include "sock/listen.h"

/*
 * The directories above the socket, each one we create 0755 whatever the
 * umask: every uid must reach the socket through them (the daemon decides
 * who may do what, by SO_PEERCRED), so a umask of 077 must not lock them
 * out of /run/memacctd. A directory that exists already is left as its
 * owner made it (a user daemon's $XDG_RUNTIME_DIR is 0700 on purpose).
 */
static int mkdir_parents(const char *path) {
        _cleanup_free_ char *p = strdup(path);

        if (!p)
                return -ENOMEM;
        for (char *s = p + 1; *s; s++) {
                if (*s != '/')
                        continue;
                *s = 0;
                if (mkdir(p, 0755) == 0) {
                        if (chmod(p, 0755) < 0)
                                return -errno;
                } else if (errno != EEXIST)
                        return -errno;
                *s = '/';
        }
        return 0;
}

/*
 * Whether the file at @path (@sa, @len) may be replaced: only a socket no
 * daemon listens on may be. Return: 0 when there is none, 1 for a stale
 * socket, a negative errno (logged) otherwise.
 */
static int socket_path_check(const char *path, const struct sockaddr_un *sa, socklen_t len) {
        struct stat st;
        int r;

        if (lstat(path, &st) < 0)
                return 0;
        if (!S_ISSOCK(st.st_mode))
                return log_error_errno(EEXIST, "%s exists and is not a socket; refusing to replace it", path);
        r = unix_socket_is_live((const struct sockaddr *) sa, len);
        if (r > 0)
                return log_error_errno(EADDRINUSE,
                                       "Another daemon is listening on %s; refusing to start "
                                       "(stop it, or use --socket)", path);
        if (r < 0)
                return log_error_errno(r, "Cannot tell whether a daemon listens on %s (%m); refusing to start",
                                       path);
        return 1;
}

/*
 * @fd bound beside @path, under "@path.PID" (its address to @ret_tmp),
 * open to all and listening. On failure nothing is left at that name.
 * Return: 0, or a negative errno (logged).
 */
static int socket_listen_beside(int fd, const char *path, struct sockaddr_un *ret_tmp) {
        struct sockaddr_un tmp = { .sun_family = AF_UNIX };
        size_t n;
        int r = 0;

        n = (size_t) snprintf(tmp.sun_path, sizeof(tmp.sun_path), "%s.%d", path, (int) getpid());
        if (n >= sizeof(tmp.sun_path))
                return log_error_errno(ENAMETOOLONG, "Socket path %s is too long to bind beside it", path);
        (void) unlink(tmp.sun_path);
        if (bind(fd, (struct sockaddr *) &tmp, (socklen_t) (offsetof(struct sockaddr_un, sun_path) + n + 1)) < 0)
                return log_error_errno(errno, "Cannot bind %s: %m", tmp.sun_path);
        /* Whoever may connect is decided per request from SO_PEERCRED
         * (reads are open to all by default), so the socket is open to
         * all: 0666 set here, as bind() left it after the umask. */
        if (chmod(tmp.sun_path, 0666) < 0)
                r = log_error_errno(errno, "Cannot make %s accessible: %m", tmp.sun_path);
        else if (listen(fd, SOMAXCONN) < 0)
                r = log_error_errno(errno, "Cannot listen on %s: %m", tmp.sun_path);
        if (r < 0) {
                (void) unlink(tmp.sun_path);
                return r;
        }
        *ret_tmp = tmp;
        return 0;
}

/*
 * The socket appears at its path only once it listens: bound under a name
 * of its own, made accessible, listening, then renamed over the path (a
 * stale socket included) in one step. A client that sees the file can
 * connect, rather than be refused in the moment between bind() and
 * listen().
 */
static int socket_bind(SockListen *l, const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX }, tmp;
        _cleanup_close_ int fd = -EBADF;
        size_t n = strlen(path);
        socklen_t len;
        int r, stale;

        if (n == 0 || n >= sizeof(sa.sun_path))
                return log_error_errno(ENAMETOOLONG, "Socket path %s is empty or too long (at most %zu bytes)",
                                       path, sizeof(sa.sun_path) - 1);
        memcpy(sa.sun_path, path, n);
        len = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + n + 1);

        r = mkdir_parents(path);
        if (r < 0)
                return log_error_errno(r, "Cannot create the directory of %s: %m", path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return log_error_errno(errno, "Cannot create a socket: %m");
        stale = socket_path_check(path, &sa, len);
        if (stale < 0)
                return stale;
        r = socket_listen_beside(fd, path, &tmp);
        if (r < 0)
                return r;

        l->bound_path = strdup(path);
        if (!l->bound_path)
                r = log_error_errno(ENOMEM, "Out of memory");
        else if (rename(tmp.sun_path, path) < 0) {
                r = log_error_errno(errno, "Cannot move the socket to %s: %m", path);
                l->bound_path = mfree(l->bound_path);
        }
        if (r < 0) {
                (void) unlink(tmp.sun_path);
                return r;
        }
        if (stale)
                log_notice("Removed the stale socket %s", path);
        l->fd = TAKE_FD(fd);
        return 0;
}

/* The path of a listening Unix socket ("@name" when abstract). */
static char *socket_name(int fd) {
        struct sockaddr_un sa = {};
        socklen_t len = sizeof(sa);
        size_t n;
        char *p;

        if (getsockname(fd, (struct sockaddr *) &sa, &len) < 0 || len <= offsetof(struct sockaddr_un, sun_path))
                return strdup("(unnamed socket)");
        n = len - offsetof(struct sockaddr_un, sun_path);
        if (sa.sun_path[0] != 0)
                return strndup(sa.sun_path, n);
        if (asprintf(&p, "@%.*s", (int) (n - 1), sa.sun_path + 1) < 0)
                return NULL;
        return p;
}

/*
 * The passed socket that is ours among those systemd passed: every one but
 * the metrics listener (memacctd-metrics.socket's FileDescriptorName=,
 * METRICS_FDNAME in http/metrics.h, which the metrics thread takes).
 * Return: its fd, -ENOENT when none was passed, -EINVAL for more than one.
 */
static int passed_socket(void) {
        char **names = NULL;
        int n, fd = -ENOENT;

        n = sd_listen_fds_with_names(0, &names);
        if (n < 0)
                return log_error_errno(n, "Cannot read the sockets passed by systemd: %m");
        for (int i = 0; i < n; i++) {
                /* Without LISTEN_FDNAMES every name is "unknown": all are ours. */
                if (names && names[i] && strcmp(names[i], "metrics") == 0)
                        continue;
                if (fd >= 0) {
                        fd = log_error_errno(EINVAL, "systemd passed more than one socket for clients");
                        break;
                }
                fd = SD_LISTEN_FDS_START + i;
        }
        for (int i = 0; names && i < n; i++)
                free(names[i]);
        free(names);
        return fd;
}

int sock_listen_open(const char *path, const char *asked, SockListen *ret) {
        SockListen l = SOCK_LISTEN_INIT;
        int fd, r;

        fd = passed_socket();
        if (fd < 0 && fd != -ENOENT)
                return fd;
        if (fd >= 0) {
                r = sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0);
                if (r < 0)
                        return log_error_errno(r, "Cannot check the socket passed by systemd: %m");
                if (r == 0)
                        return log_error_errno(EINVAL, "The socket passed by systemd is not a listening Unix stream socket");
                l.fd = fd;
                l.activated = true;
                l.name = socket_name(l.fd);
                if (!l.name)
                        return log_error_errno(ENOMEM, "Out of memory");
                if (asked)
                        log_notice("Using the socket passed by systemd (%s), not --socket %s", l.name, asked);
                *ret = l;
                return 0;
        }
        r = socket_bind(&l, path);
        if (r < 0)
                return r;
        l.name = strdup(path);
        if (!l.name) {
                sock_listen_unlink(&l);
                sock_listen_done(&l);
                return log_error_errno(ENOMEM, "Out of memory");
        }
        *ret = l;
        return 0;
}

void sock_listen_unlink(SockListen *l) {
        if (!l->bound_path)
                return;
        if (unlink(l->bound_path) < 0 && errno != ENOENT)
                log_warning_errno(errno, "Cannot remove %s, ignoring: %m", l->bound_path);
        free(l->bound_path);
        l->bound_path = NULL;
}

void sock_listen_done(SockListen *l) {
        if (l->fd >= 0)
                close(l->fd);
        l->fd = -1;
        free(l->bound_path);
        free(l->name);
        l->bound_path = l->name = NULL;
}
