/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-dbus-client's tests of every operation and every refusal, on twin
 * trees (dbus-client-twin.h): each call made on the socket handle and on
 * the bus handle must give the same result, errno, message and refused
 * path. The refusals are root's, those of a uid that was delegated a
 * subtree (in a child that dropped to it), and those of [access] read =
 * owner and [limits] sessions-per-uid = 2.
 */

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <memacct.h>

#include "bus-test-util.h"
#include "dbus-client-operations.h"
#include "dbus-client-twin.h"

/* This process's memory cgroup ("/" when none is found). */
static void own_memory_cgroup(char *buf, size_t size) {
        FILE *f = fopen("/proc/self/cgroup", "re");
        char line[1024];

        snprintf(buf, size, "/");
        if (!f)
                return;
        while (fgets(line, sizeof(line), f)) {
                char *c = strchr(line, ':'), *path = c ? strchr(c + 1, ':') : NULL;

                if (!path)
                        continue;
                path[strcspn(path, "\n")] = 0;
                /* v1 memory, or the v2 unified line ("0::/x"). */
                if (strncmp(c + 1, "memory:", 7) == 0 || (c[1] == ':' && strcmp(buf, "/") == 0))
                        snprintf(buf, size, "%s", path + 1);
                if (strncmp(c + 1, "memory:", 7) == 0)
                        break;
        }
        fclose(f);
}

