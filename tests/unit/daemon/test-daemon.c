/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Daemon object (daemon/daemon.c): the configuration it makes from
 * the file and the command line, what a reload takes, what it refuses
 * and what it reports as waiting for a restart, and the bus it chooses.
 * Most tests never start the daemon: a reload before daemon_start()
 * changes the configuration only. One starts it whole, without a bus or
 * metrics, on a socket in a temporary directory, to see a reload reach
 * the running service and the stop order remove the socket.
 *
 * The settings that wait for a restart are logged; the log is stderr,
 * which the tests read back from a file.
 */

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "daemon.h"

typedef struct Fixture {
        char dir[64];
        char conf[96];
        char socket[96];
        char state[96];
        int saved_stderr; /* while the log is captured; -1 otherwise */
        FILE *log;
} Fixture;

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        snprintf(f->dir, sizeof(f->dir), "/tmp/test-daemon-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        snprintf(f->conf, sizeof(f->conf), "%s/memacctd.conf", f->dir);
        snprintf(f->socket, sizeof(f->socket), "%s/sock", f->dir);
        snprintf(f->state, sizeof(f->state), "%s/state", f->dir);
        f->saved_stderr = -1;
        /* Nothing here is under systemd: no notifications, no implied bus. */
        unsetenv("NOTIFY_SOCKET");
        unsetenv("INVOCATION_ID");
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;
        char cmd[128];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
        assert_int_equal(system(cmd), 0);
        free(f);
        return 0;
}

/* memacctd.conf: the socket and the state in the fixture's directory and
 * @daemon_keys in [daemon], then @sections, and no sampling of the host's
 * cgroups. */
static void write_conf(Fixture *f, const char *daemon_keys, const char *sections) {
        FILE *c = fopen(f->conf, "we");

        assert_non_null(c);
        fprintf(c, "[daemon]\nsocket = %s\nstate-dir = %s\n%s%s[cgroup]\nsample-interval = 0\n", f->socket,
                f->state, daemon_keys, sections);
        assert_int_equal(fclose(c), 0);
}

static Args args_of(const Fixture *f) {
        return (Args) { .config_path = f->conf, .bus = "none" };
}

static Daemon *daemon_of(const Args *args) {
        Daemon *d = NULL;

        assert_int_equal(daemon_new(args, &d), 0);
        assert_non_null(d);
        return d;
}

/* From here to log_end(), what the daemon logs goes to a file. */
static void log_begin(Fixture *f) {
        f->log = tmpfile();
        assert_non_null(f->log);
        fflush(stderr);
        f->saved_stderr = dup(STDERR_FILENO);
        assert_true(f->saved_stderr >= 0);
        assert_true(dup2(fileno(f->log), STDERR_FILENO) >= 0);
}

/* What was logged since log_begin(); free() it. */
static char *log_end(Fixture *f) {
        char *text;
        long n;

        assert_true(dup2(f->saved_stderr, STDERR_FILENO) >= 0);
        close(f->saved_stderr);
        f->saved_stderr = -1;
        n = ftell(f->log);
        assert_true(n >= 0);
        text = calloc(1, (size_t) n + 1);
        assert_non_null(text);
        rewind(f->log);
        assert_int_equal(fread(text, 1, (size_t) n, f->log), (size_t) n);
        fclose(f->log);
        f->log = NULL;
        return text;
}

static void assert_logged(const char *log, const char *needle) {
        if (!strstr(log, needle))
                fail_msg("expected \"%s\" in the log:\n%s", needle, log);
}

static void test_new_reads_the_file_and_the_command_line_wins(void **state) {
        Fixture *f = *state;
        Args args = args_of(f);
        Daemon *d;

        write_conf(f, "workers = 4\n", "[limits]\nframe-size = 32K\n");
        args.workers = 3;
        d = daemon_of(&args);
        assert_string_equal(daemon_config(d)->socket_path, f->socket);
        assert_string_equal(daemon_config(d)->state_dir, f->state);
        assert_int_equal(daemon_config(d)->frame_size, 32 * 1024);
        assert_int_equal(daemon_config(d)->workers, 3);
        /* Not started: nothing to serve yet. */
        assert_null(daemon_service(d));
        daemon_free(d);
}

