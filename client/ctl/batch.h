/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * memacctctl -f FILE: many commands over one connection (batch.c).
 */

#include <memacct.h>

/**
 * batch_main() - run the commands of @file ("-": standard input), one a
 * line, over the one connection *@mp. Return: the exit status: 0 when
 * every command succeeded, 1 when one failed (each says why as it
 * would alone, with its line), 2 for a line that is no command to batch.
 */
int batch_main(memacct **mp, const char *file);
