/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The event queue both transports keep events in
 * (client/lib/client-event-queue.c): oldest first, the oldest dropped
 * beyond CLIENT_MAX_EVENTS, copies that outlive what they were copied
 * from, and the last event popped readable until the next pop.
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "client-event-queue.h"

static void test_empty_queue_pops_nothing(void **state) {
        EventQueue q = {};
        memacct_event ev;

        (void) state;
        assert_false(event_queue_pop(&q, &ev));
        event_queue_done(&q);
}

static void test_events_pop_oldest_first_as_copies(void **state) {
        EventQueue q = {};
        memacct_event ev;
        char path[16], name[16];

        (void) state;
        for (unsigned i = 0; i < 3; i++) {
                snprintf(path, sizeof(path), "/g%u", i);
                snprintf(name, sizeof(name), "max");
                event_queue_push(&q, path, name, 10 + i);
        }
        /* The queue holds copies: the caller's buffers may change. */
        memset(path, 'x', sizeof(path) - 1);
        for (unsigned i = 0; i < 3; i++) {
                char want[16];

                snprintf(want, sizeof(want), "/g%u", i);
                assert_true(event_queue_pop(&q, &ev));
                assert_string_equal(ev.path, want);
                assert_string_equal(ev.name, "max");
                assert_int_equal(ev.count, 10 + i);
        }
        assert_false(event_queue_pop(&q, &ev));
        event_queue_done(&q);
}

static void test_popped_event_stays_readable_until_next_pop(void **state) {
        EventQueue q = {};
        memacct_event first, second;

        (void) state;
        event_queue_push(&q, "/a", "high", 1);
        event_queue_push(&q, "/b", "oom", 2);
        assert_true(event_queue_pop(&q, &first));
        /* A push between the pops must not disturb what the caller reads. */
        event_queue_push(&q, "/c", "low", 3);
        assert_string_equal(first.path, "/a");
        assert_string_equal(first.name, "high");
        assert_true(event_queue_pop(&q, &second));
        assert_string_equal(second.path, "/b");
        event_queue_done(&q);
}

static void test_full_queue_drops_the_oldest(void **state) {
        EventQueue q = {};
        memacct_event ev;
        unsigned extra = 5;
        char path[32];

        (void) state;
        for (unsigned i = 0; i < CLIENT_MAX_EVENTS + extra; i++) {
                snprintf(path, sizeof(path), "/g%u", i);
                event_queue_push(&q, path, "max", i);
        }
        /* The first @extra were dropped; the rest come in order. */
        for (unsigned i = extra; i < CLIENT_MAX_EVENTS + extra; i++) {
                assert_true(event_queue_pop(&q, &ev));
                assert_int_equal(ev.count, i);
        }
        assert_false(event_queue_pop(&q, &ev));
        event_queue_done(&q);
}

static void test_done_frees_a_queue_with_events_left(void **state) {
        EventQueue q = {};
        memacct_event ev;

        (void) state;
        event_queue_push(&q, "/a", "max", 1);
        event_queue_push(&q, "/b", "max", 2);
        assert_true(event_queue_pop(&q, &ev));
        /* Under ASan this is where a leak or a double free would show. */
        event_queue_done(&q);
        assert_null(q.ring);
        assert_int_equal(q.len, 0);
        assert_false(event_queue_pop(&q, &ev));
}

static void test_event_region_is_kept_per_event(void **state) {
        EventQueue q = {};
        memacct_event ev;
        const char *region;
        char name[32];

        (void) state;
        assert_int_equal(event_queue_region(&q, &region), -ENODATA);
        snprintf(name, sizeof(name), "drm/0000:03:00.0/vram0");
        event_queue_push_region(&q, "/a", "max", 1, 0, 0, name);
        event_queue_push_by(&q, "/b", "oom", 2, 0, 0);
        event_queue_push_region(&q, "/c", "low", 3, 0, 0, MEMACCT_REGION_MEMORY);
        /* A copy, as the path is. */
        memset(name, 'x', sizeof(name) - 1);
        assert_true(event_queue_pop(&q, &ev));
        assert_int_equal(event_queue_region(&q, &region), 0);
        assert_string_equal(region, "drm/0000:03:00.0/vram0");
        /* Memory's, named or not, reads as "memory". */
        assert_true(event_queue_pop(&q, &ev));
        assert_int_equal(event_queue_region(&q, &region), 0);
        assert_string_equal(region, MEMACCT_REGION_MEMORY);
        assert_true(event_queue_pop(&q, &ev));
        assert_int_equal(event_queue_region(&q, &region), 0);
        assert_string_equal(region, MEMACCT_REGION_MEMORY);
        event_queue_done(&q);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_empty_queue_pops_nothing),
                cmocka_unit_test(test_events_pop_oldest_first_as_copies),
                cmocka_unit_test(test_popped_event_stays_readable_until_next_pop),
                cmocka_unit_test(test_full_queue_drops_the_oldest),
                cmocka_unit_test(test_done_frees_a_queue_with_events_left),
                cmocka_unit_test(test_event_region_is_kept_per_event),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
