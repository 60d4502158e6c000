/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Charges and uncharges through the service (service-charges.c) without
 * a daemon: session charges (which attach an unattached session) and
 * kept ones, the result's hints, and every refusal, with usage after a
 * refusal as it was. Kept charges are durable and committed; session
 * charges are not.
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "core/charge.h"
#include "core/counter.h"
#include "core/session.h"
#include "service-test.h"

static int charge(Fixture *f, Peer *p, ServiceCharge c, ServiceChargeResult *res, Refusal *rf) {
        refusal_init(rf);
        return service_charge(f->svc, p, &c, res, rf);
}

static int uncharge(Fixture *f, Peer *p, ServiceCharge c, Refusal *rf) {
        refusal_init(rf);
        return service_uncharge(f->svc, p, &c, rf);
}

static ServiceCharge with_stat(ServiceCharge c, const char *stat) {
        c.stat = stat;
        return c;
}

/* The group @p's session is attached to, NULL for none: the path only. */
static const char *attached_to(Peer *p) {
        MemGroup *g = p->session ? atomic_load(&p->session->group) : NULL;

        return g ? g->path : NULL;
}

/* Usage everywhere in the tree is still zero. */
static void assert_nothing_charged(Fixture *f) {
        static const char *const all[] = { "/", "/a", "/b", "/d", "/d/x", "/d/x/y", "/e" };

        for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
                assert_true(tree_usage(f, all[i]) == 0);
}

/* ---- session charges --------------------------------------------------------- */

static void test_session_charge_attaches_and_is_held_by_the_session(void **state) {
        Fixture *f = *state;
        ServiceCharge c = session_bytes("/d/x", 3 * PAGE);
        ServiceChargeResult res;
        Refusal rf;

        assert_null(attached_to(f->delegate));
        assert_not_refused(charge(f, f->delegate, c, &res, &rf), &rf);
        assert_string_equal(attached_to(f->delegate), "/d/x");
        assert_true(session_held(f->delegate->session, MEM_STAT_ANON) == c.bytes);
        assert_true(tree_usage(f, "/d/x") == c.bytes);
        assert_true(tree_usage(f, "/d") == c.bytes);
        assert_true(tree_usage(f, "/") == c.bytes);
        assert_int_equal(tree_info(f, "/d/x").nr_attached, 1);
        assert_true(tree_info(f, "/d/x").kept[MEM_STAT_ANON] == 0);
        /* No max anywhere: nothing above it, no hint. */
        assert_true(res.margin == UINT64_MAX);
        assert_false(res.over_max);
        assert_int_equal(fixture_commits(f), 0);
}

static void test_session_charge_goes_to_the_attached_group_without_a_path(void **state) {
        Fixture *f = *state;
        ServiceChargeResult res;
        Refusal rf;

        assert_not_refused(charge(f, f->delegate, session_bytes("/d", PAGE), &res, &rf), &rf);
        assert_not_refused(charge(f, f->delegate, session_bytes(NULL, 2 * PAGE), &res, &rf), &rf);
        assert_not_refused(charge(f, f->delegate, session_bytes("", 4 * PAGE), &res, &rf), &rf);
        /* Naming the attached group again is the same. */
        assert_not_refused(charge(f, f->delegate, session_bytes("/d", 8 * PAGE), &res, &rf), &rf);
        assert_true(tree_usage(f, "/d") == 15 * PAGE);
        assert_int_equal(fixture_commits(f), 0);
}

static void test_session_charge_without_a_group_is_refused(void **state) {
        Fixture *f = *state;
        ServiceChargeResult res;
        Refusal rf;

        assert_refused(charge(f, f->delegate, session_bytes(NULL, PAGE), &res, &rf), &rf, -ENOTCONN,
                       "session not attached to a group");
        assert_refused(charge(f, f->root, session_bytes("", PAGE), &res, &rf), &rf, -ENOTCONN,
                       "session not attached to a group");
        assert_nothing_charged(f);
}

