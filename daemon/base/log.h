/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Logging for the daemon's edges (main, transports, persistence): one line
 * per message on stderr, with an sd-daemon "<N>" level prefix when stderr
 * is the journal and "memacctd: level: " otherwise. The log_*_errno()
 * forms return the negative errno they were given, so that logging and
 * returning an error is one statement:
 *
 *         return log_error_errno(r, "Failed to bind '%s': %m", path);
 *
 * "%m" prints the error passed in, not the errno global.
 *
 * log_struct() adds journal fields to a message: a MESSAGE_ID, which
 * data/catalog/memacctd.catalog explains, and NAME=value fields such as
 * MEMACCT_GROUP=, for `journalctl MEMACCT_GROUP=/jobs/42` (memacctd(8),
 * DIAGNOSTICS).
 */

#include <errno.h>
#include <stdlib.h>
#include <syslog.h>

/**
 * log_open() - choose the output format: "<N>" prefixes when stderr is
 * connected to the journal ($JOURNAL_STREAM names stderr's device and
 * inode), plain text otherwise. Call once from main() before threads start.
 */
void log_open(void);

/** log_set_max_level() - show messages up to @level (LOG_ERR .. LOG_DEBUG). Any thread. */
void log_set_max_level(int level);

/** log_get_max_level() - the current threshold. Any thread. */
int log_get_max_level(void);

/**
 * log_internal() - write one message at @level. @error (either sign) is
 * what "%m" prints. Safe from any thread: the line is written with one
 * write(2), so lines of different threads never interleave.
 *
 * Return: -abs(@error), so 0 for a message without an error.
 */
int log_internal(int level, int error, const char *format, ...) __attribute__((format(printf, 3, 4)));

#define log_full_errno(level, error, ...)                                      \
        ({                                                                     \
                int _level_ = (level), _e_ = (error);                          \
                _e_ = _e_ < 0 ? -_e_ : _e_;                                    \
                log_get_max_level() >= _level_ ? log_internal(_level_, _e_, __VA_ARGS__) \
                                               : -_e_;                         \
        })

#define log_error_errno(error, ...) log_full_errno(LOG_ERR, error, __VA_ARGS__)
#define log_warning_errno(error, ...) log_full_errno(LOG_WARNING, error, __VA_ARGS__)
#define log_notice_errno(error, ...) log_full_errno(LOG_NOTICE, error, __VA_ARGS__)
#define log_info_errno(error, ...) log_full_errno(LOG_INFO, error, __VA_ARGS__)
#define log_debug_errno(error, ...) log_full_errno(LOG_DEBUG, error, __VA_ARGS__)

#define log_error(...) ((void) log_full_errno(LOG_ERR, 0, __VA_ARGS__))
#define log_warning(...) ((void) log_full_errno(LOG_WARNING, 0, __VA_ARGS__))
#define log_notice(...) ((void) log_full_errno(LOG_NOTICE, 0, __VA_ARGS__))
#define log_info(...) ((void) log_full_errno(LOG_INFO, 0, __VA_ARGS__))
#define log_debug(...) ((void) log_full_errno(LOG_DEBUG, 0, __VA_ARGS__))

/**
 * log_struct_internal() - write one message at @level with @message_id
 * (32 lowercase hex digits) and @fields ("NAME=value" strings, NULL last).
 * To the journal's native socket when stderr is the journal, so the fields
 * are kept; as log_internal()'s line otherwise, or when that send fails.
 */
void log_struct_internal(int level, const char *message_id, const char *const *fields, const char *format, ...)
        __attribute__((format(printf, 4, 5)));

#define log_struct(level, message_id, fields, ...)                                               \
        do {                                                                                     \
                if (log_get_max_level() >= (level))                                              \
                        log_struct_internal((level), (message_id), (fields), __VA_ARGS__);        \
        } while (0)
