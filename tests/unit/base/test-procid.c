/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Process instances (procid.c): the start time out of /proc/PID/stat
 * whatever comm holds, refusals of a malformed line, and the stamps of
 * live processes: the same for the same process however it is asked
 * for, different for another, none for a pid no process has.
 */

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/procid.h"

/* A stat line with @comm and starttime @start, the other fields as a kernel writes them. */
static int line(char *buf, size_t size, const char *comm, unsigned long long start) {
        return snprintf(buf, size,
                        "4242 (%s) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 %llu "
                        "12345678 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n",
                        comm, start);
}

static uint64_t start_of(const char *comm, unsigned long long start) {
        char buf[512];
        uint64_t v = 0;
        int n = line(buf, sizeof(buf), comm, start);

        assert_true(n > 0 && (size_t) n < sizeof(buf));
        assert_int_equal(proc_stat_start_time(buf, (size_t) n, &v), 0);
        return v;
}

static void test_start_time_is_field_22_whatever_comm_holds(void **state) {
        (void) state;
        assert_int_equal(start_of("sleep", 987654), 987654);
        /* Spaces, parentheses, and a fake tail of fields inside comm. */
        assert_int_equal(start_of("a b) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 111 (", 5), 5);
        assert_int_equal(start_of(")))", 77), 77);
        assert_int_equal(start_of("", 0), 0);
}

static void test_start_time_refuses_malformed_lines(void **state) {
        static const char *const bad[] = {
                "",
                "4242 sleep S 1",                    /* no parentheses */
                "4242 (sleep S 1 2 3",               /* no ')' */
                "x42 (sleep) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 5 1", /* pid */
                "4242 (sleep) S 1 2 3 4 5 6 7 8 9",  /* cut before field 22 */
                "4242 (sleep) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 x 1",
                "4242 (sleep) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 5x 1",
                "4242 (sleep) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17  18 5 1", /* empty field */
                "4242 (sleep) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 99999999999999999999 1",
                /* Above the 62 bits a stamp has room for. */
                "4242 (sleep) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 4611686018427387904 1",
        };
        uint64_t v = 12345;

        (void) state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                int r = proc_stat_start_time(bad[i], strlen(bad[i]), &v);

                if (r != -EBADMSG)
                        fail_msg("line %zu \"%s\": %d, want -EBADMSG", i, bad[i], r);
        }
        assert_int_equal(v, 12345);
        /* The line ends at the size given, not at a NUL. */
        assert_int_equal(proc_stat_start_time("4242 (a) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 5 1",
                                              30, &v),
                         -EBADMSG);
}

static void test_live_stamps_name_one_process(void **state) {
        uint64_t self, again, child_stamp, via_pidfd;
        pid_t child;
        int pidfd, status;

        (void) state;
        assert_int_equal(proc_instance_of_pid(getpid(), &self), 0);
        assert_int_equal(proc_instance_of_pid(getpid(), &again), 0);
        assert_true(self == again);
        assert_true((self & PROC_INSTANCE_KIND_MASK) == PROC_INSTANCE_PIDFS ||
                    (self & PROC_INSTANCE_KIND_MASK) == PROC_INSTANCE_START);

        child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                pause();
                _exit(0);
        }
        assert_int_equal(proc_instance_of_pid(child, &child_stamp), 0);
        assert_true(child_stamp != self);
        pidfd = (int) syscall(SYS_pidfd_open, child, 0);
        if (pidfd >= 0) {
                assert_int_equal(proc_instance_of_pidfd(child, pidfd, &via_pidfd), 0);
                assert_true(via_pidfd == child_stamp);
        }
        assert_int_equal(kill(child, SIGKILL), 0);
        assert_int_equal(waitpid(child, &status, 0), child);
        /* Reaped: its pid names no process now (unless already reused,
         * by another stamp), and its pidfd still gives its own stamp. */
        if (proc_instance_of_pid(child, &again) == 0)
                assert_true(again != child_stamp);
        if (pidfd >= 0) {
                assert_int_equal(proc_instance_of_pidfd(child, pidfd, &via_pidfd), 0);
                if ((via_pidfd & PROC_INSTANCE_KIND_MASK) == PROC_INSTANCE_PIDFS)
                        assert_true(via_pidfd == child_stamp);
                else
                        assert_true((via_pidfd & PROC_INSTANCE_KIND_MASK) == PROC_INSTANCE_GONE);
                close(pidfd);
        }
        assert_int_equal(proc_instance_of_pid(0, &again), -ESRCH);
}

static void test_gone_stamps_are_all_different(void **state) {
        uint64_t a = proc_instance_gone(), b = proc_instance_gone();

        (void) state;
        assert_true((a & PROC_INSTANCE_KIND_MASK) == PROC_INSTANCE_GONE);
        assert_true((b & PROC_INSTANCE_KIND_MASK) == PROC_INSTANCE_GONE);
        assert_true(a != b);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_start_time_is_field_22_whatever_comm_holds),
                cmocka_unit_test(test_start_time_refuses_malformed_lines),
                cmocka_unit_test(test_live_stamps_name_one_process),
                cmocka_unit_test(test_gone_stamps_are_all_different),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