static void test_session_charge_elsewhere_than_attached_is_refused(void **state) {
        Fixture *f = *state;
        ServiceChargeResult res;
        Refusal rf;

        assert_not_refused(charge(f, f->delegate, session_bytes("/d/x", PAGE), &res, &rf), &rf);
        assert_refused(charge(f, f->delegate, session_bytes("/d", PAGE), &res, &rf), &rf, -EINVAL,
                       "/d: the session is attached to /d/x; move it first");
        assert_refused(charge(f, f->delegate, session_bytes("/d/x/y", PAGE), &res, &rf), &rf, -EINVAL,
                       "/d/x/y: the session is attached to /d/x; move it first");
        assert_string_equal(attached_to(f->delegate), "/d/x");
        assert_true(tree_usage(f, "/d") == PAGE);
        assert_true(tree_usage(f, "/d/x/y") == 0);
}

static void test_session_charge_of_a_group_not_delegated_is_refused(void **state) {
        Fixture *f = *state;
        ServiceChargeResult res;
        Refusal rf;

        assert_refused(charge(f, f->delegate, session_bytes("/a", PAGE), &res, &rf), &rf, -EPERM,
                       "/a: permission denied");
        assert_refused(charge(f, f->other, session_bytes("/d/x", PAGE), &res, &rf), &rf, -EPERM,
                       "/d/x: permission denied");
        assert_refused(charge(f, f->delegate, session_bytes("/", PAGE), &res, &rf), &rf, -EPERM,
                       "/: permission denied");
        /* Refused before attaching. */
        assert_null(attached_to(f->delegate));
        assert_null(attached_to(f->other));
        assert_int_equal(tree_info(f, "/a").nr_attached, 0);
        assert_nothing_charged(f);
}

static void test_session_charge_of_a_missing_group_is_refused(void **state) {
        Fixture *f = *state;
        ServiceChargeResult res;
        Refusal rf;

        assert_refused(charge(f, f->root, session_bytes("/nosuch", PAGE), &res, &rf), &rf, -ENOENT,
                       "/nosuch: no such group");
        assert_refused(charge(f, f->root, session_bytes("nosuch", PAGE), &res, &rf), &rf, -EINVAL,
                       "nosuch: path must start with '/'");
        assert_null(attached_to(f->root));
        assert_nothing_charged(f);
}

/* ---- kept charges ------------------------------------------------------------ */

static void test_kept_charge_belongs_to_the_group_and_is_committed(void **state) {
        Fixture *f = *state;
        ServiceCharge c = with_stat(kept_bytes("/d/x", 2 * PAGE), "device");
        ServiceChargeResult res;
        MemGroupInfo info;
        Refusal rf;

        assert_not_refused(charge(f, f->delegate, c, &res, &rf), &rf);
        info = tree_info(f, "/d/x");
        assert_true(info.kept[MEM_STAT_DEVICE] == c.bytes);
        assert_true(info.stat_local[MEM_STAT_DEVICE] == (int64_t) c.bytes);
        assert_true(info.current == c.bytes);
        /* Not the session's: it stays unattached and holds nothing. */
        assert_null(attached_to(f->delegate));
        assert_true(session_held(f->delegate->session, MEM_STAT_DEVICE) == 0);
        assert_int_equal(fixture_commits(f), 1);
}

static void test_kept_charge_needs_use_of_the_group(void **state) {
        Fixture *f = *state;
        ServiceChargeResult res;
        Refusal rf;

        assert_refused(charge(f, f->other, kept_bytes("/d", PAGE), &res, &rf), &rf, -EPERM,
                       "/d: permission denied");
        assert_refused(charge(f, f->delegate, kept_bytes("/e", PAGE), &res, &rf), &rf, -EPERM,
                       "/e: permission denied");
        assert_refused(charge(f, f->delegate, kept_bytes(NULL, PAGE), &res, &rf), &rf, -EINVAL,
                       "a group path is required");
        assert_refused(charge(f, f->delegate, kept_bytes("/nosuch", PAGE), &res, &rf), &rf, -ENOENT,
                       "/nosuch: no such group");
        assert_nothing_charged(f);
        assert_int_equal(fixture_commits(f), 0);
        /* The delegated group itself may be used. */
        assert_not_refused(charge(f, f->delegate, kept_bytes("/d", PAGE), &res, &rf), &rf);
        assert_int_equal(fixture_commits(f), 1);
}

