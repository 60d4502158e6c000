/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <memacct.h>

#include "oci-regions.h"

/* The default parent of the containers' groups (--prefix). */
#define OCI_DEFAULT_PREFIX "/containers"
/* The most state JSON read from stdin; more is refused, not truncated. */
#define OCI_STATE_MAX (1024 * 1024)
/* The deepest nesting the tokener accepts (the state is 3 deep). */
#define OCI_STATE_DEPTH 16

/* What the hook takes from the OCI state. */
typedef struct OciState {
        char id[256];          /* the container id: one valid group name */
        pid_t pid;             /* 0: absent */
        memacct_limits limits; /* from the org.memacct.* annotations */
        /* org.memacct.<region>.max and its kin: device limits, as written */
        OciRegionLimits regions;
        /* org.memacct.owner: a uid (owner_name empty), or a user name to
         * look up (owner MEMACCT_NO_OWNER); neither: MEMACCT_NO_OWNER, "". */
        uint32_t owner;
        char owner_name[256];
        /* org.memacct.fail-open=true: an unreachable daemon is a note and
         * exit 0, not a refused container. */
        bool fail_open;
        /* "bundle": the bundle directory, whose config.json names the
         * container's cgroupsPath; "" when absent or too long to use. */
        char bundle[4096];
} OciState;

/**
 * oci_state_parse() - parse and check the OCI state JSON in @buf (not
 * NUL-terminated; @len bytes, at most OCI_STATE_MAX).
 * @create: the createRuntime hook: "pid" is required and the annotations
 *          are read; otherwise (poststop) only "id" and the annotation
 *          org.memacct.fail-open are
 * @ret: filled on success
 * @err: on failure, the reason, naming the field ("state JSON: \"id\"
 *       missing", "annotation org.memacct.max: invalid size 'x'")
 *       (a device limit's region is checked against the daemon's at create,
 *       not here)
 *
 * Pure (no I/O): safe to call from any thread on its own arguments.
 *
 * Return: 0; -EINVAL (@err says why); -E2BIG (@len over OCI_STATE_MAX);
 * -ENOMEM.
 */
int oci_state_parse(const char *buf, size_t len, bool create, OciState *ret, char *err,
                    size_t errlen);

/**
 * oci_prefix_valid() - whether @prefix is "/" or an absolute group path
 * whose names hold only [A-Za-z0-9._:@-] (no trailing '/').
 */
bool oci_prefix_valid(const char *prefix);

/**
 * oci_hook_main() - `memacctctl oci-hook create|delete`: read the state
 * from @in, then create the container's group and move its pid there, or
 * remove it. Called once, from memacctctl's main thread.
 * @mp: where the connection is kept (closed by the caller)
 * @argc, @argv: "oci-hook" and its arguments
 * @prefix: --prefix, or NULL for OCI_DEFAULT_PREFIX
 * @connect: memacctctl's connect (socket or bus, as the options say);
 *           returns 0 or an exit status, having said why
 *
 * Return: the exit status: 0, 1 (bad state JSON, a refused or failed
 * operation), 2 (a usage error). With org.memacct.fail-open=true, a failed
 * @connect is 0 (said on stderr); everything else is as without it.
 */
int oci_hook_main(memacct **mp, int argc, char **argv, const char *prefix, FILE *in,
                  int (*connect)(memacct **ret));
