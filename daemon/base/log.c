/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The daemon's log: stderr only. Under systemd stderr is usually the
 * journal, which understands a leading "<N>" as the syslog level, so the
 * level survives without linking sd-journal; run by hand, the prefix is
 * readable text instead. Each message is formatted into one buffer and
 * written with a single write(2): lines from worker threads never mix,
 * and no stdio lock is shared between threads.
 *
 * A message with fields (log_struct()) is the exception: the stream
 * protocol carries only text, so under the journal it goes to the
 * journal's own socket through sd_journal_sendv().
 */

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>
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

/* One line to stderr, with the level prefix. */
static void __attribute__((format(printf, 3, 0))) write_line(int level, int error, const char *format, va_list ap) {
        char buf[LOG_LINE_MAX];
        size_t n;
        int k;

        if (journal_prefix)
                k = snprintf(buf, sizeof(buf), "<%d>", level);
        else
                k = snprintf(buf, sizeof(buf), "memacctd: %s: ", level_names[level]);
        n = k > 0 ? (size_t) k : 0;

        /* "%m" prints the error we were given. */
        errno = error;
        k = vsnprintf(buf + n, sizeof(buf) - n, format, ap);
        if (k > 0)
                n = MIN(n + (size_t) k, sizeof(buf) - 2);
        buf[n++] = '\n';
        /* Nothing useful can be done if stderr is gone. */
        (void) !write(STDERR_FILENO, buf, n);
}

static void __attribute__((format(printf, 2, 3))) write_linef(int level, const char *format, ...) {
        va_list ap;

        va_start(ap, format);
        write_line(level, 0, format, ap);
        va_end(ap);
}

int log_internal(int level, int error, const char *format, ...) {
        int saved_errno = errno;
        va_list ap;

        if (level < LOG_EMERG || level > LOG_DEBUG)
                level = LOG_ERR;
        error = error < 0 ? -error : error;
        va_start(ap, format);
        write_line(level, error, format, ap);
        va_end(ap);
        errno = saved_errno;
        return -error;
}

#define LOG_FIELDS_MAX 16

void log_struct_internal(int level, const char *message_id, const char *const *fields, const char *format, ...) {
        char message[LOG_LINE_MAX], priority[16], id[64];
        struct iovec iov[LOG_FIELDS_MAX + 4];
        int saved_errno = errno, k;
        size_t n = 0;
        va_list ap;

        if (level < LOG_EMERG || level > LOG_DEBUG)
                level = LOG_ERR;
        if (!journal_prefix) {
                va_start(ap, format);
                write_line(level, 0, format, ap);
                va_end(ap);
                errno = saved_errno;
                return;
        }
        /* Formatted here, not by sd_journal_send(), which has no "%m" of ours and no bound. */
        memcpy(message, "MESSAGE=", 8);
        va_start(ap, format);
        k = vsnprintf(message + 8, sizeof(message) - 8, format, ap);
        va_end(ap);
        snprintf(priority, sizeof(priority), "PRIORITY=%d", level);
        snprintf(id, sizeof(id), "MESSAGE_ID=%s", message_id);
        iov[n++] = (struct iovec) { message, 8 + (k > 0 ? MIN((size_t) k, sizeof(message) - 9) : 0) };
        iov[n++] = (struct iovec) { priority, strlen(priority) };
        iov[n++] = (struct iovec) { id, strlen(id) };
        iov[n++] = (struct iovec) { (char *) "SYSLOG_IDENTIFIER=memacctd", 26 };
        for (size_t i = 0; fields && fields[i] && i < LOG_FIELDS_MAX; i++)
                iov[n++] = (struct iovec) { (char *) fields[i], strlen(fields[i]) };
        /* No journal socket (a sandbox without /run/systemd): the line still goes out. */
        if (sd_journal_sendv(iov, (int) n) < 0)
                write_linef(level, "%s", message + 8);
        errno = saved_errno;
}