static void test_new_refuses_a_broken_file(void **state) {
        Fixture *f = *state;
        Args args = args_of(f);
        Daemon *d = NULL;

        write_conf(f, "", "[limits]\nframe-size = banana\n");
        assert_int_equal(daemon_new(&args, &d), -EINVAL);
        assert_null(d);
        /* --config names a file that must exist. */
        assert_int_equal(unlink(f->conf), 0);
        assert_int_equal(daemon_new(&args, &d), -ENOENT);
        assert_null(d);
}

static void test_reload_applies_the_changeable_keys(void **state) {
        Fixture *f = *state;
        Args args = args_of(f);
        const Config *c;
        Daemon *d;

        write_conf(f, "", "[limits]\nframe-size = 32K\nsessions-per-uid = 10\nidle-timeout = 0\n"
                          "[accounting]\nflush-interval = 1000\nrecursive-protection = no\n"
                          "[access]\nread = all\n[cgroup]\nprefix = /a\n");
        d = daemon_of(&args);
        write_conf(f, "", "[limits]\nframe-size = 128K\nsessions-per-uid = 20\nidle-timeout = 60\n"
                          "[accounting]\nflush-interval = 500\nrecursive-protection = yes\n"
                          "[access]\nread = owner\n[cgroup]\nprefix = /b\n");
        /* Nothing changed that waits for a restart. */
        assert_int_equal(daemon_reload(d), 0);
        c = daemon_config(d);
        assert_int_equal(c->frame_size, 128 * 1024);
        assert_int_equal(c->sessions_per_uid, 20);
        assert_int_equal(c->idle_timeout_sec, 60);
        assert_int_equal(c->flush_interval_msec, 500);
        assert_true(c->recursive_protection);
        assert_int_equal(c->read_access, READ_ACCESS_OWNER);
        assert_string_equal(config_cgroup_prefix(c), "/b");
        daemon_free(d);
}

static void test_reload_reports_what_waits_for_a_restart(void **state) {
        Fixture *f = *state;
        Args args = args_of(f);
        char other_socket[128], other_state[128], *log;
        FILE *c;
        Daemon *d;

        write_conf(f, "workers = 1\n", "[limits]\ngroups = 1000\ndepth = 8\nframe-size = 32K\n"
                                      "[metrics]\nconnections = 4\noutput-buffer = 2M\n");
        d = daemon_of(&args);
        snprintf(other_socket, sizeof(other_socket), "%s/other-sock", f->dir);
        snprintf(other_state, sizeof(other_state), "%s/other-state", f->dir);
        c = fopen(f->conf, "we");
        assert_non_null(c);
        fprintf(c, "[daemon]\nsocket = %s\nstate-dir = %s\nworkers = 2\n[limits]\ngroups = 2000\ndepth = 9\n"
                   "frame-size = 16K\n[cgroup]\nsample-interval = 0\nimport-at-start = yes\n"
                   "[metrics]\nconnections = 5\noutput-buffer = 3M\n",
                other_socket, other_state);
        assert_int_equal(fclose(c), 0);

        log_begin(f);
        /* socket, state-dir, workers, groups, depth, import-at-start,
         * [metrics] connections and output-buffer */
        assert_int_equal(daemon_reload(d), 8);
        log = log_end(f);
        assert_logged(log, "[daemon] workers changed from 1 to 2: ignored until restart");
        assert_logged(log, "[limits] groups changed from 1000 to 2000: ignored until restart");
        assert_logged(log, "[limits] depth changed from 8 to 9: ignored until restart");
        assert_logged(log, "[daemon] state-dir changed from ");
        assert_logged(log, "[daemon] socket changed from ");
        assert_logged(log, "[cgroup] import-at-start takes effect at the next start");
        assert_logged(log, "[metrics] connections changed from 4 to 5: ignored until restart");
        assert_logged(log, "[metrics] output-buffer changed from 2097152 to 3145728: ignored until restart");
        free(log);

        /* The running configuration keeps them, and takes the rest. */
        assert_int_equal(daemon_config(d)->workers, 1);
        assert_int_equal(daemon_config(d)->max_groups, 1000);
        assert_int_equal(daemon_config(d)->max_depth, 8);
        assert_string_equal(daemon_config(d)->socket_path, f->socket);
        assert_string_equal(daemon_config(d)->state_dir, f->state);
        assert_int_equal(daemon_config(d)->metrics_connections, 4);
        assert_int_equal(daemon_config(d)->frame_size, 16 * 1024);
        daemon_free(d);
}

