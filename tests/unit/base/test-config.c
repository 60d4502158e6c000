/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memacctd.conf parsing: defaults, every key, and every way a file is refused. */

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/config.h"

static int parse(const char *text, Config *ret, char **ret_error) {
        return config_parse(text, strlen(text), "t.conf", ret, ret_error);
}

/* Parse @text, expect a refusal whose message starts with "t.conf:LINE:"
 * and contains @needle. */
static void expect_error(const char *text, unsigned line, const char *needle) {
        Config c = CONFIG_DEFAULT;
        char *error = NULL, prefix[32];

        assert_int_equal(parse(text, &c, &error), -EINVAL);
        assert_non_null(error);
        snprintf(prefix, sizeof(prefix), "t.conf:%u:", line);
        if (strncmp(error, prefix, strlen(prefix)) != 0 || !strstr(error, needle))
                fail_msg("for %s\nexpected \"%s ... %s\", got \"%s\"", text, prefix, needle, error);
        free(error);
}

static void test_empty_file_gives_the_defaults(void **state) {
        Config c;
        char *error = (char *) "unset";

        (void) state;
        assert_int_equal(parse("", &c, &error), 0);
        assert_null(error);
        assert_null(c.socket_path);
        assert_null(c.state_dir);
        assert_int_equal(c.workers, 0);
        assert_int_equal(c.frame_size, 64 * 1024);
        assert_int_equal(c.max_groups, 65536);
        assert_int_equal(c.max_depth, 32);
        assert_int_equal(c.sessions_per_uid, 1024);
        assert_int_equal(c.outstanding_requests, 1024);
        assert_true(c.output_buffer == 4 * 1024 * 1024);
        assert_int_equal(c.idle_timeout_sec, 0);
        assert_int_equal(c.frame_timeout_sec, 10);
        assert_int_equal(c.connections_per_uid, 512);
        assert_int_equal(c.connections, 8192);
        assert_int_equal(c.subscriptions_per_uid, 256);
        assert_int_equal(c.subscriptions, 4096);
        assert_int_equal(c.groups_per_uid, 1024);
        assert_true(c.output_buffer_per_uid == 16 * 1024 * 1024);
        assert_true(c.output_buffer_total == 256 * 1024 * 1024);
        /* Root keeps an eighth of the groups. */
        assert_int_equal(config_groups_not_root(&c), c.max_groups - c.max_groups / 8);
        assert_true(config_groups_not_root(&c) < c.max_groups);
        assert_int_equal(c.flush_interval_msec, 2000);
        assert_true(c.charge_batch == 4 * 1024 * 1024);
        assert_true(c.rss_threshold == 256 * 1024);
        assert_false(c.recursive_protection);
        assert_int_equal(c.read_access, READ_ACCESS_ALL);
        assert_null(c.cgroup_prefix);
        assert_string_equal(config_cgroup_prefix(&c), "/");
        assert_false(c.cgroup_import_at_start);
        assert_int_equal(c.cgroup_sample_interval_sec, 5);
        assert_false(c.cgroup_auto_create);
        assert_true(c.cgroup_prune);
        assert_null(c.metrics_listen);
        assert_false(c.metrics_allow_remote);
        assert_int_equal(c.metrics_max_groups, 10000);
        config_done(&c);

        /* Comments and blank lines only: still the defaults. */
        assert_int_equal(parse("# a comment\n\n; another\n[limits]\n", &c, &error), 0);
        assert_int_equal(c.max_depth, 32);
        config_done(&c);
}

