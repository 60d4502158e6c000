/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The text exposition format checked in cmocka tests (exposition-check.c).
 */

/**
 * exposition_check() - fail the running cmocka test unless @body is the
 * text format 0.0.4 as Prometheus reads it, strictly: a HELP then a TYPE
 * opens each family, once; its samples follow (none is allowed), named
 * for it (or a histogram's _bucket, _sum, _count); a counter's name ends
 * in _total; labels well-formed and escaped; values numbers or +Inf; no
 * series twice; and a device region family (memacct_group_region_*,
 * memacct_region_*) has one label set.
 */
void exposition_check(const char *body);

/**
 * exposition_promtool() - promtool check metrics on @body.
 * Return: its exit status (0: accepted), or -1 when promtool is not installed.
 */
int exposition_promtool(const char *body);