/* ---- what every charge checks ------------------------------------------------ */

static void test_charge_without_bytes_is_refused(void **state) {
        Fixture *f = *state;
        ServiceCharge s = session_bytes("/d", PAGE), k = kept_bytes("/d", PAGE);
        ServiceChargeResult res;
        Refusal rf;

        s.has_bytes = k.has_bytes = false;
        assert_refused(charge(f, f->delegate, s, &res, &rf), &rf, -EINVAL, "bytes is required");
        assert_refused(charge(f, f->delegate, k, &res, &rf), &rf, -EINVAL, "bytes is required");
        assert_refused(uncharge(f, f->delegate, s, &rf), &rf, -EINVAL, "bytes is required");
        assert_refused(uncharge(f, f->delegate, k, &rf), &rf, -EINVAL, "bytes is required");
        assert_null(attached_to(f->delegate));
        assert_nothing_charged(f);
        assert_int_equal(fixture_commits(f), 0);
}

static void test_charge_of_an_unknown_stat_item_is_refused(void **state) {
        Fixture *f = *state;
        ServiceChargeResult res;
        Refusal rf;

        assert_refused(charge(f, f->delegate, with_stat(session_bytes("/d", PAGE), "nosuch"), &res, &rf), &rf,
                       -EINVAL, "unknown stat item 'nosuch'");
        assert_refused(charge(f, f->delegate, with_stat(kept_bytes("/d", PAGE), "ANON"), &res, &rf), &rf,
                       -EINVAL, "unknown stat item 'ANON'");
        assert_refused(uncharge(f, f->delegate, with_stat(kept_bytes("/d", PAGE), "nosuch"), &rf), &rf,
                       -EINVAL, "unknown stat item 'nosuch'");
        assert_nothing_charged(f);
}

static void test_charge_is_accounted_to_the_stat_item_named(void **state) {
        Fixture *f = *state;
        ServiceChargeResult res;
        MemGroupInfo info;
        Refusal rf;

        assert_not_refused(
                charge(f, f->delegate, with_stat(session_bytes("/d/x", 3 * PAGE), "file"), &res, &rf), &rf);
        assert_not_refused(charge(f, f->delegate, with_stat(session_bytes(NULL, PAGE), ""), &res, &rf), &rf);
        info = tree_info(f, "/d/x");
        assert_true(info.stat_local[MEM_STAT_FILE] == (int64_t) (3 * PAGE));
        assert_true(info.stat_local[MEM_STAT_ANON] == (int64_t) PAGE);
        assert_true(session_held(f->delegate->session, MEM_STAT_FILE) == 3 * PAGE);
}

static void test_kept_stock_refill_is_refused(void **state) {
        Fixture *f = *state;
        ServiceCharge c = kept_bytes("/a", PAGE);
        ServiceChargeResult res;
        Refusal rf;

        c.stock = true;
        assert_refused(charge(f, f->root, c, &res, &rf), &rf, -EINVAL,
                       "a stock refill belongs to the session, not the group");
        assert_nothing_charged(f);
        assert_int_equal(fixture_commits(f), 0);
}

static void test_stock_refill_without_a_stock_page_is_refused(void **state) {
        Fixture *f = *state;
        ServiceCharge c = session_bytes("/d", 4 * PAGE);
        ServiceChargeResult res;
        Refusal rf;

        c.stock = true;
        assert_refused(charge(f, f->delegate, c, &res, &rf), &rf, -EINVAL,
                       "a stock refill needs StockSetup first");
        assert_nothing_charged(f);
        assert_true(session_held(f->delegate->session, MEM_STAT_ANON) == 0);
}

static void test_charge_larger_than_the_largest_is_refused(void **state) {
        Fixture *f = *state;
        ServiceChargeResult res;
        Refusal rf;

        assert_refused(charge(f, f->root, session_bytes("/a", MEM_CHARGE_MAX + 1), &res, &rf), &rf,
                       -EOVERFLOW, "/a: size too large");
        assert_refused(charge(f, f->root, kept_bytes("/b", MEM_CHARGE_MAX + 1), &res, &rf), &rf, -EOVERFLOW,
                       "/b: size too large");
        assert_refused(uncharge(f, f->root, kept_bytes("/b", MEM_CHARGE_MAX + 1), &rf), &rf, -EOVERFLOW,
                       "/b: size too large");
        assert_nothing_charged(f);
        assert_int_equal(fixture_commits(f), 0);
}