static void test_every_key_is_read(void **state) {
        const char *text = "[daemon]\n"
                           "socket = /run/x/memacctd.sock\n"
                           "workers = 3\n"
                           "state-dir = /var/lib/x\n"
                           "[limits]\n"
                           "frame-size = 128K\n"
                           "groups = 1000\n"
                           "depth = 8\n"
                           "sessions-per-uid = 16\n"
                           "outstanding-requests = 64\n"
                           "output-buffer = 1M\n"
                           "idle-timeout = 300\n"
                           "frame-timeout = 5\n"
                           "connections-per-uid = 7\n"
                           "connections = 70\n"
                           "subscriptions-per-uid = 9\n"
                           "subscriptions = 90\n"
                           "groups-per-uid = 11\n"
                           "output-buffer-per-uid = 2M\n"
                           "output-buffer-total = 0\n"
                           "[accounting]\n"
                           "flush-interval = 500\n"
                           "charge-batch = 2M\n"
                           "rss-threshold = 64K\n"
                           "recursive-protection = yes\n"
                           "[access]\n"
                           "read = owner\n"
                           "[cgroup]\n"
                           "prefix = /kernel\n"
                           "import-at-start = yes\n"
                           "sample-interval = 0\n"
                           "auto-create = yes\n"
                           "prune = no\n"
                           "[metrics]\n"
                           "listen = [::1]:9464\n"
                           "allow-remote = yes\n";
        Config c;

        (void) state;
        assert_int_equal(parse(text, &c, NULL), 0);
        assert_string_equal(c.socket_path, "/run/x/memacctd.sock");
        assert_int_equal(c.workers, 3);
        assert_string_equal(c.state_dir, "/var/lib/x");
        assert_int_equal(c.frame_size, 128 * 1024);
        assert_int_equal(c.max_groups, 1000);
        assert_int_equal(c.max_depth, 8);
        assert_int_equal(c.sessions_per_uid, 16);
        assert_int_equal(c.outstanding_requests, 64);
        assert_true(c.output_buffer == 1024 * 1024);
        assert_int_equal(c.idle_timeout_sec, 300);
        assert_int_equal(c.frame_timeout_sec, 5);
        assert_int_equal(c.connections_per_uid, 7);
        assert_int_equal(c.connections, 70);
        assert_int_equal(c.subscriptions_per_uid, 9);
        assert_int_equal(c.subscriptions, 90);
        assert_int_equal(c.groups_per_uid, 11);
        assert_true(c.output_buffer_per_uid == 2 * 1024 * 1024);
        assert_true(c.output_buffer_total == 0);
        assert_int_equal(c.flush_interval_msec, 500);
        assert_true(c.charge_batch == 2 * 1024 * 1024);
        assert_true(c.rss_threshold == 64 * 1024);
        assert_true(c.recursive_protection);
        assert_int_equal(c.read_access, READ_ACCESS_OWNER);
        assert_string_equal(config_cgroup_prefix(&c), "/kernel");
        assert_true(c.cgroup_import_at_start);
        assert_int_equal(c.cgroup_sample_interval_sec, 0);
        assert_true(c.cgroup_auto_create);
        assert_false(c.cgroup_prune);
        assert_string_equal(c.metrics_listen, "[::1]:9464");
        assert_true(c.metrics_allow_remote);
        config_done(&c);
        /* config_done() leaves the defaults behind. */
        assert_null(c.socket_path);
        assert_int_equal(c.max_depth, 32);
}

static void test_sizes_take_suffixes_and_plain_bytes(void **state) {
        static const struct {
                const char *value;
                uint64_t bytes;
        } cases[] = {
                { "4096", 4096 }, { "8K", 8 << 10 }, { "8k", 8 << 10 }, { "3M", 3 << 20 },
                { "1G", 1ull << 30 }, { " 16K ", 16 << 10 },
        };

        (void) state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char text[128];
                Config c;

                snprintf(text, sizeof(text), "[limits]\noutput-buffer = %s\n", cases[i].value);
                assert_int_equal(parse(text, &c, NULL), 0);
                assert_true(c.output_buffer == cases[i].bytes);
                config_done(&c);
        }
        /* rss-threshold may be 0: every event syncs. */
        {
                Config c;

                assert_int_equal(parse("[accounting]\nrss-threshold = 0\n", &c, NULL), 0);
                assert_true(c.rss_threshold == 0);
                config_done(&c);
        }
}

