/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Where memacctd looks when nobody says: systemd's directories win for
 * every uid (a service runs as its own user, not only as root), then the
 * FHS places as root, then the XDG ones.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/paths.h"

static void clear_env(void) {
        unsetenv("CONFIGURATION_DIRECTORY");
        unsetenv("STATE_DIRECTORY");
        unsetenv("RUNTIME_DIRECTORY");
        unsetenv("XDG_CONFIG_HOME");
        unsetenv("XDG_STATE_HOME");
        unsetenv("XDG_RUNTIME_DIR");
}

static void assert_path(int (*fn)(char **), const char *want) {
        char *got = NULL;

        assert_int_equal(fn(&got), 0);
        assert_non_null(got);
        assert_string_equal(got, want);
        free(got);
}

static void test_systemd_directories_win_for_any_uid(void **state) {
        (void) state;
        clear_env();
        /* Lists: the first entry is ours. */
        setenv("CONFIGURATION_DIRECTORY", "/etc/memacctd:/etc/other", 1);
        setenv("STATE_DIRECTORY", "/var/lib/memacctd", 1);
        setenv("RUNTIME_DIRECTORY", "/run/memacctd:/run/x", 1);
        setenv("XDG_CONFIG_HOME", "/home/u/.config", 1);
        setenv("XDG_STATE_HOME", "/home/u/.local/state", 1);
        setenv("XDG_RUNTIME_DIR", "/run/user/1000", 1);
        assert_path(paths_default_config, "/etc/memacctd/memacctd.conf");
        assert_path(paths_default_state_dir, "/var/lib/memacctd");
        assert_path(paths_default_socket, "/run/memacctd/memacctd.sock");
}

static void test_without_systemd(void **state) {
        (void) state;
        clear_env();
        setenv("XDG_CONFIG_HOME", "/home/u/.config", 1);
        setenv("XDG_STATE_HOME", "/home/u/.local/state", 1);
        setenv("XDG_RUNTIME_DIR", "/run/user/1000", 1);
        if (geteuid() == 0) {
                assert_path(paths_default_config, "/etc/memacctd/memacctd.conf");
                assert_path(paths_default_state_dir, "/var/lib/memacctd");
                assert_path(paths_default_socket, "/run/memacctd/memacctd.sock");
        } else {
                assert_path(paths_default_config, "/home/u/.config/memacctd/memacctd.conf");
                assert_path(paths_default_state_dir, "/home/u/.local/state/memacctd");
                assert_path(paths_default_socket, "/run/user/1000/memacctd/memacctd.sock");
        }
}

static void test_an_empty_list_is_no_directory(void **state) {
        (void) state;
        clear_env();
        setenv("CONFIGURATION_DIRECTORY", ":/etc/other", 1);
        setenv("XDG_CONFIG_HOME", "/home/u/.config", 1);
        assert_path(paths_default_config,
                    geteuid() == 0 ? "/etc/memacctd/memacctd.conf" : "/home/u/.config/memacctd/memacctd.conf");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_systemd_directories_win_for_any_uid),
                cmocka_unit_test(test_without_systemd),
                cmocka_unit_test(test_an_empty_list_is_no_directory),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
