/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The daemon as one object: the configuration in force and every
 * component it starts (the accounting core, the service, housekeeping,
 * the saver, the kernel cgroup mirror, the socket server, the bus and
 * the metrics listener), in the order daemon.c gives. main.c parses the
 * command line and hands it here; tests drive the same object.
 *
 * Every function here is for the main thread, one at a time; the other
 * threads only read the status line, made of what is fixed after the
 * start and of atomic counts.
 */

#include <stdbool.h>

#include "base/config.h"
#include "macro.h"
#include "options.h"
#include "service/service.h"

typedef struct Daemon Daemon;

/**
 * daemon_check_config() - memacctd --check-config [FILE]: read FILE (else
 * --config, else the default file) with the command line over it, as a
 * start or a reload would, and print what is wrong ("FILE:LINE: reason")
 * on stderr, or that it is good on stdout. Starts nothing.
 * Return: 0, or the negative errno of the failure.
 */
int daemon_check_config(const Args *args);

/**
 * daemon_new() - a daemon for the command line @args: the bus chosen,
 * memacctd.conf read (the command line over it, the defaults under
 * both), nothing started. A failure is logged.
 * @args: the strings it points to must outlive the daemon (argv does)
 *
 * Return: 0; -ENOENT (--config names no file, or no home directory for
 * the state); -EINVAL (a bad file or --metrics); -ENOMEM; a read error.
 */
int daemon_new(const Args *args, Daemon **ret);

/** daemon_free() - free @d and what it started; stop it first (daemon_stop()). Accepts NULL. */
Daemon *daemon_free(Daemon *d);
DEFINE_TRIVIAL_CLEANUP_FUNC(Daemon *, daemon_free);

/**
 * daemon_start() - start everything in the start order (daemon.c) and
 * watch SIGTERM, SIGINT and SIGHUP. A failure is logged; call
 * daemon_stop() and daemon_free() then as after a run.
 * Return: 0, or the first failure.
 */
int daemon_start(Daemon *d);

/**
 * daemon_run() - tell systemd READY=1 and run the main loop until SIGTERM
 * or SIGINT (a lost bus connection is made again, bus/thread.c). SIGHUP
 * reloads (daemon_reload()) from within it.
 * Return: 0.
 */
int daemon_run(Daemon *d);

/**
 * daemon_stop() - stop in the stop order (daemon.c) and save; after a
 * run, or after a daemon_start() that failed part way.
 * Return: 0, or the error of the final save.
 */
int daemon_stop(Daemon *d);

/**
 * daemon_reload() - read the configuration again (SIGHUP) and apply what
 * may change at run time to the components started; each setting that
 * only a restart changes is logged, and left as it is. Before
 * daemon_start() only the configuration changes (each component takes it
 * when it is made).
 *
 * Return: the number of settings that changed but wait for a restart
 * (>= 0), or as daemon_new(), the configuration in force kept whole.
 */
int daemon_reload(Daemon *d);

/** daemon_config() - the configuration in force. */
const Config *daemon_config(const Daemon *d);

/** daemon_service() - the service; NULL before daemon_start(). */
Service *daemon_service(const Daemon *d);

/** daemon_bus_address() - the bus served: "system", "user", an address; NULL: none. */
const char *daemon_bus_address(const Daemon *d);