static void test_booleans_and_access_values(void **state) {
        static const char *const yes[] = { "yes", "true", "on", "1", "YES", "True" };
        static const char *const no[] = { "no", "false", "off", "0", "No", "OFF" };
        static const char *const access[] = { "all", "owner", "root" };
        char text[128];
        Config c;

        (void) state;
        for (size_t i = 0; i < 6; i++) {
                snprintf(text, sizeof(text), "[accounting]\nrecursive-protection = %s\n", yes[i]);
                assert_int_equal(parse(text, &c, NULL), 0);
                assert_true(c.recursive_protection);
                config_done(&c);
                snprintf(text, sizeof(text), "[accounting]\nrecursive-protection = %s\n", no[i]);
                assert_int_equal(parse(text, &c, NULL), 0);
                assert_false(c.recursive_protection);
                config_done(&c);
        }
        for (ReadAccess a = 0; a < _READ_ACCESS_MAX; a++) {
                snprintf(text, sizeof(text), "[access]\nread = %s\n", access[a]);
                assert_int_equal(parse(text, &c, NULL), 0);
                assert_int_equal(c.read_access, a);
                assert_string_equal(read_access_to_string(a), access[a]);
                config_done(&c);
        }
}

static void test_comments_inline_and_whole_line(void **state) {
        Config c;

        (void) state;
        assert_int_equal(parse("# top\n[limits] ; the limits\n; note\ndepth = 12 ; twelve\n", &c, NULL), 0);
        assert_int_equal(c.max_depth, 12);
        config_done(&c);
}

static void test_unknown_keys_and_sections_name_the_line(void **state) {
        (void) state;
        expect_error("[limits]\ndepth = 4\nfoo = 1\n", 3, "unknown key 'foo' in [limits]");
        expect_error("# c\n[limts]\ndepth = 4\n", 2, "unknown section [limts]");
        /* An empty unknown section is refused too. */
        expect_error("[limits]\n\n[nothing]\n", 3, "unknown section [nothing]");
        expect_error("depth = 4\n", 1, "outside of any section");
        /* A key of another section. */
        expect_error("[daemon]\ndepth = 4\n", 2, "unknown key 'depth' in [daemon]");
}

static void test_bad_values_are_refused_with_the_key(void **state) {
        (void) state;
        expect_error("[limits]\nframe-size = 12Q\n", 2, "frame-size = 12Q: not a size");
        expect_error("[limits]\nframe-size = 1.5K\n", 2, "not a size");
        expect_error("[limits]\nframe-size = 100\n", 2, "frame-size = 100: out of range");
        expect_error("[limits]\nframe-size = 1G\n", 2, "out of range");
        expect_error("[limits]\noutput-buffer = max\n", 2, "output-buffer = max: out of range");
        expect_error("[limits]\ndepth = 0\n", 2, "depth = 0: out of range (1..255)");
        expect_error("[limits]\ndepth = 256\n", 2, "out of range (1..255)");
        expect_error("[limits]\ngroups = 0\n", 2, "groups = 0: out of range");
        expect_error("[limits]\noutstanding-requests = 0\n", 2, "out of range");
        expect_error("[limits]\nidle-timeout = -1\n", 2, "idle-timeout = -1: not a number");
        expect_error("[limits]\nframe-timeout = 10s\n", 2, "not a number");
        expect_error("[limits]\nsessions-per-uid = 99999999999999999999999\n", 2, "out of range");
        expect_error("[daemon]\nworkers = two\n", 2, "workers = two: not a number");
        expect_error("[daemon]\nworkers = 5000\n", 2, "out of range (0..1024)");
        expect_error("[daemon]\nsocket =\n", 2, "socket: must not be empty");
        expect_error("[daemon]\nstate-dir =\n", 2, "state-dir: must not be empty");
        expect_error("[accounting]\nflush-interval = 0\n", 2, "flush-interval = 0: out of range");
        expect_error("[cgroup]\nprefix = kernel\n", 2, "prefix = kernel: not an absolute group path");
        expect_error("[cgroup]\nprefix = /a//b\n", 2, "prefix = /a//b: not an absolute group path");
        expect_error("[cgroup]\nsample-interval = 86401\n", 2, "sample-interval = 86401: out of range");
        expect_error("[cgroup]\nauto-create = maybe\n", 2, "auto-create");
        expect_error("[accounting]\nrecursive-protection = maybe\n", 2, "not a boolean");
        expect_error("[accounting]\ncharge-batch = 1\n", 2, "charge-batch = 1: out of range");
        expect_error("[access]\nread = everyone\n", 2, "read = everyone: must be all, owner or root");
}

