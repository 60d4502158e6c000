/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Process instances
 *
 * The stamp of a process (procid.h) comes from a pidfd where there is
 * one: a pidfd names one process for its whole life, whatever happens to
 * the pid. Only where there is none is a process named by its pid and
 * the start time read for that pid, which a process that exits and has
 * its pid reused between the moment the pid was learnt and the read can
 * fool; the callers say where that window is.
 *
 * Invariant: a stamp of kind PROC_INSTANCE_GONE is never returned for a
 * process that runs, and no two calls return the same one.
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/procid.h"

#ifndef PID_FS_MAGIC
/* linux/magic.h since Linux 6.9; Debian 12's kernel headers are older. */
#define PID_FS_MAGIC 0x50494446
#endif

/* The start time's field in /proc/PID/stat (proc(5)), counting comm as 2. */
#define STAT_FIELD_STARTTIME 22

int proc_stat_start_time(const char *buf, size_t size, uint64_t *ret) {
        const char *end = buf + size, *open = NULL, *close = NULL, *p;
        uint64_t v = 0;

        for (p = buf; p < end; p++)
                if (*p == '(' && !open)
                        open = p;
                else if (*p == ')')
                        close = p;
        /* "PID (COMM) STATE ...": comm may hold anything but NUL, so only
         * the last ')' ends it; the pid before it is digits. */
        if (!open || !close || close < open || open == buf || open[-1] != ' ')
                return -EBADMSG;
        for (p = buf; p < open - 1; p++)
                if (*p < '0' || *p > '9')
                        return -EBADMSG;
        p = close + 1;
        for (unsigned field = 3; field <= STAT_FIELD_STARTTIME; field++) {
                if (p >= end || *p != ' ')
                        return -EBADMSG;
                p++;
                if (field == STAT_FIELD_STARTTIME)
                        break;
                if (p >= end || *p == ' ' || *p == '\n')
                        return -EBADMSG;
                while (p < end && *p != ' ' && *p != '\n')
                        p++;
        }
        if (p >= end || *p < '0' || *p > '9')
                return -EBADMSG;
        for (; p < end && *p >= '0' && *p <= '9'; p++) {
                unsigned d = (unsigned) (*p - '0');

                if (v > (UINT64_MAX - d) / 10)
                        return -EBADMSG;
                v = v * 10 + d;
        }
        if (p < end && *p != ' ' && *p != '\n')
                return -EBADMSG;
        /* The tag needs the top two bits; ticks since boot never reach them. */
        if (v & PROC_INSTANCE_KIND_MASK)
                return -EBADMSG;
        *ret = v;
        return 0;
}

/* The start time of whatever has @pid now. Return: 0; -ESRCH; -errno. */
static int read_start_time(pid_t pid, uint64_t *ret) {
        char path[64], buf[1024];
        ssize_t n;
        int fd, r;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        /* One read: the kernel makes the whole line at once, and it is
         * far shorter than the buffer (comm is at most 64 bytes). */
        n = read(fd, buf, sizeof(buf));
        r = n < 0 ? -errno : 0;
        close(fd);
        if (r < 0)
                return r == -ESRCH ? -ESRCH : r;
        if (n == 0)
                return -ESRCH; /* reaped between the open and the read */
        return proc_stat_start_time(buf, (size_t) n, ret);
}

uint64_t proc_instance_gone(void) {
        static _Atomic uint64_t serial;

        /* Relaxed: only uniqueness matters, which the RMW gives. */
        return PROC_INSTANCE_GONE |
               (atomic_fetch_add_explicit(&serial, 1, memory_order_relaxed) & ~PROC_INSTANCE_KIND_MASK);
}

int proc_instance_of_pidfd(pid_t pid, int pidfd, uint64_t *ret) {
        struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
        struct statfs sfs;
        struct stat st;
        uint64_t start;
        int r;

        /* pidfs: one inode per process, numbered from a 64-bit counter
         * that is never reset while the system runs. Before it (and with
         * 32-bit inode numbers) every pidfd shared one anonymous inode. */
        if (sizeof(st.st_ino) >= sizeof(uint64_t) && fstatfs(pidfd, &sfs) == 0 &&
            sfs.f_type == PID_FS_MAGIC && fstat(pidfd, &st) == 0) {
                if ((uint64_t) st.st_ino & PROC_INSTANCE_KIND_MASK)
                        return -EOVERFLOW;
                *ret = PROC_INSTANCE_PIDFS | (uint64_t) st.st_ino;
                return 0;
        }

        /* No pidfs: the start time read by pid, then the pidfd asked
         * whether its process has exited. If it has not, the pid was its
         * own all through the read (a pid is reused only once its process
         * is reaped), so the start time is this process's. */
        r = read_start_time(pid, &start);
        if (r == -ESRCH) {
                *ret = proc_instance_gone();
                return 0;
        }
        if (r < 0)
                return r;
        r = poll(&pfd, 1, 0);
        if (r < 0)
                return -errno;
        *ret = r > 0 ? proc_instance_gone() : PROC_INSTANCE_START | start;
        return 0;
}

int proc_instance_of_pid(pid_t pid, uint64_t *ret) {
        uint64_t v, start;
        int fd, r;

        if (pid <= 0)
                return -ESRCH;
        fd = (int) syscall(SYS_pidfd_open, pid, 0);
        if (fd >= 0) {
                r = proc_instance_of_pidfd(pid, fd, &v);
                close(fd);
                if (r < 0)
                        return r;
                if ((v & PROC_INSTANCE_KIND_MASK) == PROC_INSTANCE_GONE)
                        return -ESRCH;
                *ret = v;
                return 0;
        }
        /* EINVAL: @pid is a thread, not a process. */
        if (errno == ESRCH || errno == EINVAL)
                return -ESRCH;
        if (errno != ENOSYS && errno != EPERM)
                return -errno;
        /* No pidfd_open() (before Linux 5.3, or filtered): the start time
         * of whatever has the pid at the read, the best there is. */
        r = read_start_time(pid, &start);
        if (r < 0)
                return r;
        *ret = PROC_INSTANCE_START | start;
        return 0;
}