void test_same_operations(void **state) {
        memacct *s = sock_open(), *b = bus_open();
        memacct_limits top = { .set = MEMACCT_LIMIT_MAX | MEMACCT_LIMIT_HIGH | MEMACCT_LIMIT_LOW |
                                      MEMACCT_LIMIT_MIN,
                               .max = 1024 * K, .high = 768 * K, .low = 256 * K, .min = 128 * K };
        memacct_limits max64 = { .set = MEMACCT_LIMIT_MAX, .max = 64 * K };
        memacct_limits low1g = { .set = MEMACCT_LIMIT_LOW, .low = 1024 * 1024 * K };
        memacct_limits max10 = { .set = MEMACCT_LIMIT_MAX, .max = 10 * K };
        memacct_limits max16 = { .set = MEMACCT_LIMIT_MAX, .max = 16 * K };
        memacct_limits nomax = { .set = MEMACCT_LIMIT_MAX | MEMACCT_LIMIT_HIGH, .max = MEMACCT_UNLIMITED,
                                 .high = MEMACCT_UNLIMITED };
        memacct_group_info *g[2] = {};
        memacct_group_list *l[2] = {};
        memacct_charge_result cr[2] = {};
        memacct_client_info c[2] = {};
        memacct_import_result ir[2] = {};
        unsigned moved[2] = {};
        char cg[512];

        (void) state;
        trees[0] = "/ts";
        trees[1] = "/tb";
        compared = 0;

        /* CreateGroup */
        TWIN(memacct_create_group(m, T(""), &top, MEMACCT_NO_OWNER), 0);
        TWIN(memacct_create_group(m, T("/u"), NULL, MEMACCT_NO_OWNER), 0);
        TWIN(memacct_create_group(m, T("/u/v"), &max64, MEMACCT_NO_OWNER), 0);
        TWIN(memacct_create_group(m, T("/w"), &low1g, MEMACCT_NO_OWNER), 0);
        TWIN(memacct_create_group(m, T("/d"), NULL, NOBODY), 0);
        TWIN(memacct_create_group(m, T(""), NULL, MEMACCT_NO_OWNER), -EEXIST);
        TWIN(memacct_create_group(m, T("/nope/x"), NULL, MEMACCT_NO_OWNER), -ENOENT);
        TWIN(memacct_create_group(m, T("/bad%name"), NULL, MEMACCT_NO_OWNER), -EINVAL);
        TWIN(memacct_create_group(m, T("/u/"), NULL, MEMACCT_NO_OWNER), -EINVAL);
        TWIN(memacct_create_group(m, "/", NULL, MEMACCT_NO_OWNER), -EEXIST);
        TWIN(memacct_create_group(m, "", NULL, MEMACCT_NO_OWNER), -EINVAL);

        /* GetGroup */
        TWIN(memacct_get_group(m, T(""), NULL, MEMACCT_EXACT, &g[SIDE]), 0);
        same_infos("a new group", g, true);
        g[0] = memacct_group_info_free(g[0]);
        g[1] = memacct_group_info_free(g[1]);
        TWIN(memacct_get_group(m, T("/nope"), NULL, 0, &g[SIDE]), -ENOENT);
        TWIN(memacct_get_group(m, "relative", NULL, 0, &g[SIDE]), -EINVAL);

        /* Charge, Uncharge: kept */
        TWIN(memacct_charge(m, T("/u"), 100 * K, MEMACCT_STAT_FILE, MEMACCT_KEEP, &cr[SIDE]), 0);
        TWIN(memacct_charge(m, T("/u"), 12 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, &cr[SIDE]), 0);
        TWIN(memacct_charge(m, T("/u/v"), 100 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, &cr[SIDE]), -EDQUOT);
        TWIN(memacct_charge(m, T("/u"), 2048 * K, MEMACCT_STAT_SHMEM, MEMACCT_KEEP, &cr[SIDE]), -EDQUOT);
        /* Past high: the reply says by how much, both ways. */
        TWIN(memacct_charge(m, T("/w"), 800 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, &cr[SIDE]), 0);
        compared++;
        CHECK(cr[0].over_high == cr[1].over_high && cr[0].throttle_usec == cr[1].throttle_usec &&
              cr[0].over_max == cr[1].over_max);
        CHECK(cr[1].over_high > 0);
        /* Above what any charge may be (MEM_CHARGE_MAX, 2^48), and an item out of range. */
        /* (-EOVERFLOW is INVALID_ARGUMENT on the wire, -EINVAL for the client.) */
        TWIN(memacct_charge(m, T("/u"), (UINT64_C(1) << 48) + 1, MEMACCT_STAT_ANON, MEMACCT_KEEP, &cr[SIDE]),
             -EINVAL);
        TWIN(memacct_charge(m, T("/u"), UINT64_MAX, MEMACCT_STAT_ANON, MEMACCT_KEEP, &cr[SIDE]), -EINVAL);
        TWIN(memacct_charge(m, T("/u"), 4 * K, MEMACCT_STAT_MAX, MEMACCT_KEEP, &cr[SIDE]), -EINVAL);
        TWIN(memacct_charge(m, T("/nope"), 4 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, &cr[SIDE]), -ENOENT);
        TWIN(memacct_uncharge(m, T("/u"), 200 * K, MEMACCT_STAT_FILE, MEMACCT_KEEP), -ERANGE);
        TWIN(memacct_uncharge(m, T("/u"), 50 * K, MEMACCT_STAT_FILE, MEMACCT_KEEP), 0);
        TWIN(memacct_uncharge(m, T("/u"), 1 * K, MEMACCT_STAT_SOCK, MEMACCT_KEEP), -ERANGE);
        TWIN(memacct_uncharge(m, T("/u"), (UINT64_C(1) << 48) + 1, MEMACCT_STAT_ANON, MEMACCT_KEEP), ANY);
        TWIN(memacct_uncharge(m, T("/w"), 800 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP), 0);
        TWIN(memacct_get_group(m, T("/u"), NULL, MEMACCT_EXACT, &g[SIDE]), 0);
        same_infos("after the charges", g, false);
        g[0] = memacct_group_info_free(g[0]);
        g[1] = memacct_group_info_free(g[1]);

        /* SetLimits */
        TWIN(memacct_set_limits(m, T(""), &max10, 0), -EBUSY);
        TWIN(memacct_set_limits(m, T(""), &max10, MEMACCT_FORCE), 0);
        TWIN(memacct_get_group(m, T(""), NULL, 0, &g[SIDE]), 0);
        same_infos("a forced max", g, false);
        CHECK(g[1] && g[1]->max == 10 * K);
        g[0] = memacct_group_info_free(g[0]);
        g[1] = memacct_group_info_free(g[1]);
        TWIN(memacct_charge(m, T("/u"), 1 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, &cr[SIDE]), -EDQUOT);
        TWIN(memacct_set_limits(m, T(""), &nomax, 0), 0);
        TWIN(memacct_set_limits(m, T("/nope"), &max10, 0), -ENOENT);

        /* ResetPeak */
        TWIN(memacct_reset_peak(m, T("/u")), 0);
        TWIN(memacct_reset_peak(m, T("/nope")), -ENOENT);
        TWIN(memacct_get_group(m, T("/u"), NULL, MEMACCT_EXACT, &g[SIDE]), 0);
        same_infos("a reset peak", g, false);
        CHECK(g[1] && g[1]->peak == g[1]->current);
        g[0] = memacct_group_info_free(g[0]);
        g[1] = memacct_group_info_free(g[1]);

        /* ListGroups */
        TWIN(memacct_list_groups(m, T(""), MEMACCT_RECURSIVE | MEMACCT_EXACT, &l[SIDE]), 0);
        same_lists("a recursive list", l, false);
        CHECK(memacct_group_list_size(l[1]) == 5);
        l[0] = memacct_group_list_free(l[0]);
        l[1] = memacct_group_list_free(l[1]);
        TWIN(memacct_list_groups(m, T(""), 0, &l[SIDE]), 0);
        same_lists("the children", l, false);
        CHECK(memacct_group_list_size(l[1]) == 3);
        l[0] = memacct_group_list_free(l[0]);
        l[1] = memacct_group_list_free(l[1]);
        TWIN(memacct_list_groups(m, T("/nope"), 0, &l[SIDE]), -ENOENT);
        /* A list of more than a page of names (the bus asks 1024 at a
         * time): the bus side follows the cursor to the same list. */
        TWIN(memacct_create_group(m, T("/many"), NULL, MEMACCT_NO_OWNER), 0);
        for (unsigned i = 0; i < 2100; i++) {
                char name[32];

                snprintf(name, sizeof(name), "/many/g%u", i);
                TWIN(memacct_create_group(m, T(name), NULL, MEMACCT_NO_OWNER), 0);
        }
        TWIN(memacct_list_groups(m, T("/many"), MEMACCT_RECURSIVE, &l[SIDE]), 0);
        same_lists("a list of three pages", l, false);
        CHECK(memacct_group_list_size(l[1]) == 2101);
        l[0] = memacct_group_list_free(l[0]);
        l[1] = memacct_group_list_free(l[1]);
        for (unsigned i = 0; i < 2100; i++) {
                char name[32];

                snprintf(name, sizeof(name), "/many/g%u", i);
                TWIN(memacct_remove_group(m, T(name)), 0);
        }
        TWIN(memacct_remove_group(m, T("/many")), 0);

        /* Attach and session charges: this process has a session on each
         * transport, one client (GetClient and MoveProcess count both). */
        TWIN(memacct_charge(m, NULL, 4 * K, MEMACCT_STAT_ANON, 0, &cr[SIDE]), -ENOTCONN);
        TWIN(memacct_uncharge(m, NULL, 4 * K, MEMACCT_STAT_ANON, 0), -ENOTCONN);
        TWIN(memacct_move(m, 0, T("/u"), &moved[SIDE]), -ENOTCONN);
        TWIN(memacct_attach(m, T("/nope")), -ENOENT);
        TWIN(memacct_attach(m, T("/w")), 0);
        TWIN(memacct_charge(m, NULL, 16 * K, MEMACCT_STAT_ANON, 0, &cr[SIDE]), 0);
        TWIN(memacct_charge(m, NULL, 8 * K, MEMACCT_STAT_FILE, 0, &cr[SIDE]), 0);
        /* Attached elsewhere; holding charges. */
        TWIN(memacct_charge(m, T("/u"), 4 * K, MEMACCT_STAT_ANON, 0, &cr[SIDE]), -EINVAL);
        TWIN(memacct_attach(m, T("/u")), -EBUSY);
        TWIN(memacct_charge(m, NULL, (UINT64_C(1) << 48) + 1, MEMACCT_STAT_ANON, 0, &cr[SIDE]), -EINVAL);
        TWIN(memacct_uncharge(m, NULL, 64 * K, MEMACCT_STAT_ANON, 0), -ERANGE);
        TWIN(memacct_get_client(m, 0, MEMACCT_EXACT, &c[SIDE]), 0);
        same_clients("GetClient of the caller", c);
        CHECK(c[1].pid == (uint32_t) getpid() && c[1].anon == 32 * K && c[1].file == 16 * K);
        TWIN(memacct_get_client(m, getpid(), MEMACCT_EXACT, &c[SIDE]), 0);
        same_clients("GetClient by pid", c);
        TWIN(memacct_get_client(m, 2147483646, 0, &c[SIDE]), -ENOENT);
        /* MoveProcess: the caller's own session, then both by pid, and back. */
        TWIN(memacct_move(m, 0, T("/u"), &moved[SIDE]), 0);
        compared++;
        CHECK(moved[0] == 1 && moved[1] == 1);
        TWIN(memacct_get_group(m, T("/u"), NULL, 0, &g[SIDE]), 0);
        same_infos("a moved session", g, false);
        g[0] = memacct_group_info_free(g[0]);
        g[1] = memacct_group_info_free(g[1]);
        TWIN(memacct_move(m, getpid(), T("/w"), &moved[SIDE]), 0);
        compared++;
        CHECK(moved[0] == 2 && moved[1] == 2);
        TWIN(memacct_move(m, 0, T("/u"), &moved[SIDE]), 0);
        TWIN(memacct_move(m, 0, T("/nope"), &moved[SIDE]), -ENOENT);
        TWIN(memacct_move(m, 2147483646, T("/u"), &moved[SIDE]), -ENOENT);
        /* 24 K held, into a group of max 16 K. */
        TWIN(memacct_set_limits(m, T("/u/v"), &max16, 0), 0);
        TWIN(memacct_move(m, 0, T("/u/v"), &moved[SIDE]), -EDQUOT);
        TWIN(memacct_uncharge(m, NULL, 16 * K, MEMACCT_STAT_ANON, 0), 0);
        TWIN(memacct_uncharge(m, NULL, 8 * K, MEMACCT_STAT_FILE, 0), 0);
        TWIN(memacct_uncharge(m, NULL, 1, MEMACCT_STAT_FILE, 0), -ERANGE);
        /* "auto": the mirror of our kernel cgroup, which is not imported
         * (and [cgroup] auto-create is off). */
        TWIN(memacct_attach(m, "auto"), ANY);
        TWIN(memacct_attach(m, ""), ANY);

        /* ImportCgroups */
        TWIN(memacct_import_cgroups(m, "/memacct-no-such-cgroup", T("/imp"), &ir[SIDE]), -ENOENT);
        TWIN(memacct_import_cgroups(m, "bad//cgroup", T("/imp"), &ir[SIDE]), -EINVAL);
        TWIN(memacct_import_cgroups(m, "/", "relative", &ir[SIDE]), -EINVAL);
        own_memory_cgroup(cg, sizeof(cg));
        if (strcmp(cg, "/") != 0) {
                /* Our own cgroup, a leaf that no other test touches. */
                TWIN(memacct_import_cgroups(m, cg, T("/imp"), &ir[SIDE]), ANY);
                compared++;
                CHECK(ir[0].created == ir[1].created && ir[0].updated == ir[1].updated &&
                      ir[0].unchanged == ir[1].unchanged);
                TWIN(memacct_import_cgroups(m, cg, T("/imp"), &ir[SIDE]), ANY);
                compared++;
                CHECK(ir[0].created == ir[1].created && ir[0].updated == ir[1].updated &&
                      ir[0].unchanged == ir[1].unchanged);
                TWIN(memacct_list_groups(m, T("/imp"), MEMACCT_RECURSIVE, &l[SIDE]), ANY);
                same_lists("the imported mirrors", l, false);
                l[0] = memacct_group_list_free(l[0]);
                l[1] = memacct_group_list_free(l[1]);
        } else
                fprintf(stderr, "SKIP: the import of a cgroup (this process is in the root memory cgroup)\n");

        /* Subscribe (its refusals; the events are test_events') */
        TWIN(memacct_subscribe(m, T("/nope")), -ENOENT);
        TWIN(memacct_subscribe(m, T("")), 0);

        /* RemoveGroup */
        TWIN(memacct_remove_group(m, T("")), -EBUSY);
        TWIN(memacct_remove_group(m, T("/nope")), -ENOENT);
        TWIN(memacct_remove_group(m, T("/u/v")), 0);
        TWIN(memacct_remove_group(m, T("/u/v")), -ENOENT);
        TWIN(memacct_remove_group(m, T("/u")), -EBUSY); /* the sessions are attached */
        TWIN(memacct_remove_group(m, "/"), ANY);

        /* The stat items, once the bus's have had their flush. */
        same_reads_settled(s, b, "");
        same_reads_settled(s, b, "/u");
        same_reads_settled(s, b, "/w");
        TWIN(memacct_uncharge(m, T("/u"), 50 * K, MEMACCT_STAT_FILE, MEMACCT_KEEP), 0);
        TWIN(memacct_uncharge(m, T("/u"), 12 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP), 0);
        assert_int_equal(current("/ts"), 0);
        assert_int_equal(current("/tb"), 0);
        fprintf(stderr, "# test_same_operations: %u steps compared both ways\n", compared);
        memacct_close(s);
        memacct_close(b);
}

