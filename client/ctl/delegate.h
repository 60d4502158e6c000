/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * memacctctl create and set: a group path, then KEY=SIZE limits and
 * owner=UID|USER, the uid the group's subtree is delegated to.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <memacct.h>

/**
 * owner_parse() - @s, a uid in decimal or a user name, as a uid.
 * Return: 0, or -EINVAL (not a uid, no such user: MEMACCT_NO_OWNER is no uid).
 */
int owner_parse(const char *s, uint32_t *ret);

/**
 * owner_name() - the user name of @uid into @buf, or "-" when the
 * password database has none. Return: @buf.
 */
const char *owner_name(uint32_t uid, char *buf, size_t size);

/**
 * delegate_verb_main() - `memacctctl create PATH [KEY=SIZE...] [owner=U]`
 * and `memacctctl set PATH [KEY=SIZE...] [owner=U]`: checks the arguments,
 * connects with @connect (0 or an exit status, having said why), and
 * creates, or sets the limits and then the owner (two changes: a refused
 * owner leaves the limits set, as the message says).
 * Return: the exit status: 0, 1 (refused or failed), 2 (usage).
 */
int delegate_verb_main(memacct **mp, int argc, char **argv, bool force, int (*connect)(memacct **ret));
