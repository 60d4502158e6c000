/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Kept charges on a delegation root: the delegator's part (root's, or the
 * parent owner's) is counted apart; the delegate releases only the bytes
 * beyond it, the delegator all, its own first. Through the core
 * (group_uncharge_kept_as()), the service (the refusal and its words) and
 * the state file (kept-delegator.ITEM: saved, restored, checked).
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/charge.h"
#include "service-test.h"
#include "state/persist.h"

static int keep(Fixture *f, Peer *p, const char *path, uint64_t bytes, bool charging, Refusal *rf) {
        ServiceCharge c = kept_bytes(path, bytes);
        ServiceChargeResult res;

        refusal_init(rf);
        return charging ? service_charge(f->svc, p, &c, &res, rf) : service_uncharge(f->svc, p, &c, rf);
}

static uint64_t kept_anon(Fixture *f, const char *path) {
        return tree_info(f, path).kept[MEM_STAT_ANON];
}

static uint64_t delegators_anon(Fixture *f, const char *path) {
        MemGroup *g = NULL;
        uint64_t v;

        assert_int_equal(group_get(f->core, path, &g), 0);
        v = group_kept_delegator(g, MEM_STAT_ANON);
        group_unref(g);
        return v;
}

static void test_delegate_may_not_release_the_delegators_kept_bytes(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_not_refused(keep(f, f->root, "/d", 8 * PAGE, true, &rf), &rf);
        assert_not_refused(keep(f, f->delegate, "/d", 2 * PAGE, true, &rf), &rf);
        assert_int_equal(kept_anon(f, "/d"), 10 * PAGE);
        assert_int_equal(delegators_anon(f, "/d"), 8 * PAGE);

        /* 3 pages are kept, but 1 of them is root's: refused, nothing released. */
        assert_refused(keep(f, f->delegate, "/d", 3 * PAGE, false, &rf), &rf, -EPERM,
                       "/d: %llu of the %llu anon bytes it keeps were kept by whoever delegated it, which its "
                       "delegate may not release; %llu are the delegate's",
                       (unsigned long long) (8 * PAGE), (unsigned long long) (10 * PAGE),
                       (unsigned long long) (2 * PAGE));
        assert_int_equal(kept_anon(f, "/d"), 10 * PAGE);
        assert_int_equal(tree_usage(f, "/d"), 10 * PAGE);
        /* Its own, yes; more than is kept at all is the usual underflow. */
        assert_not_refused(keep(f, f->delegate, "/d", 2 * PAGE, false, &rf), &rf);
        assert_int_equal(kept_anon(f, "/d"), 8 * PAGE);
        assert_refused(keep(f, f->delegate, "/d", 9 * PAGE, false, &rf), &rf, -ERANGE,
                       "/d: uncharge of %llu anon bytes is more than the group keeps",
                       (unsigned long long) (9 * PAGE));
        assert_int_equal(keep(f, f->delegate, "/d", 1, false, &rf), -EPERM);
        assert_int_equal(kept_anon(f, "/d"), 8 * PAGE);
        assert_int_equal(tree_usage(f, "/d"), 8 * PAGE);
}

static void test_delegator_releases_all_its_own_first(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_not_refused(keep(f, f->root, "/d", 4 * PAGE, true, &rf), &rf);
        assert_not_refused(keep(f, f->delegate, "/d", 6 * PAGE, true, &rf), &rf);
        /* Root takes 5: its 4, then 1 of the delegate's. */
        assert_not_refused(keep(f, f->root, "/d", 5 * PAGE, false, &rf), &rf);
        assert_int_equal(kept_anon(f, "/d"), 5 * PAGE);
        assert_int_equal(delegators_anon(f, "/d"), 0);
        assert_not_refused(keep(f, f->delegate, "/d", 5 * PAGE, false, &rf), &rf);
        assert_int_equal(tree_usage(f, "/d"), 0);
}

