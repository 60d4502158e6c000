/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The saver (state/saver.c) with its real thread and a real state
 * directory: a committed change is reported saved only once the state file
 * on disk holds it; changes committed from several threads at once are all
 * saved, with fewer saves than changes (group commit); a directory that
 * cannot be written refuses durable changes and fails the OKs waiting, and
 * once it can be written again, changes are admitted and saved without a
 * restart. Runs in the concurrency suite too (ThreadSanitizer).
 */

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/core.h"
#include "core/group.h"
#include "file-util.h"
#include "state/saver.h"
#include "state/persist.h"

#define WRITERS 4
#define CHANGES_PER_WRITER 200

typedef struct Fixture {
        MemCore *core;
        Saver *d;
        char dir[64];
        pthread_mutex_t lock;
        unsigned wakes;
} Fixture;

static void woken(void *userdata) {
        Fixture *f = userdata;

        pthread_mutex_lock(&f->lock);
        f->wakes++;
        pthread_mutex_unlock(&f->lock);
}

/*
 * What the test is waiting for, for the watchdog to tell: a hang in a
 * save, a join or a grace period reads as a named step instead of a
 * silent timeout of the whole suite.
 */
static const char *volatile step = "start";
#define WATCHDOG_SEC 120

static void watchdog(int sig) {
        const char *s = step;

        (void) sig;
        (void) !write(STDERR_FILENO, "watchdog: stuck at: ", 20);
        (void) !write(STDERR_FILENO, s, strlen(s));
        (void) !write(STDERR_FILENO, "\n", 1);
        abort();
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw) {
        (void) st, (void) type, (void) ftw;
        return remove(path);
}

