/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "membarrier.h"

bool membarrier_register(void) {
        /* Per process, and repeatable (liburcu registers too). */
        return syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

int membarrier_all(void) {
        return syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) < 0 ? -errno : 0;
}