static void test_socket_path_longer_than_sun_path_is_refused(void **state) {
        char text[256], path[120];
        Config c;

        (void) state;
        memset(path, 'a', sizeof(path) - 1);
        path[0] = '/';
        path[sizeof(path) - 1] = 0;
        snprintf(text, sizeof(text), "[daemon]\nsocket = %s\n", path);
        expect_error(text, 2, "path too long");
        /* 107 bytes fit. */
        path[107] = 0;
        snprintf(text, sizeof(text), "[daemon]\nsocket = %s\n", path);
        assert_int_equal(parse(text, &c, NULL), 0);
        assert_int_equal(strlen(c.socket_path), 107);
        config_done(&c);
}

static void test_duplicate_keys_and_continuations_are_refused(void **state) {
        (void) state;
        expect_error("[limits]\ndepth = 4\n\ndepth = 5\n", 4, "depth set twice (first on line 2)");
        /* inih reads an indented line as a continuation of the key above. */
        expect_error("[limits]\ndepth = 4\n   5\n", 3, "set twice");
        /* The same key in a repeated section is still the same key. */
        expect_error("[limits]\ndepth = 4\n[access]\nread = all\n[limits]\ndepth = 4\n", 6, "set twice");
}

static void test_regions_are_declared_one_a_line(void **state) {
        static const char text[] = "[regions]\n"
                                   "region = gpu0 80G\n"
                                   "region = drm/0000:03:00.0/vram0   max ; the whole card\n"
                                   "region:nv.0:a@b\t512K\n";
        Config c, copy;

        (void) state;
        assert_int_equal(parse(text, &c, NULL), 0);
        assert_int_equal(c.n_regions, 3);
        assert_string_equal(c.regions[0].name, "gpu0");
        assert_true(c.regions[0].capacity == 80ull << 30);
        /* A name holds ':' and '/', which is why it is in the value. */
        assert_string_equal(c.regions[1].name, "drm/0000:03:00.0/vram0");
        assert_true(c.regions[1].capacity == UINT64_MAX);
        assert_string_equal(c.regions[2].name, "nv.0:a@b");
        assert_true(c.regions[2].capacity == 512 << 10);
        assert_int_equal(config_copy(&c, &copy), 0);
        assert_int_equal(copy.n_regions, 3);
        assert_string_equal(copy.regions[2].name, "nv.0:a@b");
        config_done(&copy);
        config_done(&c);
        /* None declared: none. */
        assert_int_equal(parse("[regions]\n", &c, NULL), 0);
        assert_int_equal(c.n_regions, 0);
        config_done(&c);
}

static void test_bad_region_declarations_name_the_line(void **state) {
        char text[4096];
        size_t n;

        (void) state;
        expect_error("[regions]\nregion = gpu0\n", 2, "region = gpu0: expected NAME CAPACITY");
        expect_error("[regions]\nregion = gpu0 1G 2G\n", 2, "expected NAME CAPACITY");
        expect_error("[regions]\nregion =\n", 2, "expected NAME CAPACITY");
        expect_error("[regions]\nregion = gpu0 1.5G\n", 2, "region = gpu0 1.5G: capacity not a size");
        expect_error("[regions]\nregion = gpu0 99999999999999999999\n", 2, "capacity out of range");
        expect_error("[regions]\nregion = gpu#0 1G\n", 2, "'gpu#0' is not a region name");
        expect_error("[regions]\nregion = memory 1G\n", 2, "'memory' is not a region name");
        snprintf(text, sizeof(text), "[regions]\nregion = %064d 1G\n", 0);
        expect_error(text, 2, "a region name is at most 63 bytes");
        expect_error("[regions]\nregion = gpu0 1G\n\nregion = gpu0 1G\n", 4,
                     "[regions] region gpu0 declared twice (first on line 2)");
        expect_error("[regions]\ncapacity = 1G\n", 2, "unknown key 'capacity' in [regions]");
        n = (size_t) snprintf(text, sizeof(text), "[regions]\n");
        for (int i = 0; i < MEM_REGION_MAX; i++)
                n += (size_t) snprintf(text + n, sizeof(text) - n, "region = r%d 1G\n", i);
        expect_error(text, MEM_REGION_MAX + 1, "more than 31 regions");
}

