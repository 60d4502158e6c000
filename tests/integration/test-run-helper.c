/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memacct-run-helper: the command test-run.sh starts under memacctctl run.
 * It connects as any libmemacct client does, memacct_connect(NULL) and
 * no attach, so its session charges land where $MEMACCT_GROUP says, then
 * follows its steps in order:
 *
 *   charge BYTES    a session charge; prints "charged BYTES" or
 *                   "refused BYTES: <errno name>"
 *   attach PATH     memacct_attach(PATH); prints "attach refused: <errno
 *                   name>" when refused
 *   group -         prints "attached to GROUP" (memacct_attached_group())
 *                   or "group: <errno name>"
 *   server -        prints "server SERVER" (memacct_server(): which
 *                   transport the handle took)
 *   ready FILE      create FILE (the script waits for it)
 *   wait FILE       wait until FILE exists
 *   usr1 N          from now on, SIGUSR1 prints "got SIGUSR1" and exits N
 *   exit N          exit with status N (without a step: 0)
 *
 * Exit status: as the steps say; 1 when it cannot connect, 2 usage.
 */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <memacct.h>

#include "test-support.h"

static int usr1_status;

static void on_usr1(int sig) {
        static const char msg[] = "got SIGUSR1\n";

        (void) sig;
        (void) !write(STDOUT_FILENO, msg, sizeof(msg) - 1);
        _exit(usr1_status);
}

static int parse_int(const char *s, long long *ret) {
        char *end;

        errno = 0;
        *ret = strtoll(s, &end, 10);
        return errno != 0 || end == s || *end || *ret < 0 ? -EINVAL : 0;
}

static int step(memacct *m, const char *what, const char *a) {
        long long v;
        int r, fd;

        if (strcmp(what, "wait") == 0) {
                while (access(a, F_OK) < 0)
                        sleep_msec(20);
                return 0;
        }
        if (strcmp(what, "ready") == 0) {
                fd = open(a, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                return fd < 0 ? -errno : close(fd);
        }
        if (strcmp(what, "attach") == 0) {
                r = memacct_attach(m, a);
                if (r < 0)
                        printf("attach refused: %s\n", strerrorname_np(-r));
                return fflush(stdout);
        }
        if (strcmp(what, "group") == 0) {
                char group[MEMACCT_PATH_MAX + 1];

                r = memacct_attached_group(m, group, sizeof(group));
                if (r < 0)
                        printf("group: %s\n", strerrorname_np(-r));
                else
                        printf("attached to %s\n", group);
                return fflush(stdout);
        }
        if (strcmp(what, "server") == 0) {
                printf("server %s\n", memacct_server(m));
                return fflush(stdout);
        }
        if (parse_int(a, &v) < 0)
                return -EINVAL;
        if (strcmp(what, "charge") == 0) {
                r = memacct_charge(m, NULL, (uint64_t) v, MEMACCT_STAT_ANON, 0, NULL);
                if (r < 0)
                        printf("refused %lld: %s\n", v, strerrorname_np(-r));
                else
                        printf("charged %lld\n", v);
                return fflush(stdout);
        }
        if (strcmp(what, "usr1") == 0) {
                usr1_status = (int) v;
                signal(SIGUSR1, on_usr1);
                return 0;
        }
        if (strcmp(what, "exit") == 0)
                exit((int) v);
        return -EINVAL;
}

int main(int argc, char **argv) {
        memacct *m = NULL;
        int r;

        if (argc % 2 != 1) {
                fputs("usage: memacct-run-helper [STEP ARG]...\n", stderr);
                return 2;
        }
        r = memacct_connect(NULL, &m);
        if (r < 0) {
                fprintf(stderr, "memacct-run-helper: cannot connect: %s: %s\n", strerror(-r),
                        memacct_last_error(NULL) ? memacct_last_error(NULL) : "");
                return 1;
        }
        for (int i = 1; i < argc; i += 2)
                if (step(m, argv[i], argv[i + 1]) < 0) {
                        fprintf(stderr, "memacct-run-helper: %s %s: failed\n", argv[i], argv[i + 1]);
                        memacct_close(m);
                        return 2;
                }
        memacct_close(m);
        return 0;
}