static int setup(void **state) {
        MemCoreConfig cc = MEM_CORE_CONFIG_DEFAULT;
        Fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        signal(SIGALRM, watchdog);
        alarm(WATCHDOG_SEC);
        step = "setup";
        pthread_mutex_init(&f->lock, NULL);
        snprintf(f->dir, sizeof(f->dir), "/tmp/test-durable-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        assert_int_equal(core_new(&cc, &f->core), 0);
        assert_int_equal(core_thread_register(f->core), 0);
        assert_int_equal(saver_new(f->core, f->dir, true, &f->d), 0);
        assert_int_equal(saver_add_waker(f->d, woken, f), 0);
        step = "setup: starting the saver";
        assert_int_equal(saver_start(f->d), 0);
        step = "test body";
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;

        step = "saver_free (the last save, the saver's join)";
        f->d = saver_free(f->d);
        core_thread_unregister(f->core);
        step = "core_free";
        f->core = core_free(f->core);
        /* Not system("rm -rf"): a fork in a process with threads can
         * hang under ThreadSanitizer. */
        step = "removing the state directory";
        assert_int_equal(nftw(f->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
        pthread_mutex_destroy(&f->lock);
        free(f);
        alarm(0);
        step = "between tests";
        return 0;
}

/* Wait until saver_check() says something other than "not yet". */
static int wait_check(Saver *d, uint64_t seq, Refusal *rf) {
        for (int i = 0; i < 5000; i++) {
                int r = saver_check(d, seq, rf);

                if (r != 0)
                        return r;
                usleep(1000);
        }
        return 0;
}

/* Does the state file or the journal after it hold @line (a group's path and the fields after it)? */
static bool state_holds(const char *dir, const char *line) {
        static const char *const files[] = { "state", "journal" };
        bool found = false;

        for (size_t i = 0; i < 2 && !found; i++) {
                char path[128], *text = NULL;
                size_t size;

                snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
                if (read_file_at(AT_FDCWD, path, 0, SIZE_MAX, &text, &size) < 0)
                        continue;
                found = memmem(text, size, line, strlen(line)) != NULL;
                free(text);
        }
        return found;
}

static void test_a_change_is_reported_saved_only_once_the_file_holds_it(void **state) {
        Fixture *f = *state;
        Refusal rf;
        uint64_t seq;

        refusal_init(&rf);
        assert_int_equal(saver_admit(f->d, &rf), 0);
        assert_int_equal(group_create(f->core, "/saved", 0), 0);
        seq = saver_committed(f->d, "/saved");
        assert_true(seq > 0);
        assert_int_equal(wait_check(f->d, seq, &rf), 1);
        assert_true(state_holds(f->dir, " /saved owner=0"));
        pthread_mutex_lock(&f->lock);
        assert_true(f->wakes > 0);
        pthread_mutex_unlock(&f->lock);
        /* A change committed later is not covered by that save. */
        assert_int_equal(saver_check(f->d, seq + 1, &rf), 0);
}

typedef struct Writer {
        Fixture *f;
        unsigned index;
        uint64_t last;
        int failures;
} Writer;

static void *writer_main(void *userdata) {
        Writer *w = userdata;
        Refusal rf;

        if (core_thread_register(w->f->core) < 0) {
                w->failures++;
                return NULL;
        }
        for (unsigned i = 0; i < CHANGES_PER_WRITER; i++) {
                char path[64];

                snprintf(path, sizeof(path), "/w%u-%u", w->index, i);
                refusal_init(&rf);
                if (saver_admit(w->f->d, &rf) < 0 || group_create(w->f->core, path, 0) < 0) {
                        w->failures++;
                        continue;
                }
                w->last = saver_committed(w->f->d, path);
                /* Like a client waiting for its OK before the next change. */
                if (wait_check(w->f->d, w->last, &rf) != 1)
                        w->failures++;
        }
        core_thread_unregister(w->f->core);
        return NULL;
}

static void test_concurrent_changes_are_all_saved_by_fewer_saves(void **state) {
        Fixture *f = *state;
        pthread_t threads[WRITERS];
        Writer writers[WRITERS];
        unsigned wakes;

        for (unsigned i = 0; i < WRITERS; i++) {
                writers[i] = (Writer) { .f = f, .index = i };
                assert_int_equal(pthread_create(&threads[i], NULL, writer_main, &writers[i]), 0);
        }
        step = "joining the writers";
        for (unsigned i = 0; i < WRITERS; i++) {
                assert_int_equal(pthread_join(threads[i], NULL), 0);
                assert_int_equal(writers[i].failures, 0);
        }
        assert_int_equal(saver_last_change(f->d), WRITERS * CHANGES_PER_WRITER);
        for (unsigned i = 0; i < WRITERS; i++) {
                char line[64];

                snprintf(line, sizeof(line), " /w%u-%u owner=0", i, CHANGES_PER_WRITER - 1);
                assert_true(state_holds(f->dir, line));
        }
        pthread_mutex_lock(&f->lock);
        wakes = f->wakes;
        pthread_mutex_unlock(&f->lock);
        /* One save per wake: group commit shares them. */
        print_message("%u changes, %u saves\n", WRITERS * CHANGES_PER_WRITER, wakes);
        assert_true(wakes < WRITERS * CHANGES_PER_WRITER);
}

static void test_an_unwritable_directory_refuses_then_recovers(void **state) {
        Fixture *f = *state;
        char moved[80];
        Refusal rf;
        uint64_t seq;
        int r = 0;

        /* The directory goes away: the next save of the whole state
         * fails (a batch would still reach the journal it has open). */
        snprintf(moved, sizeof(moved), "%s.moved", f->dir);
        assert_int_equal(rename(f->dir, moved), 0);
        assert_int_equal(group_create(f->core, "/lost", 0), 0);
        seq = saver_committed(f->d, NULL);
        refusal_init(&rf);
        assert_int_equal(wait_check(f->d, seq, &rf), -EIO);
        assert_non_null(strstr(rf.message, "in effect but could not be saved"));
        refusal_init(&rf);
        assert_int_equal(saver_admit(f->d, &rf), -ENOSPC);
        assert_non_null(strstr(rf.message, "No such file or directory"));

        /* Back: within a few retries changes are admitted, and the one in
         * effect is saved with the next save. */
        assert_int_equal(rename(moved, f->dir), 0);
        for (int i = 0; i < 50; i++) {
                refusal_init(&rf);
                r = saver_admit(f->d, &rf);
                if (r == 0)
                        break;
                usleep(100 * 1000);
        }
        assert_int_equal(r, 0);
        /* Admitted means the directory takes saves again, not that the
         * save holding /lost is done: once everything committed so far is
         * saved (and the saver idle, so that the state file and the
         * journal are not read halfway through a rewrite), it is there. */
        seq = saver_committed(f->d, NULL);
        assert_int_equal(wait_check(f->d, seq, &rf), 1);
        assert_true(state_holds(f->dir, " /lost owner=0"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_a_change_is_reported_saved_only_once_the_file_holds_it,
                                                setup, teardown),
                cmocka_unit_test_setup_teardown(test_concurrent_changes_are_all_saved_by_fewer_saves, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_an_unwritable_directory_refuses_then_recovers, setup,
                                                teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