static void test_below_the_delegation_root_nothing_is_the_delegators(void **state) {
        Fixture *f = *state;
        Refusal rf;

        /* /d/x is root's, below /d: delegated by /d, not a delegation root. */
        assert_not_refused(keep(f, f->root, "/d/x", 3 * PAGE, true, &rf), &rf);
        assert_int_equal(delegators_anon(f, "/d/x"), 0);
        assert_not_refused(keep(f, f->delegate, "/d/x", 3 * PAGE, false, &rf), &rf);
        /* The delegate's own kept charges on the root are never the delegator's. */
        assert_not_refused(keep(f, f->delegate, "/d", PAGE, true, &rf), &rf);
        assert_int_equal(delegators_anon(f, "/d"), 0);
        assert_not_refused(keep(f, f->delegate, "/d", PAGE, false, &rf), &rf);
}

static void test_a_delegate_that_delegates_further_is_the_delegator_there(void **state) {
        Fixture *f = *state;
        Refusal rf;

        /* /d/n is delegated on by UID_DELEGATE, which may modify it. */
        tree_create(f, "/d/n", UID_OTHER);
        assert_not_refused(keep(f, f->delegate, "/d/n", 2 * PAGE, true, &rf), &rf);
        assert_not_refused(keep(f, f->other, "/d/n", PAGE, true, &rf), &rf);
        assert_int_equal(delegators_anon(f, "/d/n"), 2 * PAGE);
        assert_int_equal(keep(f, f->other, "/d/n", 2 * PAGE, false, &rf), -EPERM);
        assert_not_refused(keep(f, f->delegate, "/d/n", 3 * PAGE, false, &rf), &rf);
        assert_int_equal(tree_usage(f, "/d/n"), 0);
}

static void test_state_file_keeps_the_delegators_part(void **state) {
        Fixture *f = *state;
        char *text = NULL, *error = NULL;
        size_t n = 0;
        Refusal rf;

        assert_not_refused(keep(f, f->root, "/d", 8 * PAGE, true, &rf), &rf);
        assert_not_refused(keep(f, f->delegate, "/d", 2 * PAGE, true, &rf), &rf);
        assert_int_equal(persist_format(f->core, &text, &n), 0);
        assert_non_null(strstr(text, " kept.anon=40960 kept-delegator.anon=32768\n"));
        assert_int_equal(persist_check(text, n, 32, 65536, &error), TEST_TREE_GROUPS);
        free(error);
        free(text);
}

/* A state file of @body with the right header, count and checksum. */
static int check_body(const char *body, char **ret_error) {
        char text[2048];
        uint64_t h = UINT64_C(0xcbf29ce484222325);
        size_t lines = 0, n;

        for (const char *p = body; *p; p++)
                lines += *p == '\n';
        n = (size_t) snprintf(text, sizeof(text), "memacctd-state 1\n%s", body);
        for (size_t k = 0; k < n; k++) {
                h ^= (uint8_t) text[k];
                h *= UINT64_C(0x100000001b3);
        }
        n += (size_t) snprintf(text + n, sizeof(text) - n, "end %zu fnv1a64=%016llx\n", lines,
                               (unsigned long long) h);
        return persist_check(text, n, 32, 65536, ret_error);
}