static void test_syntax_errors_and_earliest_error_win(void **state) {
        (void) state;
        expect_error("[limits]\ndepth 4\n", 2, "syntax error");
        expect_error("[limits\ndepth = 4\n", 1, "syntax error");
        /* A syntax error before a bad key is the one reported. */
        expect_error("[limits]\nnonsense\nfoo = 1\n", 2, "syntax error");
        /* A bad key before a syntax error is the one reported. */
        expect_error("[limits]\nfoo = 1\nnonsense\n", 2, "unknown key 'foo'");
}

static void test_long_lines_and_nul_bytes_are_refused(void **state) {
        char text[512];
        Config c;
        char *error = NULL;

        (void) state;
        snprintf(text, sizeof(text), "[limits]\n# %0300d\n", 0);
        expect_error(text, 2, "line too long");

        assert_int_equal(config_parse("[limits]\ndepth = 4\0\n", 20, "t.conf", &c, &error), -EINVAL);
        assert_non_null(strstr(error, "t.conf:2:"));
        assert_non_null(strstr(error, "NUL"));
        free(error);
}

static void test_line_numbers_count_crlf_and_missing_final_newline(void **state) {
        Config c;

        (void) state;
        expect_error("[limits]\r\ndepth = 4\r\nbar = 2", 3, "unknown key 'bar'");
        assert_int_equal(parse("[limits]\r\ndepth = 7", &c, NULL), 0);
        assert_int_equal(c.max_depth, 7);
        config_done(&c);
}

static void test_load_reads_a_file_and_names_it(void **state) {
        char path[] = "/tmp/test-config-XXXXXX";
        const char *text = "[limits]\ndepth = 9\n[nope]\n";
        char *error = NULL;
        Config c;
        int fd;

        (void) state;
        fd = mkstemp(path);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t) strlen(text));
        close(fd);
        assert_int_equal(config_load(path, &c, &error), -EINVAL);
        assert_non_null(error);
        assert_true(strncmp(error, path, strlen(path)) == 0);
        assert_non_null(strstr(error, ":3: unknown section [nope]"));
        free(error);

        fd = open(path, O_WRONLY | O_TRUNC);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, 19), 19);
        close(fd);
        assert_int_equal(config_load(path, &c, &error), 0);
        assert_int_equal(c.max_depth, 9);
        config_done(&c);
        unlink(path);

        assert_int_equal(config_load(path, &c, &error), -ENOENT);
        assert_non_null(error);
        assert_non_null(strstr(error, path));
        free(error);
}

