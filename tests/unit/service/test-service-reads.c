/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The reads of the service (service-groups.c) without a daemon: get and
 * list, what they hand the callback, the errors of the callback as
 * refusals, and who may read what under each read access setting,
 * anonymous readers (the metrics listener's) included. Reads never
 * commit and never announce.
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "service-test.h"

static int get(Fixture *f, Peer *p, const char *path, const char *reclaim_root, unsigned flags, Reads *out,
               Refusal *rf) {
        refusal_init(rf);
        return service_get_group(f->svc, p, path, reclaim_root, flags, reads_collect, out, rf);
}

static int list(Fixture *f, Peer *p, const char *path, unsigned flags, Reads *out, Refusal *rf) {
        refusal_init(rf);
        return service_list_groups(f->svc, p, path, flags, reads_collect, out, rf);
}

static void assert_reads_are(const Reads *r, const char *const *paths, size_t n) {
        assert_int_equal(r->n, n);
        for (size_t i = 0; i < n; i++)
                assert_string_equal(r->paths[i], paths[i]);
}

/* ---- get ----------------------------------------------------------------- */

static void test_get_calls_back_once_with_the_group_info(void **state) {
        Fixture *f = *state;
        ServiceCharge c = kept_bytes("/d/x", 5 * PAGE);
        ServiceChargeResult res;
        Reads r = {};
        Refusal rf;

        refusal_init(&rf);
        assert_not_refused(service_charge(f->svc, f->root, &c, &res, &rf), &rf);
        assert_not_refused(get(f, f->delegate, "/d/x", NULL, SERVICE_READ_EXACT, &r, &rf), &rf);
        assert_int_equal(r.n, 1);
        assert_string_equal(r.paths[0], "/d/x");
        assert_true(r.had_info[0]);
        assert_true(r.info[0].current == c.bytes);
        assert_true(r.info[0].kept[MEM_STAT_ANON] == c.bytes);
        assert_int_equal(r.info[0].nr_children, 1);
        assert_int_equal(r.info[0].owner, UID_ROOT);
        assert_int_equal(fixture_commits(f), 1); /* the kept charge; the read adds none */
}

static void test_get_paths_only_passes_no_info(void **state) {
        Fixture *f = *state;
        Reads r = {};
        Refusal rf;

        assert_not_refused(get(f, f->other, "/e", NULL, SERVICE_READ_PATHS, &r, &rf), &rf);
        assert_int_equal(r.n, 1);
        assert_string_equal(r.paths[0], "/e");
        assert_false(r.had_info[0]);
}

static void test_get_reads_protection_relative_to_the_reclaim_root(void **state) {
        Fixture *f = *state;
        MemLimits l = { .set = MEM_LIMIT_MIN, .min = 4 * PAGE };
        ServiceCharge c = kept_bytes("/d/x", 8 * PAGE);
        ServiceChargeResult res;
        Reads r = {};
        Refusal rf;

        refusal_init(&rf);
        assert_not_refused(service_set_limits(f->svc, f->root, "/d/x", &l, false, &rf), &rf);
        assert_not_refused(service_charge(f->svc, f->root, &c, &res, &rf), &rf);
        /* Relative to itself a group is not protected; a child of the
         * reclaim root has its own setting (rule 1); from "/" the
         * unprotected /d caps it at nothing (rule 2). */
        assert_not_refused(get(f, f->root, "/d/x", "/d/x", 0, &r, &rf), &rf);
        assert_not_refused(get(f, f->root, "/d/x", "/d", 0, &r, &rf), &rf);
        assert_not_refused(get(f, f->root, "/d/x", "", 0, &r, &rf), &rf);
        assert_not_refused(get(f, f->root, "/d/x", NULL, 0, &r, &rf), &rf);
        assert_int_equal(r.n, 4);
        assert_true(r.info[0].effective_min == 0);
        assert_true(r.info[1].effective_min == l.min);
        assert_true(r.info[2].effective_min == 0);
        assert_true(r.info[3].effective_min == 0);
        assert_true(r.info[3].min == l.min);
}

static void test_get_refuses_a_reclaim_root_that_is_not_above(void **state) {
        Fixture *f = *state;
        Reads r = {};
        Refusal rf;

        assert_refused(get(f, f->root, "/d/x", "/a", 0, &r, &rf), &rf, -EINVAL,
                       "/d/x is not below the reclaim root /a");
        assert_refused(get(f, f->root, "/d", "/d/x", 0, &r, &rf), &rf, -EINVAL,
                       "/d is not below the reclaim root /d/x");
        assert_refused(get(f, f->root, "/d/x", "/nosuch", 0, &r, &rf), &rf, -ENOENT,
                       "/nosuch: no such group");
        assert_refused(get(f, f->root, "/d/x", "d", 0, &r, &rf), &rf, -EINVAL, "d: path must start with '/'");
        assert_int_equal(r.n, 0);
}

static void test_get_refuses_missing_and_malformed_groups(void **state) {
        Fixture *f = *state;
        Reads r = {};
        Refusal rf;

        assert_refused(get(f, f->root, "/nosuch", NULL, 0, &r, &rf), &rf, -ENOENT, "/nosuch: no such group");
        assert_refused(get(f, f->root, NULL, NULL, 0, &r, &rf), &rf, -EINVAL, "a group path is required");
        assert_refused(get(f, f->root, "", NULL, 0, &r, &rf), &rf, -EINVAL, "a group path is required");
        assert_refused(get(f, f->root, "/d/x/y/z/w", NULL, 0, &r, &rf), &rf, -EMLINK, "/d/x/y/z/w: too deep");
        assert_int_equal(r.n, 0);
}

static void test_get_reports_the_callback_errors(void **state) {
        Fixture *f = *state;
        Reads big = { .fail_at = 1, .fail_with = -ENOSPC }, oom = { .fail_at = 1, .fail_with = -ENOMEM };
        Refusal rf;

        assert_refused(get(f, f->root, "/a", NULL, 0, &big, &rf), &rf, -ENOSPC,
                       "/a: too many groups for one reply; list a subtree");
        assert_refused(get(f, f->root, "/a", NULL, 0, &oom, &rf), &rf, -ENOMEM, "out of memory");
}

static void test_get_by_an_anonymous_reader_only_while_reads_are_open(void **state) {
        Fixture *f = *state;
        Reads r = {};
        Refusal rf;

        assert_true(service_reads_open(f->svc));
        assert_not_refused(get(f, NULL, "/d/x", NULL, 0, &r, &rf), &rf);
        assert_int_equal(r.n, 1);
        fixture_settings(f, READ_ACCESS_OWNER, 0);
        assert_false(service_reads_open(f->svc));
        assert_refused(get(f, NULL, "/d/x", NULL, 0, &r, &rf), &rf, -EPERM, "/d/x: permission denied");
        fixture_settings(f, READ_ACCESS_ROOT, 0);
        assert_refused(get(f, NULL, "/", NULL, 0, &r, &rf), &rf, -EPERM, "/: permission denied");
        assert_int_equal(r.n, 1);
}

static void test_get_under_owner_access_reads_delegated_subtrees_only(void **state) {
        Fixture *f = *state;
        Reads r = {};
        Refusal rf;

        fixture_settings(f, READ_ACCESS_OWNER, 0);
        assert_not_refused(get(f, f->delegate, "/d", NULL, 0, &r, &rf), &rf);
        assert_not_refused(get(f, f->delegate, "/d/x/y", NULL, 0, &r, &rf), &rf);
        assert_not_refused(get(f, f->bus, "/d/x", NULL, 0, &r, &rf), &rf);
        assert_refused(get(f, f->delegate, "/e", NULL, 0, &r, &rf), &rf, -EPERM, "/e: permission denied");
        assert_refused(get(f, f->delegate, "/a", NULL, 0, &r, &rf), &rf, -EPERM, "/a: permission denied");
        assert_refused(get(f, f->other, "/d", NULL, 0, &r, &rf), &rf, -EPERM, "/d: permission denied");
        assert_refused(get(f, f->other, "/", NULL, 0, &r, &rf), &rf, -EPERM, "/: permission denied");
        assert_not_refused(get(f, f->root, "/e", NULL, 0, &r, &rf), &rf);
        assert_int_equal(r.n, 4);
}

static void test_get_under_root_access_reads_for_root_only(void **state) {
        Fixture *f = *state;
        Reads r = {};
        Refusal rf;

        fixture_settings(f, READ_ACCESS_ROOT, 0);
        assert_refused(get(f, f->delegate, "/d", NULL, 0, &r, &rf), &rf, -EPERM, "/d: permission denied");
        assert_refused(get(f, f->other, "/e", NULL, 0, &r, &rf), &rf, -EPERM, "/e: permission denied");
        assert_not_refused(get(f, f->root, "/d/x/y", NULL, 0, &r, &rf), &rf);
        assert_not_refused(get(f, service_daemon_peer(f->svc), "/e", NULL, 0, &r, &rf), &rf);
        assert_int_equal(r.n, 2);
}

/* ---- list ---------------------------------------------------------------- */

static void test_list_covers_the_children_only(void **state) {
        static const char *const children[] = { "/a", "/b", "/d", "/e" };
        Fixture *f = *state;
        Reads r = {}, same = {};
        Refusal rf;

        assert_not_refused(list(f, f->delegate, "/", 0, &r, &rf), &rf);
        assert_reads_are(&r, children, 4);
        for (size_t i = 0; i < r.n; i++)
                assert_true(r.had_info[i]);
        /* NULL and "" mean "/". */
        assert_not_refused(list(f, f->delegate, NULL, 0, &same, &rf), &rf);
        assert_reads_are(&same, children, 4);
        same.n = 0;
        assert_not_refused(list(f, f->delegate, "", SERVICE_READ_PATHS, &same, &rf), &rf);
        assert_reads_are(&same, children, 4);
        assert_false(same.had_info[0]);
}

static void test_list_recursive_covers_the_subtree_parents_first(void **state) {
        static const char *const subtree[] = { "/d", "/d/x", "/d/x/y" };
        Fixture *f = *state;
        Reads r = {};
        Refusal rf;

        assert_not_refused(list(f, f->other, "/d", SERVICE_READ_RECURSIVE | SERVICE_READ_EXACT, &r, &rf),
                           &rf);
        assert_reads_are(&r, subtree, 3);
        assert_int_equal(r.info[0].owner, UID_DELEGATE);
        assert_int_equal(r.info[1].nr_children, 1);
        r.n = 0;
        assert_not_refused(list(f, f->other, "/", SERVICE_READ_RECURSIVE, &r, &rf), &rf);
        assert_int_equal(r.n, TEST_TREE_GROUPS);
        assert_string_equal(r.paths[0], "/");
        assert_int_equal(fixture_commits(f), 0);
        assert_int_equal(f->sink.n, 0);
}

static void test_list_of_a_leaf_is_empty(void **state) {
        Fixture *f = *state;
        Reads r = {};
        Refusal rf;

        assert_not_refused(list(f, f->root, "/d/x/y", 0, &r, &rf), &rf);
        assert_int_equal(r.n, 0);
        assert_not_refused(list(f, f->root, "/d/x/y", SERVICE_READ_RECURSIVE, &r, &rf), &rf);
        assert_int_equal(r.n, 1);
}

static void test_list_under_owner_access_leaves_out_what_the_caller_may_not_read(void **state) {
        static const char *const mine[] = { "/d", "/d/x", "/d/x/y" }, *const theirs[] = { "/e" };
        Fixture *f = *state;
        Reads r = {}, o = {}, all = {}, anon = {};
        Refusal rf;

        fixture_settings(f, READ_ACCESS_OWNER, 0);
        assert_not_refused(list(f, f->delegate, "/", SERVICE_READ_RECURSIVE, &r, &rf), &rf);
        assert_reads_are(&r, mine, 3);
        assert_not_refused(list(f, f->other, "/", SERVICE_READ_RECURSIVE, &o, &rf), &rf);
        assert_reads_are(&o, theirs, 1);
        assert_not_refused(list(f, f->root, "/", SERVICE_READ_RECURSIVE, &all, &rf), &rf);
        assert_int_equal(all.n, TEST_TREE_GROUPS);
        assert_not_refused(list(f, NULL, "/", SERVICE_READ_RECURSIVE, &anon, &rf), &rf);
        assert_int_equal(anon.n, 0);
}

static void test_list_under_root_access_is_empty_for_others(void **state) {
        Fixture *f = *state;
        Reads r = {}, all = {};
        Refusal rf;

        fixture_settings(f, READ_ACCESS_ROOT, 0);
        assert_not_refused(list(f, f->delegate, "/d", SERVICE_READ_RECURSIVE, &r, &rf), &rf);
        assert_int_equal(r.n, 0);
        assert_not_refused(list(f, f->root, "/d", SERVICE_READ_RECURSIVE, &all, &rf), &rf);
        assert_int_equal(all.n, 3);
}

static void test_list_by_an_anonymous_reader_while_reads_are_open(void **state) {
        Fixture *f = *state;
        Reads r = {};
        Refusal rf;

        assert_not_refused(list(f, NULL, "/", SERVICE_READ_RECURSIVE, &r, &rf), &rf);
        assert_int_equal(r.n, TEST_TREE_GROUPS);
        assert_true(reads_has(&r, "/e"));
        assert_true(reads_has(&r, "/d/x/y"));
}

static void test_list_reports_the_callback_errors_with_the_listed_path(void **state) {
        Fixture *f = *state;
        Reads big = { .fail_at = 2, .fail_with = -ENOSPC }, oom = { .fail_at = 1, .fail_with = -ENOMEM };
        Reads sub = { .fail_at = 3, .fail_with = -ENOSPC };
        Refusal rf;

        assert_refused(list(f, f->root, NULL, SERVICE_READ_RECURSIVE, &big, &rf), &rf, -ENOSPC,
                       "/: too many groups for one reply; list a subtree");
        /* It stopped at the failing call. */
        assert_int_equal(big.n, 1);
        assert_refused(list(f, f->root, "/d", SERVICE_READ_RECURSIVE, &sub, &rf), &rf, -ENOSPC,
                       "/d: too many groups for one reply; list a subtree");
        assert_int_equal(sub.n, 2);
        assert_refused(list(f, f->root, "/", 0, &oom, &rf), &rf, -ENOMEM, "out of memory");
        assert_int_equal(oom.n, 0);
}

static void test_list_refuses_missing_and_malformed_tops(void **state) {
        Fixture *f = *state;
        Reads r = {};
        Refusal rf;

        assert_refused(list(f, f->root, "/nosuch", 0, &r, &rf), &rf, -ENOENT, "/nosuch: no such group");
        assert_refused(list(f, f->root, "d", 0, &r, &rf), &rf, -EINVAL, "d: path must start with '/'");
        assert_refused(list(f, f->root, "/d/./x", 0, &r, &rf), &rf, -EINVAL,
                       "/d/./x: '.' and '..' are not group names");
        assert_int_equal(r.n, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                SERVICE_TEST(test_get_calls_back_once_with_the_group_info),
                SERVICE_TEST(test_get_paths_only_passes_no_info),
                SERVICE_TEST(test_get_reads_protection_relative_to_the_reclaim_root),
                SERVICE_TEST(test_get_refuses_a_reclaim_root_that_is_not_above),
                SERVICE_TEST(test_get_refuses_missing_and_malformed_groups),
                SERVICE_TEST(test_get_reports_the_callback_errors),
                SERVICE_TEST(test_get_by_an_anonymous_reader_only_while_reads_are_open),
                SERVICE_TEST(test_get_under_owner_access_reads_delegated_subtrees_only),
                SERVICE_TEST(test_get_under_root_access_reads_for_root_only),
                SERVICE_TEST(test_list_covers_the_children_only),
                SERVICE_TEST(test_list_recursive_covers_the_subtree_parents_first),
                SERVICE_TEST(test_list_of_a_leaf_is_empty),
                SERVICE_TEST(test_list_under_owner_access_leaves_out_what_the_caller_may_not_read),
                SERVICE_TEST(test_list_under_root_access_is_empty_for_others),
                SERVICE_TEST(test_list_by_an_anonymous_reader_while_reads_are_open),
                SERVICE_TEST(test_list_reports_the_callback_errors_with_the_listed_path),
                SERVICE_TEST(test_list_refuses_missing_and_malformed_tops),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