/* ---- refusals of a uid that is not root ---- */

/*
 * Run @fn in a child that dropped to uid and gid 65534 (and no groups),
 * which opens its own handles; its differences are counted there. Return
 * the child's exit status: 0 when nothing differed.
 */
static int as_nobody(void (*fn)(void)) {
        int status = 0;
        pid_t pid;

        fflush(stderr);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
                    setresuid(NOBODY, NOBODY, NOBODY) < 0) {
                        perror("dropping to uid 65534");
                        _exit(3);
                }
                in_child = true;
                soft_failures = 0;
                compared = 0;
                fn();
                fprintf(stderr, "# uid %u: %u steps compared both ways, %u differences\n",
                        (unsigned) geteuid(), compared, soft_failures);
                fflush(stderr);
                _exit(soft_failures ? 1 : 0);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static memacct *child_connect(bool bus) {
        memacct *m = NULL;
        int r = bus ? memacct_connect_bus(bus_address, &m) : memacct_connect(socket_path, &m);

        if (r < 0) {
                fprintf(stderr, "uid %u cannot reach the daemon over the %s: %s (%s)\n", (unsigned) geteuid(),
                        bus ? "bus" : "socket", strerror(-r), memacct_last_error(NULL) ?: "");
                _exit(4);
        }
        return m;
}

