/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <sys/socket.h>

/**
 * unix_socket_is_live() - is a server listening on the Unix socket @sa?
 * Used before replacing a socket file: a stale file from a dead daemon may
 * go, a live daemon's socket must not be stolen.
 *
 * Return: 1 yes (it accepted, or its backlog is full), 0 no (refused, or no
 * such file), or a negative errno when it cannot tell.
 */
int unix_socket_is_live(const struct sockaddr *sa, socklen_t len);
