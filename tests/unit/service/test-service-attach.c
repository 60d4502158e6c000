/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * service_attach_to(): the group an Attach answers. A path given is
 * answered as the group spells it; "" and "auto" with the group the
 * placement rule chose; a refusal writes nothing; a short buffer gets a
 * terminated prefix.
 */

#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "service-test.h"
#include "cgroup/placement.h"

static int attach_to(Fixture *f, Peer *p, const char *path, char *buf, size_t size, Refusal *rf) {
        refusal_init(rf);
        return service_attach_to(f->svc, p, path, buf, size, rf);
}

static void test_a_path_is_answered(void **state) {
        Fixture *f = *state;
        Peer *p = fixture_peer_new(f, UID_ROOT, true, false);
        char buf[MEM_PATH_MAX + 1] = "";
        Refusal rf;

        assert_not_refused(attach_to(f, p, "/d/x", buf, sizeof(buf), &rf), &rf);
        assert_string_equal(buf, "/d/x");
        /* Again elsewhere: the answer follows. */
        assert_not_refused(attach_to(f, p, "/a", buf, sizeof(buf), &rf), &rf);
        assert_string_equal(buf, "/a");
}

static void test_a_refusal_writes_nothing(void **state) {
        Fixture *f = *state;
        Peer *p = fixture_peer_new(f, UID_OTHER, true, false);
        char buf[16] = "untouched";
        Refusal rf;

        assert_int_equal(attach_to(f, p, "/nope", buf, sizeof(buf), &rf), -ENOENT);
        assert_string_equal(buf, "untouched");
        /* Not its group: refused as use of another's. */
        assert_int_equal(attach_to(f, p, "/a", buf, sizeof(buf), &rf), -EPERM);
        assert_string_equal(buf, "untouched");
}

static void test_a_short_buffer_is_terminated(void **state) {
        Fixture *f = *state;
        Peer *p = fixture_peer_new(f, UID_ROOT, true, false);
        char buf[4] = "zzz";
        Refusal rf;

        assert_not_refused(attach_to(f, p, "/d/x/y", buf, sizeof(buf), &rf), &rf);
        assert_string_equal(buf, "/d/");
        /* No buffer at all is service_attach(). */
        assert_not_refused(attach_to(f, p, "/b", NULL, 0, &rf), &rf);
}

/* "auto": the group of the rule covering our own cgroup, not the word. */
static void test_auto_is_answered_with_the_rules_group(void **state) {
        Fixture *f = *state;
        char cg[PATH_MAX], buf[MEM_PATH_MAX + 1] = "", file[PATH_MAX];
        Peer *me;
        Refusal rf;
        int r;

        r = placement_proc_cgroup(getpid(), cg, sizeof(cg));
        if (r < 0) {
                print_message("SKIP: no memory cgroup line in /proc/self/cgroup (%s)\n", strerror(-r));
                skip();
        }
        me = fixture_peer_with_pid(f, UID_ROOT, getpid(), true, false);
        refusal_init(&rf);
        assert_not_refused(service_add_rule(f->svc, f->root, cg, "/d/x", 0, &rf), &rf);
        assert_not_refused(attach_to(f, me, "auto", buf, sizeof(buf), &rf), &rf);
        assert_string_equal(buf, "/d/x");
        memset(buf, 0, sizeof(buf));
        assert_not_refused(attach_to(f, me, "", buf, sizeof(buf), &rf), &rf);
        assert_string_equal(buf, "/d/x");
        snprintf(file, sizeof(file), "%s/%s", f->state_dir, PLACEMENT_FILE);
        (void) unlink(file);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                SERVICE_TEST(test_a_path_is_answered),
                SERVICE_TEST(test_a_refusal_writes_nothing),
                SERVICE_TEST(test_a_short_buffer_is_terminated),
                SERVICE_TEST(test_auto_is_answered_with_the_rules_group),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
