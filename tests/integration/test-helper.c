/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memacct-test-helper: what the integration scripts need from libmemacct
 * that memacctctl does not offer.
 *
 *   memacct-test-helper SOCKET create-owned PATH UID [MAX]
 *       create PATH delegated to UID (CreateGroup.owner), optionally with a
 *       max; memacctctl create has no owner= key.
 *   memacct-test-helper SOCKET owner PATH
 *       print the owner uid of PATH (4294967295: not delegated).
 *   memacct-test-helper SOCKET charge-forced PATH BYTES
 *       a kept charge with MEMACCT_FORCE (memacctctl never forces).
 *   memacct-test-helper SOCKET hello
 *       print the server's self-description and the pid it sees for us.
 *
 * SOCKET "-" is memacct_connect(NULL), the default socket; "+user" is
 * memacct_connect_user(), the user's own daemon.
 *
 * Exit status: 0 success, 1 the call failed (the errno name and the
 * server's message on stderr), 2 usage.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <memacct.h>

static int parse_u64(const char *s, uint64_t *ret) {
        char *end;

        errno = 0;
        *ret = strtoull(s, &end, 10);
        return errno != 0 || end == s || *end ? -EINVAL : 0;
}

static int failed(memacct *m, const char *what, int r) {
        const char *msg = memacct_last_error(m);

        fprintf(stderr, "memacct-test-helper: %s: %s%s%s\n", what, strerror(-r), msg ? ": " : "",
                msg ? msg : "");
        return 1;
}

static int usage(void) {
        fputs("usage: memacct-test-helper SOCKET create-owned PATH UID [MAX]\n"
              "       memacct-test-helper SOCKET owner PATH\n"
              "       memacct-test-helper SOCKET charge-forced PATH BYTES\n"
              "       memacct-test-helper SOCKET hello\n",
              stderr);
        return 2;
}

int main(int argc, char **argv) {
        memacct *m = NULL;
        int r, ret = 0;

        if (argc < 3)
                return usage();
        if (strcmp(argv[1], "+user") == 0)
                r = memacct_connect_user(&m);
        else
                r = memacct_connect(strcmp(argv[1], "-") == 0 ? NULL : argv[1], &m);
        if (r < 0) {
                const char *msg = memacct_last_error(NULL);

                fprintf(stderr, "memacct-test-helper: cannot connect to %s: %s%s%s\n", argv[1],
                        strerror(-r), msg ? ": " : "", msg ? msg : "");
                return 1;
        }

        if (strcmp(argv[2], "create-owned") == 0 && (argc == 5 || argc == 6)) {
                memacct_limits l = { .set = 0 };
                uint64_t uid;

                if (parse_u64(argv[4], &uid) < 0 || uid > UINT32_MAX) {
                        ret = usage();
                        goto out;
                }
                if (argc == 6) {
                        l.set = MEMACCT_LIMIT_MAX;
                        if (parse_u64(argv[5], &l.max) < 0) {
                                ret = usage();
                                goto out;
                        }
                }
                r = memacct_create_group(m, argv[3], l.set ? &l : NULL, (uint32_t) uid);
                if (r < 0)
                        ret = failed(m, "create", r);
        } else if (strcmp(argv[2], "owner") == 0 && argc == 4) {
                memacct_group_info *g = NULL;

                r = memacct_get_group(m, argv[3], NULL, 0, &g);
                if (r < 0)
                        ret = failed(m, "get", r);
                else
                        printf("%" PRIu32 "\n", g->owner);
                memacct_group_info_free(g);
        } else if (strcmp(argv[2], "charge-forced") == 0 && argc == 5) {
                uint64_t bytes;

                if (parse_u64(argv[4], &bytes) < 0) {
                        ret = usage();
                        goto out;
                }
                r = memacct_charge(m, argv[3], bytes, MEMACCT_STAT_ANON, MEMACCT_KEEP | MEMACCT_FORCE,
                                   NULL);
                if (r < 0)
                        ret = failed(m, "charge", r);
        } else if (strcmp(argv[2], "hello") == 0 && argc == 3) {
                printf("%s\n%d\n", memacct_server(m), (int) memacct_peer_pid(m));
        } else
                ret = usage();
out:
        memacct_close(m);
        return ret;
}