static pid_t parent_pid;

static void nobody_delegated(void) {
        memacct *s = child_connect(false), *b = child_connect(true);
        memacct_limits max1g = { .set = MEMACCT_LIMIT_MAX, .max = 1024 * 1024 * K };
        memacct_limits max64 = { .set = MEMACCT_LIMIT_MAX, .max = 64 * K };
        memacct_group_info *g[2] = {};
        memacct_group_list *l[2] = {};
        memacct_charge_result cr[2] = {};
        memacct_client_info c[2] = {};
        memacct_import_result ir[2] = {};
        unsigned moved[2] = {};

        /* Outside the delegated subtree, or above it. */
        TWIN(memacct_create_group(m, T("/y"), NULL, MEMACCT_NO_OWNER), -EPERM);
        TWIN(memacct_create_group(m, T("/r/y"), NULL, MEMACCT_NO_OWNER), -EPERM);
        TWIN(memacct_create_group(m, "/memacct-nobody", NULL, MEMACCT_NO_OWNER), -EPERM);
        TWIN(memacct_create_group(m, T("/d/gift"), NULL, 0), -EPERM);
        TWIN(memacct_create_group(m, T("/d/gift"), NULL, 4242), -EPERM);
        TWIN(memacct_remove_group(m, T("/r")), -EPERM);
        TWIN(memacct_remove_group(m, T("/d")), -EPERM);
        TWIN(memacct_set_limits(m, T("/r"), &max1g, 0), -EPERM);
        TWIN(memacct_set_limits(m, T("/d"), &max1g, 0), -EPERM);
        TWIN(memacct_set_limits(m, T("/d"), &max1g, MEMACCT_FORCE), -EPERM);
        TWIN(memacct_set_limits(m, T(""), &max1g, 0), -EPERM);
        TWIN(memacct_reset_peak(m, T("/r")), -EPERM);
        TWIN(memacct_charge(m, T("/r"), 4 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, &cr[SIDE]), -EPERM);
        TWIN(memacct_charge(m, T(""), 4 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, &cr[SIDE]), -EPERM);
        TWIN(memacct_uncharge(m, T("/r"), 4 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP), -EPERM);
        TWIN(memacct_charge(m, T("/r"), 4 * K, MEMACCT_STAT_ANON, 0, &cr[SIDE]), -EPERM);
        TWIN(memacct_attach(m, T("/r")), -EPERM);
        TWIN(memacct_move(m, 0, T("/r"), &moved[SIDE]), -EPERM);
        TWIN(memacct_move(m, parent_pid, T("/d"), &moved[SIDE]), -EPERM);
        TWIN(memacct_import_cgroups(m, "/", T("/d/imp"), &ir[SIDE]), -EPERM);
        TWIN(memacct_import_cgroups(m, "/memacct-no-such-cgroup", NULL, &ir[SIDE]), -EPERM);
        /* Forcing a charge past max: root only on the socket; no bus form at all. */
        side = 0;
        CHECK(memacct_charge(s, T("/d"), 4 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP | MEMACCT_FORCE, &cr[0]) ==
              -EPERM);
        CHECK(strcmp(memacct_last_error(s) ?: "", "only root forces a charge past max") == 0);
        side = 1;
        CHECK(memacct_charge(b, T("/d"), 4 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP | MEMACCT_FORCE, &cr[1]) ==
              -EOPNOTSUPP);
        side = 0;
        compared++;

        /* Reads are open ([access] read = all). */
        TWIN(memacct_get_group(m, T("/r"), NULL, 0, &g[SIDE]), 0);
        same_infos("nobody reads root's group", g, false);
        g[0] = memacct_group_info_free(g[0]);
        g[1] = memacct_group_info_free(g[1]);
        TWIN(memacct_list_groups(m, T(""), MEMACCT_RECURSIVE, &l[SIDE]), 0);
        same_lists("nobody lists the tree", l, false);
        CHECK(memacct_group_list_size(l[1]) == 3);
        l[0] = memacct_group_list_free(l[0]);
        l[1] = memacct_group_list_free(l[1]);
        TWIN(memacct_get_client(m, parent_pid, MEMACCT_EXACT, &c[SIDE]), 0);
        same_clients("nobody reads root's client", c);
        TWIN(memacct_subscribe(m, T("/r")), 0);

        /* Inside it. */
        TWIN(memacct_create_group(m, T("/d/g"), &max64, NOBODY), 0);
        TWIN(memacct_create_group(m, T("/d/h"), NULL, MEMACCT_NO_OWNER), 0);
        TWIN(memacct_create_group(m, T("/d/g/x"), NULL, MEMACCT_NO_OWNER), 0);
        TWIN(memacct_set_limits(m, T("/d/g"), &max64, 0), 0);
        TWIN(memacct_set_limits(m, T("/d/h"), &max64, MEMACCT_FORCE), 0);
        TWIN(memacct_charge(m, T("/d/g/x"), 16 * K, MEMACCT_STAT_FILE, MEMACCT_KEEP, &cr[SIDE]), 0);
        TWIN(memacct_charge(m, T("/d"), 4 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, &cr[SIDE]), 0);
        TWIN(memacct_charge(m, T("/d/g"), 100 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, &cr[SIDE]), -EDQUOT);
        TWIN(memacct_charge(m, T("/d/h"), 600 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, &cr[SIDE]), -EDQUOT);
        TWIN(memacct_reset_peak(m, T("/d")), 0);
        TWIN(memacct_reset_peak(m, T("/d/g")), 0);
        TWIN(memacct_attach(m, T("/d/h")), 0);
        TWIN(memacct_charge(m, NULL, 8 * K, MEMACCT_STAT_ANON, 0, &cr[SIDE]), 0);
        TWIN(memacct_move(m, 0, T("/d/g"), &moved[SIDE]), 0);
        TWIN(memacct_move(m, getpid(), T("/d/h"), &moved[SIDE]), 0);
        compared++;
        CHECK(moved[0] == 2 && moved[1] == 2);
        TWIN(memacct_move(m, 0, T("/d/g"), &moved[SIDE]), 0);
        TWIN(memacct_get_client(m, 0, MEMACCT_EXACT, &c[SIDE]), 0);
        same_clients("nobody reads its own client", c);
        CHECK(c[1].pid == (uint32_t) getpid() && c[1].anon == 16 * K);
        TWIN(memacct_get_group(m, T("/d/g"), NULL, MEMACCT_EXACT, &g[SIDE]), 0);
        same_infos("nobody's group", g, false);
        CHECK(g[1] && g[1]->current == 16 * K + 8 * K);
        g[0] = memacct_group_info_free(g[0]);
        g[1] = memacct_group_info_free(g[1]);
        TWIN(memacct_uncharge(m, NULL, 8 * K, MEMACCT_STAT_ANON, 0), 0);
        TWIN(memacct_uncharge(m, T("/d/g/x"), 16 * K, MEMACCT_STAT_FILE, MEMACCT_KEEP), 0);
        TWIN(memacct_uncharge(m, T("/d"), 4 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP), 0);
        TWIN(memacct_remove_group(m, T("/d/g/x")), 0);
        TWIN(memacct_remove_group(m, T("/d/h")), 0);
        memacct_close(s);
        memacct_close(b);
}

