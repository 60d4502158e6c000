/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memacct-pidreuse-helper: the processes of test-pidreuse.sh, each of
 * which prints its own pid first, so that the script can check it got
 * the pid it arranged for.
 *
 *   hold SOCKET PATH BYTES FIFO   charge BYTES to PATH on this process's
 *                                 session, then fork a child that keeps the
 *                                 connection open, and exit. The child reads
 *                                 "PID DST" lines from FIFO, moves PID to DST
 *                                 on the kept connection and prints
 *                                 "move PID: RESULT"; it exits at EOF.
 *   charge-move SOCKET PATH BYTES DST
 *                                 charge, then move this process's own pid
 *                                 to DST; prints the sessions moved, and
 *                                 stays until killed.
 *   live SOCKET PATH BYTES        charge, print "ready", and stay until
 *                                 killed.
 *
 * Exit status 0, 1 on a failure (the cause on stderr), 2 usage.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <memacct.h>

static int parse_u64(const char *s, uint64_t *ret) {
        char *end;

        errno = 0;
        *ret = strtoull(s, &end, 10);
        return errno != 0 || end == s || *end ? -EINVAL : 0;
}

static int failed(memacct *m, const char *what, int r) {
        const char *msg = memacct_last_error(m);

        fprintf(stderr, "memacct-pidreuse-helper: %s: %s%s%s\n", what, strerror(-r), msg ? ": " : "",
                msg ? msg : "");
        return 1;
}

/* The kept connection's child: moves on request, until the FIFO closes. */
static int hold_child(memacct *m, const char *fifo) {
        char line[256];
        FILE *f = fopen(fifo, "re");

        if (!f) {
                fprintf(stderr, "memacct-pidreuse-helper: %s: %m\n", fifo);
                return 1;
        }
        while (fgets(line, sizeof(line), f)) {
                char dst[200];
                unsigned sessions = 0;
                int pid, r;

                if (sscanf(line, "%d %199s", &pid, dst) != 2)
                        continue;
                r = memacct_move(m, pid, dst, &sessions);
                if (r < 0)
                        printf("move %d: %s\n", pid, strerror(-r));
                else
                        printf("move %d: %u\n", pid, sessions);
                fflush(stdout);
        }
        fclose(f);
        return 0;
}

int main(int argc, char **argv) {
        memacct *m = NULL;
        uint64_t bytes;
        int r, ret = 0;

        if (argc < 5 || parse_u64(argv[4], &bytes) < 0) {
                fputs("usage: memacct-pidreuse-helper hold|charge-move|live SOCKET PATH BYTES [FIFO|DST]\n",
                      stderr);
                return 2;
        }
        printf("%d\n", (int) getpid());
        fflush(stdout);
        r = memacct_connect(argv[2], &m);
        if (r < 0) {
                fprintf(stderr, "memacct-pidreuse-helper: cannot connect to %s: %s\n", argv[2], strerror(-r));
                return 1;
        }
        r = memacct_charge(m, argv[3], bytes, MEMACCT_STAT_ANON, 0, NULL);
        if (r < 0) {
                ret = failed(m, "charge", r);
                goto out;
        }

        if (strcmp(argv[1], "hold") == 0 && argc == 6) {
                pid_t child = fork();

                if (child < 0) {
                        fprintf(stderr, "memacct-pidreuse-helper: fork: %m\n");
                        ret = 1;
                } else if (child == 0)
                        _exit(hold_child(m, argv[5]));
                else
                        printf("%d\n", (int) child);
                /* The parent exits without closing: the child's copy of
                 * the connection keeps the session open. */
                fflush(stdout);
                _exit(ret);
        } else if (strcmp(argv[1], "charge-move") == 0 && argc == 6) {
                unsigned sessions = 0;

                r = memacct_move(m, getpid(), argv[5], &sessions);
                if (r < 0)
                        ret = failed(m, "move", r);
                else {
                        printf("%u\n", sessions);
                        fflush(stdout);
                        for (;;)
                                pause();
                }
        } else if (strcmp(argv[1], "live") == 0 && argc == 5) {
                printf("ready\n");
                fflush(stdout);
                for (;;)
                        pause();
        } else {
                fputs("memacct-pidreuse-helper: unknown command or wrong arguments\n", stderr);
                ret = 2;
        }
out:
        memacct_close(m);
        return ret;
}
