/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A private memacctd for a C test: $MEMACCTD forked and exec'd on a socket
 * and state directory in a temporary directory of its own, its output in a
 * log there. It is ready when a libmemacct client can connect, and it is
 * stopped by a signal with a deadline, so that a hung daemon fails the
 * test instead of hanging it. One daemon per TestDaemon; none of this is
 * thread-safe.
 */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memacct.h>

#include "test-support.h"

int test_daemon_init(TestDaemon *d, const char *name) {
        const char *tmp = getenv("TMPDIR");

        *d = (TestDaemon) {};
        snprintf(d->dir, sizeof(d->dir), "%s/memacct-%s.XXXXXX", tmp && *tmp ? tmp : "/tmp", name);
        if (!mkdtemp(d->dir))
                return -errno;
        snprintf(d->sock, sizeof(d->sock), "%.255s/memacctd.sock", d->dir);
        snprintf(d->state, sizeof(d->state), "%.255s/state", d->dir);
        snprintf(d->log, sizeof(d->log), "%.255s/daemon.log", d->dir);
        return 0;
}

/* In the child: output to the log, then the daemon. Never returns. */
static void exec_daemon(const TestDaemon *d, const char *exe) {
        int fd = open(d->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

        if (fd >= 0) {
                dup2(fd, STDOUT_FILENO);
                dup2(fd, STDERR_FILENO);
        }
        execl(exe, "memacctd", "--socket", d->sock, "--state-dir", d->state, "--workers", "2",
              (char *) NULL);
        _exit(127);
}

int test_daemon_start(TestDaemon *d) {
        const char *exe = getenv("MEMACCTD");
        uint64_t deadline = now_msec() + TEST_DAEMON_WAIT_MSEC;

        if (!exe) {
                fprintf(stderr, "MEMACCTD is not set\n");
                return -EINVAL;
        }
        d->pid = fork();
        if (d->pid < 0) {
                int r = -errno;

                d->pid = 0;
                return r;
        }
        if (d->pid == 0)
                exec_daemon(d, exe);
        for (;;) {
                memacct *m = NULL;
                int status;

                if (memacct_connect(d->sock, &m) == 0) {
                        memacct_close(m);
                        return 0;
                }
                if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
                        fprintf(stderr, "memacctd exited at start (status 0x%x)\n", status);
                        d->pid = 0;
                        return -ECHILD;
                }
                if (now_msec() > deadline) {
                        fprintf(stderr, "memacctd did not answer within %d ms\n", TEST_DAEMON_WAIT_MSEC);
                        return -ETIMEDOUT;
                }
                sleep_msec(20);
        }
}

int test_daemon_stop(TestDaemon *d, int sig) {
        uint64_t deadline = now_msec() + TEST_DAEMON_WAIT_MSEC;
        int status;

        if (d->pid <= 0)
                return 0;
        kill(d->pid, sig);
        while (waitpid(d->pid, &status, WNOHANG) != d->pid) {
                if (now_msec() > deadline) {
                        kill(d->pid, SIGKILL);
                        waitpid(d->pid, &status, 0);
                        d->pid = 0;
                        return -ETIMEDOUT;
                }
                sleep_msec(10);
        }
        d->pid = 0;
        return status;
}

void test_daemon_dump_log(const TestDaemon *d) {
        char buf[4096];
        FILE *f = fopen(d->log, "re");
        size_t n;

        if (!f)
                return;
        fputs("--- daemon log ---\n", stderr);
        while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
                fwrite(buf, 1, n, stderr);
        fclose(f);
}

int test_daemon_done(TestDaemon *d) {
        char cmd[600];

        if (!d->dir[0])
                return 0;
        snprintf(cmd, sizeof(cmd), "rm -rf '%.255s'", d->dir);
        if (system(cmd) != 0) {
                fprintf(stderr, "cannot remove %s\n", d->dir);
                return -EIO;
        }
        d->dir[0] = 0;
        return 0;
}
