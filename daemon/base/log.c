/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The daemon's log: stderr only. Under systemd stderr is usually the
 * journal, which understands a leading "<N>" as the syslog level, so the
 * level survives without linking sd-journal; run by hand, the prefix is
 * readable text instead. Each message is formatted into one buffer and
 * written with a single write(2): lines from worker threads never mix,
 * and no stdio lock is shared between threads.
 */

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "macro.h"

#define LOG_LINE_MAX 2048

static _Atomic int max_level = LOG_NOTICE;
static bool journal_prefix;

static const char *const level_names[] = {
        [LOG_EMERG] = "emergency", [LOG_ALERT] = "alert", [LOG_CRIT] = "critical",
        [LOG_ERR] = "error",       [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
        [LOG_INFO] = "info",       [LOG_DEBUG] = "debug",
};

void log_open(void) {
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;

        /* systemd sets JOURNAL_STREAM=<dev>:<ino> of the stream it gave us;
         * if stderr is still that stream, the journal parses "<N>". */
        journal_prefix = e && sscanf(e, "%llu:%llu", &dev, &ino) == 2 && fstat(STDERR_FILENO, &st) == 0 &&
                         (unsigned long long) st.st_dev == dev && (unsigned long long) st.st_ino == ino;
}

void log_set_max_level(int level) {
        atomic_store_explicit(&max_level, level < LOG_ERR ? LOG_ERR : level > LOG_DEBUG ? LOG_DEBUG : level,
                              memory_order_relaxed);
}

int log_get_max_level(void) {
        /* Relaxed: a threshold; a message near a SIGHUP may use either value. */
        return atomic_load_explicit(&max_level, memory_order_relaxed);
}

int log_internal(int level, int error, const char *format, ...) {
        char buf[LOG_LINE_MAX];
        int saved_errno = errno;
        size_t n;
        va_list ap;
        int k;

        if (level < LOG_EMERG || level > LOG_DEBUG)
                level = LOG_ERR;
        error = error < 0 ? -error : error;
        if (journal_prefix)
                k = snprintf(buf, sizeof(buf), "<%d>", level);
        else
                k = snprintf(buf, sizeof(buf), "memacctd: %s: ", level_names[level]);
        n = k > 0 ? (size_t) k : 0;

        /* "%m" prints the error we were given. */
        errno = error;
        va_start(ap, format);
        k = vsnprintf(buf + n, sizeof(buf) - n, format, ap);
        va_end(ap);
        if (k > 0)
                n = MIN(n + (size_t) k, sizeof(buf) - 2);
        buf[n++] = '\n';
        /* Nothing useful can be done if stderr is gone. */
        (void) !write(STDERR_FILENO, buf, n);
        errno = saved_errno;
        return -error;
}