/* ---- limits ------------------------------------------------------------------ */

static void test_only_root_forces_a_charge_past_max(void **state) {
        Fixture *f = *state;
        ServiceCharge s = session_bytes("/d", PAGE), k = kept_bytes("/d", PAGE);
        ServiceChargeResult res;
        Refusal rf;

        s.force = k.force = true;
        assert_refused(charge(f, f->delegate, s, &res, &rf), &rf, -EPERM,
                       "only root forces a charge past max");
        assert_refused(charge(f, f->delegate, k, &res, &rf), &rf, -EPERM,
                       "only root forces a charge past max");
        assert_null(attached_to(f->delegate));
        assert_nothing_charged(f);
}

static void test_forced_charge_passes_max_and_says_so(void **state) {
        Fixture *f = *state;
        ServiceCharge c = session_bytes("/d/x", 3 * PAGE);
        ServiceChargeResult res;
        const Recorded *max;
        Refusal rf;

        tree_set_max(f, "/d/x", 2 * PAGE);
        c.force = true;
        assert_not_refused(charge(f, f->root, c, &res, &rf), &rf);
        assert_true(res.over_max);
        assert_true(res.margin == 0);
        assert_true(tree_usage(f, "/d/x") == c.bytes);
        max = event_log_find(&f->sink, EVENT_MEMORY, MEM_EVENT_MAX, "/d/x");
        assert_non_null(max);
        assert_int_equal(max->count, tree_info(f, "/d/x").events_local[MEM_EVENT_MAX]);
        assert_int_equal(fixture_commits(f), 0);
}

static void test_charge_refused_by_a_max_names_the_refusing_group(void **state) {
        Fixture *f = *state;
        MemLimits l = limits_max(4 * PAGE);
        ServiceChargeResult res;
        Refusal rf;

        refusal_init(&rf);
        assert_not_refused(service_set_limits(f->svc, f->root, "/", &l, false, &rf), &rf);
        assert_not_refused(charge(f, f->delegate, session_bytes("/d/x", 3 * PAGE), &res, &rf), &rf);
        assert_true(res.margin == l.max - 3 * PAGE);
        assert_refused(charge(f, f->delegate, session_bytes(NULL, 2 * PAGE), &res, &rf), &rf, -EDQUOT,
                       "/d/x: limit exceeded (max of /)");
        assert_string_equal(rf.refused_by, "/");
        assert_refused(charge(f, f->root, kept_bytes("/a", 2 * PAGE), &res, &rf), &rf, -EDQUOT,
                       "/a: limit exceeded (max of /)");
        assert_string_equal(rf.refused_by, "/");
        /* Usage as it was, each refusal counted where the max is. */
        assert_true(tree_usage(f, "/d/x") == 3 * PAGE);
        assert_true(tree_usage(f, "/a") == 0);
        assert_true(tree_usage(f, "/") == 3 * PAGE);
        assert_int_equal(tree_info(f, "/").failcnt, 2);
        assert_int_equal(fixture_commits(f), 1); /* the limit; neither refused charge */
}

static void test_charge_refused_by_an_inner_max_names_it(void **state) {
        Fixture *f = *state;
        ServiceChargeResult res;
        Refusal rf;

        tree_set_max(f, "/d", 2 * PAGE);
        assert_refused(charge(f, f->delegate, session_bytes("/d/x/y", 3 * PAGE), &res, &rf), &rf, -EDQUOT,
                       "/d/x/y: limit exceeded (max of /d)");
        assert_string_equal(rf.refused_by, "/d");
        assert_nothing_charged(f);
        assert_int_equal(tree_info(f, "/d").failcnt, 1);
}