static void test_metrics_listen_addresses(void **state) {
        ConfigListen l;
        Config c;

        (void) state;
        assert_int_equal(parse("[metrics]\nlisten = 127.0.0.1:9464\n", &c, NULL), 0);
        assert_string_equal(c.metrics_listen, "127.0.0.1:9464");
        assert_false(c.metrics_allow_remote);
        config_done(&c);
        /* Empty: off, as when not given. */
        assert_int_equal(parse("[metrics]\nlisten =\n", &c, NULL), 0);
        assert_null(c.metrics_listen);
        config_done(&c);
        /* A remote address only with allow-remote, whichever key comes first. */
        assert_int_equal(parse("[metrics]\nlisten = 0.0.0.0:9464\nallow-remote = yes\n", &c, NULL), 0);
        assert_string_equal(c.metrics_listen, "0.0.0.0:9464");
        assert_true(c.metrics_allow_remote);
        config_done(&c);
        expect_error("[metrics]\nlisten = 0.0.0.0:9464\n", 2, "listen = 0.0.0.0:9464: not a loopback address");
        expect_error("[metrics]\nallow-remote = no\nlisten = [::]:1\n", 3, "allow-remote = yes");
        expect_error("[metrics]\nlisten = 127.0.0.1\n", 2, "listen = 127.0.0.1: expected ADDRESS:PORT");
        expect_error("[metrics]\nlisten = 127.0.0.1:65536\n", 2, "listen = 127.0.0.1:65536");
        expect_error("[metrics]\nlisten = localhost.example:80\n", 2, "expected ADDRESS:PORT");
        expect_error("[metrics]\nlisten = unix:relative.sock\n", 2, "unix:/PATH");

        assert_int_equal(parse("[metrics]\nmax-groups = 5\n", &c, NULL), 0);
        assert_int_equal(c.metrics_max_groups, 5);
        config_done(&c);
        expect_error("[metrics]\nmax-groups = 0\n", 2, "max-groups = 0: out of range");
        expect_error("[metrics]\nmax-groups = 16777217\n", 2, "out of range");
        expect_error("[metrics]\nmax-groups = many\n", 2, "max-groups = many");
        expect_error("[metrics]\nallow-remote = maybe\n", 2, "allow-remote");
        expect_error("[metrics]\nport = 1\n", 2, "unknown key 'port' in [metrics]");

        assert_int_equal(config_listen_parse("127.0.0.1:9464", &l), 0);
        assert_int_equal(l.addr.ss_family, AF_INET);
        assert_true(l.local);
        assert_int_equal(config_listen_parse("127.1.2.3:0", &l), 0);
        assert_true(l.local);
        assert_int_equal(config_listen_parse("localhost:1", &l), 0);
        assert_true(l.local);
        assert_int_equal(config_listen_parse("10.0.0.1:9464", &l), 0);
        assert_false(l.local);
        assert_int_equal(config_listen_parse("[::1]:9464", &l), 0);
        assert_int_equal(l.addr.ss_family, AF_INET6);
        assert_true(l.local);
        assert_int_equal(config_listen_parse("[::ffff:127.0.0.1]:9464", &l), 0);
        assert_true(l.local);
        assert_int_equal(config_listen_parse("[::]:9464", &l), 0);
        assert_false(l.local);
        assert_int_equal(config_listen_parse("unix:/run/memacctd/metrics.sock", &l), 0);
        assert_int_equal(l.addr.ss_family, AF_UNIX);
        assert_true(l.local);
        assert_int_equal(config_listen_parse("", &l), -EINVAL);
        assert_int_equal(config_listen_parse(":9464", &l), -EINVAL);
        assert_int_equal(config_listen_parse("[::1:9464", &l), -EINVAL);
        assert_int_equal(config_listen_parse("::1:9464", &l), -EINVAL);
        assert_int_equal(config_listen_parse("127.0.0.1:-1", &l), -EINVAL);
        assert_int_equal(config_listen_parse("127.0.0.1:", &l), -EINVAL);
        assert_int_equal(config_listen_parse("unix:", &l), -EINVAL);
}

static void test_copy_is_deep(void **state) {
        Config a, b;

        (void) state;
        assert_int_equal(parse("[daemon]\nsocket = /x.sock\nstate-dir = /s\n[metrics]\nlisten = 127.0.0.1:1\n",
                               &a, NULL), 0);
        assert_int_equal(config_copy(&a, &b), 0);
        assert_ptr_not_equal(a.metrics_listen, b.metrics_listen);
        assert_string_equal(b.metrics_listen, "127.0.0.1:1");
        assert_string_equal(b.socket_path, "/x.sock");
        assert_ptr_not_equal(a.socket_path, b.socket_path);
        assert_ptr_not_equal(a.state_dir, b.state_dir);
        config_done(&a);
        assert_string_equal(b.state_dir, "/s");
        config_done(&b);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_empty_file_gives_the_defaults),
                cmocka_unit_test(test_every_key_is_read),
                cmocka_unit_test(test_sizes_take_suffixes_and_plain_bytes),
                cmocka_unit_test(test_booleans_and_access_values),
                cmocka_unit_test(test_comments_inline_and_whole_line),
                cmocka_unit_test(test_unknown_keys_and_sections_name_the_line),
                cmocka_unit_test(test_bad_values_are_refused_with_the_key),
                cmocka_unit_test(test_socket_path_longer_than_sun_path_is_refused),
                cmocka_unit_test(test_duplicate_keys_and_continuations_are_refused),
                cmocka_unit_test(test_syntax_errors_and_earliest_error_win),
                cmocka_unit_test(test_long_lines_and_nul_bytes_are_refused),
                cmocka_unit_test(test_line_numbers_count_crlf_and_missing_final_newline),
                cmocka_unit_test(test_load_reads_a_file_and_names_it),
                cmocka_unit_test(test_metrics_listen_addresses),
                cmocka_unit_test(test_copy_is_deep),
                cmocka_unit_test(test_regions_are_declared_one_a_line),
                cmocka_unit_test(test_bad_region_declarations_name_the_line),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
