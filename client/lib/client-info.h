/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the daemon says of itself (memacct_get_info()), shared by both
 * transports: one allocation holding the struct and its strings.
 */

#include <memacct.h>

/**
 * client_server_info_new() - a memacct_server_info with copies of
 * @version, @state and @cause (NULL: ""), the numbers zero. Return: it, or
 * NULL when out of memory.
 */
memacct_server_info *client_server_info_new(const char *version, const char *state, const char *cause);

/** client_sessions_new() - an empty session list. Return: it, or NULL when out of memory. */
memacct_sessions *client_sessions_new(void);

/**
 * client_sessions_append() - one more session in @l, @s's strings
 * copied (NULL: ""). Return: 0, -ENOMEM.
 */
int client_sessions_append(memacct_sessions *l, const memacct_session_info *s);