static void test_charge_result_reports_high_throttle_and_margin(void **state) {
        Fixture *f = *state;
        MemLimits l = { .set = MEM_LIMIT_MAX | MEM_LIMIT_HIGH, .max = 16 * PAGE, .high = 2 * PAGE };
        ServiceCharge c = session_bytes("/d/x", 6 * PAGE);
        ServiceChargeResult res;
        Refusal rf;

        refusal_init(&rf);
        assert_not_refused(service_set_limits(f->svc, f->delegate, "/d/x", &l, false, &rf), &rf);
        assert_not_refused(charge(f, f->delegate, c, &res, &rf), &rf);
        assert_true(res.over_high == c.bytes - l.high);
        assert_true(res.throttle_usec ==
                    charge_high_delay_usec((int64_t) c.bytes, (int64_t) l.high, c.bytes));
        assert_true(res.margin == l.max - c.bytes);
        assert_false(res.over_max);
        assert_non_null(event_log_find(&f->sink, EVENT_MEMORY, MEM_EVENT_HIGH, "/d/x"));
}

/* ---- uncharges --------------------------------------------------------------- */

static void test_uncharge_releases_what_the_session_holds_without_commit(void **state) {
        Fixture *f = *state;
        ServiceChargeResult res;
        Refusal rf;

        assert_not_refused(charge(f, f->delegate, session_bytes("/d/x", 4 * PAGE), &res, &rf), &rf);
        assert_not_refused(uncharge(f, f->delegate, session_bytes(NULL, 3 * PAGE), &rf), &rf);
        assert_not_refused(uncharge(f, f->delegate, session_bytes("/d/x", 0), &rf), &rf);
        assert_true(tree_usage(f, "/d/x") == PAGE);
        assert_true(session_held(f->delegate->session, MEM_STAT_ANON) == PAGE);
        assert_int_equal(fixture_commits(f), 0);
}

static void test_uncharge_of_more_than_the_session_holds_is_refused(void **state) {
        Fixture *f = *state;
        ServiceCharge c = session_bytes(NULL, 2 * PAGE);
        ServiceChargeResult res;
        Refusal rf;

        assert_not_refused(charge(f, f->delegate, session_bytes("/d/x", PAGE), &res, &rf), &rf);
        assert_refused(uncharge(f, f->delegate, c, &rf), &rf, -ERANGE,
                       "/d/x: uncharge of %llu anon bytes is more than the session holds",
                       (unsigned long long) c.bytes);
        /* Held as anon, not as file. */
        assert_refused(uncharge(f, f->delegate, with_stat(session_bytes(NULL, PAGE), "file"), &rf), &rf,
                       -ERANGE, "/d/x: uncharge of %llu file bytes is more than the session holds",
                       (unsigned long long) PAGE);
        assert_true(tree_usage(f, "/d/x") == PAGE);
        assert_true(session_held(f->delegate->session, MEM_STAT_ANON) == PAGE);
}

static void test_kept_uncharge_releases_and_is_committed(void **state) {
        Fixture *f = *state;
        ServiceCharge c = kept_bytes("/a", 8 * KIB), u = kept_bytes("/a", 2 * KIB);
        ServiceChargeResult res;
        Refusal rf;

        assert_not_refused(charge(f, f->root, c, &res, &rf), &rf);
        assert_not_refused(uncharge(f, f->root, u, &rf), &rf);
        assert_true(tree_info(f, "/a").kept[MEM_STAT_ANON] == c.bytes - u.bytes);
        assert_true(tree_usage(f, "/a") == c.bytes - u.bytes);
        assert_int_equal(fixture_commits(f), 2);
}

static void test_kept_uncharge_of_more_than_the_group_keeps_is_refused(void **state) {
        Fixture *f = *state;
        ServiceCharge c = kept_bytes("/a", 4 * KIB), u = kept_bytes("/a", 8192);
        ServiceChargeResult res;
        Refusal rf;

        assert_not_refused(charge(f, f->root, c, &res, &rf), &rf);
        assert_refused(uncharge(f, f->root, u, &rf), &rf, -ERANGE,
                       "/a: uncharge of %llu anon bytes is more than the group keeps",
                       (unsigned long long) u.bytes);
        assert_true(tree_info(f, "/a").kept[MEM_STAT_ANON] == c.bytes);
        assert_int_equal(fixture_commits(f), 1);
}