static void test_reload_with_a_broken_file_keeps_the_configuration(void **state) {
        Fixture *f = *state;
        Args args = args_of(f);
        char *log;
        Daemon *d;

        write_conf(f, "", "[limits]\nframe-size = 32K\nsessions-per-uid = 10\n");
        d = daemon_of(&args);
        /* A good key before the bad one: the file is taken whole or not at all. */
        write_conf(f, "", "[limits]\nsessions-per-uid = 20\nframe-size = banana\n");
        log_begin(f);
        assert_int_equal(daemon_reload(d), -EINVAL);
        log = log_end(f);
        assert_logged(log, "keeping the current configuration");
        free(log);
        assert_int_equal(daemon_config(d)->frame_size, 32 * 1024);
        assert_int_equal(daemon_config(d)->sessions_per_uid, 10);

        /* The file gone, though --config named it. */
        assert_int_equal(unlink(f->conf), 0);
        assert_int_equal(daemon_reload(d), -ENOENT);
        assert_int_equal(daemon_config(d)->frame_size, 32 * 1024);
        daemon_free(d);
}

static void test_reload_keeps_the_command_line(void **state) {
        Fixture *f = *state;
        Args args = args_of(f);
        Daemon *d;

        write_conf(f, "workers = 1\n", "");
        args.workers = 3;
        d = daemon_of(&args);
        write_conf(f, "workers = 2\n", "");
        /* The command line still wins: nothing to report. */
        assert_int_equal(daemon_reload(d), 0);
        assert_int_equal(daemon_config(d)->workers, 3);
        daemon_free(d);
}

static void test_bus_choice(void **state) {
        Fixture *f = *state;
        Args args = args_of(f);
        Daemon *d;

        write_conf(f, "", "");
        d = daemon_of(&args);
        assert_null(daemon_bus_address(d));
        daemon_free(d);

        args.bus = "user";
        d = daemon_of(&args);
        assert_non_null(daemon_bus_address(d));
        assert_string_equal(daemon_bus_address(d), "user");
        daemon_free(d);

        /* Not asked for: the system bus only for root under systemd. */
        args.bus = NULL;
        d = daemon_of(&args);
        assert_null(daemon_bus_address(d));
        daemon_free(d);
        setenv("INVOCATION_ID", "0123456789abcdef0123456789abcdef", 1);
        d = daemon_of(&args);
        unsetenv("INVOCATION_ID");
        if (geteuid() == 0) {
                assert_non_null(daemon_bus_address(d));
                assert_string_equal(daemon_bus_address(d), "system");
        } else
                assert_null(daemon_bus_address(d));
        daemon_free(d);
}

static void test_reload_reaches_the_running_service(void **state) {
        Fixture *f = *state;
        Args args = args_of(f);
        ServiceSettings s;
        Daemon *d;

        write_conf(f, "workers = 1\n", "[limits]\nframe-size = 32K\nsessions-per-uid = 10\n[access]\nread = all\n");
        d = daemon_of(&args);
        assert_int_equal(daemon_start(d), 0);
        assert_non_null(daemon_service(d));
        assert_int_equal(access(f->socket, F_OK), 0);
        s = service_settings(daemon_service(d));
        assert_int_equal(s.max_frame, 32 * 1024);
        assert_int_equal(s.max_sessions_per_uid, 10);

        write_conf(f, "workers = 1\n",
                   "[limits]\nframe-size = 128K\nsessions-per-uid = 20\n[access]\nread = root\n");
        assert_int_equal(daemon_reload(d), 0);
        s = service_settings(daemon_service(d));
        assert_int_equal(s.max_frame, 128 * 1024);
        assert_int_equal(s.max_sessions_per_uid, 20);
        assert_int_equal(s.read_access, READ_ACCESS_ROOT);

        /* A broken file reaches nobody. */
        write_conf(f, "", "[limits]\nframe-size = banana\n");
        assert_true(daemon_reload(d) < 0);
        s = service_settings(daemon_service(d));
        assert_int_equal(s.max_frame, 128 * 1024);

        /* The stop order ends with a save, and the socket file goes. */
        assert_int_equal(daemon_stop(d), 0);
        assert_int_equal(access(f->socket, F_OK), -1);
        assert_int_equal(errno, ENOENT);
        daemon_free(d);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_new_reads_the_file_and_the_command_line_wins, setup, teardown),
                cmocka_unit_test_setup_teardown(test_new_refuses_a_broken_file, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reload_applies_the_changeable_keys, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reload_reports_what_waits_for_a_restart, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reload_with_a_broken_file_keeps_the_configuration, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_reload_keeps_the_command_line, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bus_choice, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reload_reaches_the_running_service, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
