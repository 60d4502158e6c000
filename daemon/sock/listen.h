/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The socket clients connect to: the one systemd passed (socket
 * activation), or one bound here. Bound first thing at start, before the
 * state is touched, so that a second daemon refuses to start: a live
 * socket is never replaced, a stale one (its daemon died) is.
 */

#include <stdbool.h>

typedef struct SockListen {
        int fd;           /* listening, non-blocking; -1 once handed on or closed */
        bool activated;   /* passed by systemd */
        char *name;       /* what we listen on, for messages ("@name" when abstract) */
        char *bound_path; /* the socket file we created, removed at exit; NULL: none */
} SockListen;

#define SOCK_LISTEN_INIT ((SockListen) { .fd = -1 })

/**
 * sock_listen_open() - take the socket systemd passed, or bind @path
 * (its directories are created), mode 0666: who may do what is decided
 * per request from SO_PEERCRED. @asked: the path the command line gave,
 * to say it is not used under socket activation (NULL: none given).
 * Return: 0; a negative errno (logged).
 */
int sock_listen_open(const char *path, const char *asked, SockListen *ret);

/**
 * sock_listen_unlink() - remove the socket file we created, so that new
 * clients get ENOENT at once instead of waiting on a dead backlog.
 */
void sock_listen_unlink(SockListen *l);

/** sock_listen_done() - close what is still ours and free the names. */
void sock_listen_done(SockListen *l);