static void test_uncharge_is_refused_as_a_charge_would_be(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_refused(uncharge(f, f->delegate, session_bytes(NULL, PAGE), &rf), &rf, -ENOTCONN,
                       "session not attached to a group");
        assert_refused(uncharge(f, f->other, kept_bytes("/d", PAGE), &rf), &rf, -EPERM,
                       "/d: permission denied");
        assert_refused(uncharge(f, f->other, session_bytes("/d", PAGE), &rf), &rf, -EPERM,
                       "/d: permission denied");
        assert_refused(uncharge(f, f->root, kept_bytes("/nosuch", PAGE), &rf), &rf, -ENOENT,
                       "/nosuch: no such group");
        assert_null(attached_to(f->other));
        assert_int_equal(fixture_commits(f), 0);
}

static void test_uncharge_ignores_force_and_stock(void **state) {
        Fixture *f = *state;
        ServiceCharge u = kept_bytes("/d", PAGE);
        ServiceChargeResult res;
        Refusal rf;

        assert_not_refused(charge(f, f->delegate, kept_bytes("/d", 2 * PAGE), &res, &rf), &rf);
        /* Neither applies to an uncharge: no "only root forces", no "belongs to the session". */
        u.force = u.stock = true;
        assert_not_refused(uncharge(f, f->delegate, u, &rf), &rf);
        assert_not_refused(uncharge(f, f->delegate, u, &rf), &rf);
        assert_true(tree_usage(f, "/d") == 0);
}

/* An uncharge releases; it has no business placing the session. A refused
 * one leaves the session where it was (unattached), so that the group it
 * named can still be removed. */
static void test_refused_uncharge_attaches_nothing(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_int_equal(uncharge(f, f->delegate, session_bytes("/d/x/y", PAGE), &rf), -ERANGE);
        assert_null(attached_to(f->delegate));
        assert_int_equal(tree_info(f, "/d/x/y").nr_attached, 0);
        refusal_init(&rf);
        assert_not_refused(service_remove_group(f->svc, f->root, "/d/x/y", &rf), &rf);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                SERVICE_TEST(test_session_charge_attaches_and_is_held_by_the_session),
                SERVICE_TEST(test_session_charge_goes_to_the_attached_group_without_a_path),
                SERVICE_TEST(test_session_charge_without_a_group_is_refused),
                SERVICE_TEST(test_session_charge_elsewhere_than_attached_is_refused),
                SERVICE_TEST(test_session_charge_of_a_group_not_delegated_is_refused),
                SERVICE_TEST(test_session_charge_of_a_missing_group_is_refused),
                SERVICE_TEST(test_kept_charge_belongs_to_the_group_and_is_committed),
                SERVICE_TEST(test_kept_charge_needs_use_of_the_group),
                SERVICE_TEST(test_charge_without_bytes_is_refused),
                SERVICE_TEST(test_charge_of_an_unknown_stat_item_is_refused),
                SERVICE_TEST(test_charge_is_accounted_to_the_stat_item_named),
                SERVICE_TEST(test_kept_stock_refill_is_refused),
                SERVICE_TEST(test_stock_refill_without_a_stock_page_is_refused),
                SERVICE_TEST(test_charge_larger_than_the_largest_is_refused),
                SERVICE_TEST(test_only_root_forces_a_charge_past_max),
                SERVICE_TEST(test_forced_charge_passes_max_and_says_so),
                SERVICE_TEST(test_charge_refused_by_a_max_names_the_refusing_group),
                SERVICE_TEST(test_charge_refused_by_an_inner_max_names_it),
                SERVICE_TEST(test_charge_result_reports_high_throttle_and_margin),
                SERVICE_TEST(test_uncharge_releases_what_the_session_holds_without_commit),
                SERVICE_TEST(test_uncharge_of_more_than_the_session_holds_is_refused),
                SERVICE_TEST(test_kept_uncharge_releases_and_is_committed),
                SERVICE_TEST(test_kept_uncharge_of_more_than_the_group_keeps_is_refused),
                SERVICE_TEST(test_uncharge_is_refused_as_a_charge_would_be),
                SERVICE_TEST(test_uncharge_ignores_force_and_stock),
                SERVICE_TEST(test_refused_uncharge_attaches_nothing),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
