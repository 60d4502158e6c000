/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The CUDA interposer's settings file (libmemacct-cuda(8), FILES), read
 * by the interposer itself and checked by memacctctl cdi generate before
 * it mounts the file into containers: one grammar and one rule of trust,
 * so that a file the spec mounts is one the interposer takes.
 *
 *   [interposer]
 *   socket = /run/memacctd/memacctd.sock
 *   on-unreachable = deny      # or allow
 */

#include <stdbool.h>

typedef struct CudaConfig {
        char socket[4096];      /* "": the key was not there */
        bool allow_unreachable; /* the daemon unreachable, or the device unknown to it: allocate uncharged */
} CudaConfig;

/** cuda_config_trusted() - @path is a regular file of root's that no one else may write. */
bool cuda_config_trusted(const char *path);

/**
 * cuda_config_parse() - the [interposer] section of @path into @ret;
 * other sections are other programs' and skipped. Keys absent leave @ret
 * as it was. Return: 0; a line number (> 0) not understood; -EIO (cannot
 * be read).
 */
int cuda_config_parse(const char *path, CudaConfig *ret);
