/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The administrator's settings of the interposer (libmemacct-cuda(8)):
 * /etc/memacct/cuda.conf, an ini file,
 *
 *   [interposer]
 *   socket = /run/memacctd/memacctd.sock
 *   on-unreachable = deny      # or allow
 *
 * $MEMACCT_CUDA_CONFIG may name another file, which is read only when it
 * is owned by root and writable by no one else: a program can choose
 * among the files the administrator wrote, never write its own policy.
 */

#include "cuda-config.h"

/* The file's grammar and rule of trust are common/cuda-config.h's. */
typedef CudaConfig MaConfig;

/** ma_config() - the settings, read once (the defaults when there is no file or it is not trusted). */
const MaConfig *ma_config(void);
