/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * `memacctctl cdi generate`: a Container Device Interface spec that gives
 * a container the CUDA interposer (libmemacct-cuda(8)), so that podman's
 * --device memacct.io/gpu=all accounts its GPU memory without a change to
 * its image.
 */

#include <stddef.h>

/* The spec's kind and its one device: --device memacct.io/gpu=all. */
#define CDI_KIND "memacct.io/gpu"
#define CDI_DEVICE "all"
/* The CDI version written: the newest podman 4.3's library (CDI 0.5.2) reads. */
#define CDI_VERSION "0.5.0"
/* Where the spec goes without --output: the static directory CDI reads. */
#define CDI_DEFAULT_OUTPUT "/etc/cdi/memacct.json"

/* Where the container sees what the spec mounts. */
#define CDI_CONTAINER_LIBDIR "/usr/lib/memacct"
#define CDI_CONTAINER_CONFIG "/etc/memacct/cuda.conf"

/**
 * cdi_spec_validate() - check @text (@len bytes) as a CDI spec the way
 * podman's CDI library reads one: one JSON object, only the fields CDI
 * 0.5.0 knows (it reads strictly), a version it accepts, a kind
 * VENDOR/CLASS, named devices with non-empty edits, NAME=VALUE
 * environment entries, mounts of absolute paths.
 * @err: on -EINVAL, what is wrong
 *
 * Pure: safe from any thread on its own arguments.
 * Return: 0; -EINVAL; -ENOMEM.
 */
int cdi_spec_validate(const char *text, size_t len, char *err, size_t errlen);

/**
 * cdi_main() - `memacctctl cdi generate`, with --output, --interposer,
 * --config and --socket from the options. Called once, from memacctctl's
 * main thread; it never connects to the daemon.
 * @argc, @argv: "cdi" and its arguments
 *
 * Return: the exit status: 0, 1 (a file missing or wrong, the spec not
 * written), 2 (a usage error).
 */
int cdi_main(int argc, char **argv);
