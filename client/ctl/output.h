/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <json-c/json.h>

/*
 * What memacctctl prints: results as text or as JSON (--json), and its
 * errors on stderr. Every format here is a user interface, documented in
 * memacctctl(1) and compared to the letter by the tests: keep them stable.
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include <memacct.h>

#include "macro.h"

/* json_object_putp(): every JSON tree memacctctl builds is dropped so. */
DEFINE_TRIVIAL_CLEANUP_FUNC(json_object *, json_object_put);

/* Exit status of a usage error (1 is a refused or failed operation). */
#define EXIT_USAGE 2

/**
 * output_set_human() - whether sizes in text print in units (-h): "1.5K",
 * "20M", rounded up as du -h; JSON always prints bytes. Set before printing.
 */
void output_set_human(bool on);

/**
 * output_format_size() - @v in the largest 1024-based unit it fills,
 * rounded up as du -h rounds (a size shown is never less than the real
 * one): one decimal below 10, none above ("1.5K", "15K", "768M"); below
 * 1024, bytes with a B ("0B", "512B"), as systemd-cgtop. The one format of
 * sizes in units: show -h, tree -h and top alike. Return: @buf.
 */
const char *output_format_size(char buf[static 24], uint64_t v);

/**
 * usage_error() - "memacctctl: <message>" and the hint to --help, on
 * stderr. Return: EXIT_USAGE.
 */
int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/**
 * usage_errorv() - usage_error() of @fmt and @ap, with @context (say
 * "oci-hook: ") after "memacctctl: ". Return: EXIT_USAGE.
 */
int usage_errorv(const char *context, const char *fmt, va_list ap)
        __attribute__((format(printf, 2, 0)));

/**
 * errorf() - @fmt into @err (@errlen bytes), the words of a refusal a
 * caller says later (the OCI hook, the CDI spec's checks). Return: @r.
 */
int errorf(char *err, size_t errlen, int r, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/**
 * message_past_path() - @why without a leading "@path: ": the server's
 * messages often name the group already, and the caller names it too.
 */
const char *message_past_path(const char *why, const char *path);

/**
 * fail() - "memacctctl: charge refused: /a/b: limit exceeded (max of /a)"
 * on stderr: @what failed on @path with @r, in the server's words when
 * @m has them. Return: EXIT_FAILURE.
 */
int fail(memacct *m, const char *what, const char *path, int r);

/** print_group() - memacctctl show: @g as memory.* lines, or as a JSON object. */
int print_group(const memacct_group_info *g, bool json);

/** json_group() - @g as --json show prints it, a new object (NULL: no memory). */
json_object *json_group(const memacct_group_info *g);

/**
 * print_group_property() - show -P KEY: the one value of @g that KEY names
 * in --json show's object ("events.max": dotted into objects), a string
 * bare, a number as it is. Return: the exit status.
 */
int print_group_property(const memacct_group_info *g, const char *key);

/**
 * print_tree() - memacctctl tree: the subtree's root @top, then the groups
 * of @list below it in pre-order (the list may or may not repeat @top), as
 * a table or a JSON array. @rows, when not NULL, has one entry per entry of
 * @list to print in its stead (read again against a reclaim root), NULL
 * for one to leave out.
 */
int print_tree(const memacct_group_info *top, const memacct_group_list *list,
               memacct_group_info *const *rows, bool json);

/**
 * print_sessions() - memacctctl move: the sessions moved (JSON only: the
 * text form prints nothing).
 */
int print_sessions(unsigned sessions, bool json);

/** print_client() - memacctctl client: what the sessions of a pid hold. */
int print_client(const memacct_client_info *c, bool json);

/** print_import() - memacctctl import-cgroups: what the import changed. */
int print_import(const memacct_import_result *res, bool json);

/**
 * print_charge() - memacctctl charge: the reply (over_high, throttle_usec,
 * margin, over_max), JSON only: the text form prints nothing.
 */
int print_charge(const memacct_charge_result *res, bool json);

/**
 * print_event() - memacctctl watch: one event, stamped with the time it was
 * read (ISO 8601, milliseconds), flushed at once, with who raised it
 * (@pid of @uid, memacct_event_requester()) when a request did: "by pid N
 * uid U" on the line, "pid" and "uid" in JSON; not when @pid is 0.
 */
int print_event(const memacct_event *ev, uint32_t pid, uint32_t uid, bool json);

/** print_json_object() - @o on one line, then drop it; NULL: out of memory. Return: the exit status. */
int print_json_object(json_object *o);

/* ---- device regions (output-regions.c) ---- */

/** print_group_regions_text() - show's dmem.* lines of @g (only region @only; NULL: all). */
void print_group_regions_text(const memacct_group_info *g, const char *only);

/** json_group_regions() - @g's regions (only @only; NULL: all) as a JSON array. */
json_object *json_group_regions(const memacct_group_info *g, const char *only);

/** json_region() - one region's counters as a JSON object. */
json_object *json_region(const memacct_region_info *r);

/** print_group_region() - show --region: @g's counters in @region. Return: the exit status. */
int print_group_region(const memacct_group_info *g, const char *region, bool json);

/** print_event_json_region() - an event as JSON, with its @region. */
int print_event_json_region(const memacct_event *ev, const char *region, uint32_t pid, uint32_t uid);

/** print_region_event() - watch --region: an event with its region ("REGION:NAME" in text). */
int print_region_event(const memacct_event *ev, const char *region, uint32_t pid, uint32_t uid, bool json);