/* Root's side of the twin trees the children work in. */
static void make_nobody_trees(const char *ts, const char *tb) {
        memacct *s = sock_open();
        memacct_limits max1m = { .set = MEMACCT_LIMIT_MAX, .max = 1024 * K };
        memacct_limits max512 = { .set = MEMACCT_LIMIT_MAX, .max = 512 * K };

        trees[0] = ts;
        trees[1] = tb;
        for (side = 0; side < 2; side++) {
                assert_int_equal(memacct_create_group(s, T(""), &max1m, MEMACCT_NO_OWNER), 0);
                assert_int_equal(memacct_create_group(s, T("/r"), NULL, MEMACCT_NO_OWNER), 0);
                assert_int_equal(memacct_create_group(s, T("/d"), &max512, NOBODY), 0);
        }
        side = 0;
        memacct_close(s);
}

void test_same_refusals_nonroot(void **state) {
        memacct *s;

        (void) state;
        if (geteuid() != 0) {
                fprintf(stderr, "SKIP: test_same_refusals_nonroot needs root, to drop to uid 65534\n");
                skip();
        }
        make_nobody_trees("/ns", "/nb");
        /* Something in root's client for nobody to read (outside the trees,
         * which must stay alike). */
        create("/nroot", 0, 0, 0);
        s = sock_open();
        assert_int_equal(memacct_charge(s, "/nroot", 12 * K, MEMACCT_STAT_ANON, 0, NULL), 0);
        parent_pid = getpid();
        assert_int_equal(as_nobody(nobody_delegated), 0);
        /* What nobody did inside /ns/d and /nb/d it undid. */
        assert_int_equal(current("/ns"), 0);
        assert_int_equal(current("/nb"), 0);
        assert_int_equal(current("/nroot"), 12 * K);
        memacct_close(s);
        assert_int_equal(current_soon("/nroot", 0), 0);
}

