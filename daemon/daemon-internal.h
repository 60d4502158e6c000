/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What daemon.c takes from daemon-config.c: the configuration made,
 * handed on and compared at a reload. Pure but for the log and, in
 * daemon_config_read(), the file and the environment; any thread.
 */

#include <stdbool.h>

#include "base/config.h"
#include "options.h"
#include "service/service.h"
#include "sock/server.h"

/**
 * daemon_config_read() - the configuration in force: the file @path (if
 * any; NULL: none), @args over it, and the defaults for what neither set.
 * @explicit: the file was named (--config): a missing one is an error
 * @ret: on success, the configuration (free with config_done())
 * @ret_error: on failure, why (NULL for -ENOMEM, or when it was logged)
 *
 * Return: 0; -ENOENT (an explicit file missing, or no home directory for
 * the state, logged); -EINVAL; -ENOMEM; a read error.
 */
int daemon_config_read(const Args *args, const char *path, bool explicit, Config *ret, char **ret_error);

/** daemon_service_settings() - what the service is given of @c ([limits] connections within RLIMIT_NOFILE). */
ServiceSettings daemon_service_settings(const Config *c);

/** daemon_sock_limits() - what the socket server is given of @c. */
SockLimits daemon_sock_limits(const Config *c);

/** daemon_config_log() - @c at debug level. */
void daemon_config_log(const Config *c);

/**
 * daemon_config_report_fixed() - log each setting that differs between
 * the running @c and the reloaded @new but only a restart changes.
 * @socket_passed: systemd passed the socket, so its path is not ours
 *
 * Return: how many were logged.
 */
int daemon_config_report_fixed(const Config *c, const Config *new, bool socket_passed);

/**
 * daemon_regions_apply() - register the regions [regions] of @c declares
 * with @svc as the daemon: a missing one is added, one registered with
 * another capacity takes @c's while nothing is charged to it (else it
 * keeps its own, with a warning); none is ever removed. Each failure is
 * logged. Main thread, registered with the core.
 * Return: 0; the first failure's negative errno (the others are tried).
 */
int daemon_regions_apply(Service *svc, const Config *c);

/**
 * daemon_config_take_changeable() - copy into @c what a reload may change
 * from @new (it may take @new's strings; free @new with config_done()).
 */
void daemon_config_take_changeable(Config *c, Config *new);