static void test_state_check_refuses_a_delegators_part_that_cannot_be(void **state) {
        static const struct {
                const char *body, *error;
        } cases[] = {
                { "group / owner=0 max=max high=max low=0 min=0\n"
                  "group /d owner=7 max=max high=max low=0 min=0 kept.anon=4096 kept-delegator.anon=8192\n",
                  "line 3: kept-delegator.anon is more than kept.anon" },
                { "group / owner=0 max=max high=max low=0 min=0\n"
                  "group /d owner=0 max=max high=max low=0 min=0 kept.anon=4096 kept-delegator.anon=4096\n",
                  "line 3: kept-delegator.anon on a group that is not a delegation root" },
                { "group / owner=0 max=max high=max low=0 min=0\n"
                  "group /d owner=7 max=max high=max low=0 min=0\n"
                  "group /d/x owner=0 max=max high=max low=0 min=0\n"
                  "group /d/x/y owner=7 max=max high=max low=0 min=0 kept.anon=1 kept-delegator.anon=1\n",
                  "line 5: kept-delegator.anon on a group that is not a delegation root" },
                { "group / owner=0 max=max high=max low=0 min=0 kept.anon=4096 kept-delegator.anon=4096\n",
                  "line 2: kept-delegator.anon on a group that is not a delegation root" },
                { "group / owner=0 max=max high=max low=0 min=0\n"
                  "group /d owner=7 max=max high=max low=0 min=0 kept.anon=4096 kept-delegator.anon=1 "
                  "kept-delegator.anon=1\n",
                  "line 3: kept-delegator.anon given twice" },
                { "group / owner=0 max=max high=max low=0 min=0\n"
                  "group /d owner=7 max=max high=max low=0 min=0 kept-delegator.gpu=1\n",
                  "line 3: unknown stat item 'gpu'" },
        };
        char *error = NULL;

        (void) state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                assert_int_equal(check_body(cases[i].body, &error), -EBADMSG);
                assert_non_null(error);
                assert_string_equal(error, cases[i].error);
                free(error);
                error = NULL;
        }
        assert_int_equal(check_body("group / owner=0 max=max high=max low=0 min=0\n"
                                    "group /d owner=7 max=max high=max low=0 min=0 kept.anon=8192 "
                                    "kept-delegator.anon=4096\n",
                                    NULL),
                         2);
}

static void test_restore_gives_the_delegators_part_back(void **state) {
        Fixture *f = *state;
        MemCoreConfig cc = MEM_CORE_CONFIG_DEFAULT;
        char dir[] = "/tmp/test-kept-delegator-XXXXXX", path[64];
        MemCore *fresh = NULL;
        MemGroup *g = NULL;
        Refusal rf;

        assert_non_null(mkdtemp(dir));
        assert_not_refused(keep(f, f->root, "/d", 8 * PAGE, true, &rf), &rf);
        assert_not_refused(keep(f, f->delegate, "/d", 2 * PAGE, true, &rf), &rf);
        assert_int_equal(persist_save(f->core, dir, -1, true, NULL, NULL), 0);

        /* One core registered per thread: the fixture's gives way for a while. */
        core_thread_unregister(f->core);
        assert_int_equal(core_new(&cc, &fresh), 0);
        assert_int_equal(core_thread_register(fresh), 0);
        assert_int_equal(persist_restore(fresh, dir), 0);
        assert_int_equal(group_get(fresh, "/d", &g), 0);
        assert_int_equal(group_kept_delegator(g, MEM_STAT_ANON), 8 * PAGE);
        assert_int_equal(group_uncharge_kept_as(fresh, g, 3 * PAGE, MEM_STAT_ANON, true), -ERANGE);
        assert_int_equal(group_uncharge_kept_as(fresh, g, 2 * PAGE, MEM_STAT_ANON, true), 0);
        assert_int_equal(group_uncharge_kept_as(fresh, g, 8 * PAGE, MEM_STAT_ANON, false), 0);
        assert_int_equal(group_kept_delegator(g, MEM_STAT_ANON), 0);
        group_unref(g);
        core_thread_unregister(fresh);
        core_free(fresh);
        assert_int_equal(core_thread_register(f->core), 0);

        for (const char *const *name = (const char *const[]) { "state", "state.old", NULL }; *name; name++) {
                snprintf(path, sizeof(path), "%s/%s", dir, *name);
                (void) unlink(path);
        }
        assert_int_equal(rmdir(dir), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                SERVICE_TEST(test_delegate_may_not_release_the_delegators_kept_bytes),
                SERVICE_TEST(test_delegator_releases_all_its_own_first),
                SERVICE_TEST(test_below_the_delegation_root_nothing_is_the_delegators),
                SERVICE_TEST(test_a_delegate_that_delegates_further_is_the_delegator_there),
                SERVICE_TEST(test_state_file_keeps_the_delegators_part),
                cmocka_unit_test(test_state_check_refuses_a_delegators_part_that_cannot_be),
                SERVICE_TEST(test_restore_gives_the_delegators_part_back),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