/* ---- what [access] read = owner and [limits] sessions-per-uid = 2 refuse ---- */

static void nobody_restricted(void) {
        memacct *s = child_connect(false), *b = child_connect(true), *s2 = NULL, *b2;
        memacct_group_info *g[2] = {};
        memacct_group_list *l[2] = {};
        memacct_client_info c[2] = {};
        Result rs, rb;
        int r;

        /* Reads of what is not delegated to us. */
        TWIN(memacct_get_group(m, T("/r"), NULL, 0, &g[SIDE]), -EPERM);
        TWIN(memacct_get_group(m, T(""), NULL, MEMACCT_EXACT, &g[SIDE]), -EPERM);
        TWIN(memacct_get_group(m, "/", NULL, 0, &g[SIDE]), -EPERM);
        TWIN(memacct_subscribe(m, T("/r")), -EPERM);
        TWIN(memacct_subscribe(m, "/"), -EPERM);
        TWIN(memacct_get_client(m, parent_pid, 0, &c[SIDE]), -EPERM);
        TWIN(memacct_get_client(m, 2147483646, 0, &c[SIDE]), -EPERM);
        /* ... and of what is. */
        TWIN(memacct_get_group(m, T("/d"), NULL, MEMACCT_EXACT, &g[SIDE]), 0);
        same_infos("nobody reads its delegated group", g, false);
        g[0] = memacct_group_info_free(g[0]);
        g[1] = memacct_group_info_free(g[1]);
        TWIN(memacct_subscribe(m, T("/d")), 0);
        TWIN(memacct_get_client(m, 0, 0, &c[SIDE]), 0);
        same_clients("nobody reads its own client", c);
        /* A list shows only what we may read: /d of each tree. */
        TWIN(memacct_list_groups(m, T(""), MEMACCT_RECURSIVE, &l[SIDE]), 0);
        same_lists("the visible part of the tree", l, false);
        CHECK(memacct_group_list_size(l[1]) == 1);
        l[0] = memacct_group_list_free(l[0]);
        l[1] = memacct_group_list_free(l[1]);
        TWIN(memacct_list_groups(m, T(""), 0, &l[SIDE]), 0);
        same_lists("the visible children", l, false);
        l[0] = memacct_group_list_free(l[0]);
        l[1] = memacct_group_list_free(l[1]);
        /* The whole tree: /ns/d and /nb/d over either transport. */
        side = 0;
        CHECK(memacct_list_groups(s, "/", MEMACCT_RECURSIVE, &l[0]) == 0);
        CHECK(memacct_list_groups(b, "/", MEMACCT_RECURSIVE, &l[1]) == 0);
        compared++;
        CHECK(memacct_group_list_size(l[0]) == memacct_group_list_size(l[1]));
        for (size_t i = 0; i < memacct_group_list_size(l[0]) && i < memacct_group_list_size(l[1]); i++)
                CHECK(strcmp(memacct_group_list_get(l[0], i)->path, memacct_group_list_get(l[1], i)->path) ==
                      0);
        l[0] = memacct_group_list_free(l[0]);
        l[1] = memacct_group_list_free(l[1]);

        /* Sessions: the socket connection is one, the bus session (opened
         * by Attach) the second; a third is refused on either transport. */
        TWIN(memacct_attach(m, T("/d")), 0);
        r = memacct_connect(socket_path, &s2);
        rs = (Result) { .r = r };
        snprintf(rs.error, sizeof(rs.error), "%s", memacct_last_error(NULL) ?: "-");
        snprintf(rs.refused, sizeof(rs.refused), "-");
        s2 = memacct_close(s2);
        b2 = child_connect(true);
        side = 1;
        result_of(b2, memacct_attach(b2, T("/d")), &rb);
        side = 0;
        same_results("a third session", &rs, &rb, -ENOSPC);
        CHECK(strcmp(rb.error, "too many sessions for uid 65534") == 0);
        memacct_close(b2);
        memacct_close(s);
        memacct_close(b);
}

void test_same_refusals_restricted(void **state) {
        memacct *s;

        (void) state;
        if (geteuid() != 0) {
                fprintf(stderr, "SKIP: test_same_refusals_restricted needs root, to drop to uid 65534\n");
                skip();
        }
        make_nobody_trees("/os", "/ob");
        create("/oroot", 0, 0, 0);
        s = sock_open();
        assert_int_equal(memacct_charge(s, "/oroot", 12 * K, MEMACCT_STAT_ANON, 0, NULL), 0);
        parent_pid = getpid();
        assert_int_equal(as_nobody(nobody_restricted), 0);
        /* Root reads everything. */
        assert_int_equal(current("/oroot"), 12 * K);
        memacct_close(s);
}
