/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * memacctd.conf: an INI file (inih) with the sections [daemon], [limits],
 * [accounting], [access], [cgroup], [metrics] and [regions]. Parsing is pure: text and a file name for the
 * messages in, a Config and an error message out. Defaults that depend on
 * the environment (socket path, state directory, CPU count) are not
 * filled in here: they stay NULL / 0 and main.c resolves them.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <syslog.h>
#include <sys/socket.h>

#include "core/model.h"

/* Who may read which groups ([access] read); the service decides by it (service/authz.h). */
typedef enum ReadAccess {
        READ_ACCESS_ALL,   /* everyone may read every group (the default) */
        READ_ACCESS_OWNER, /* a uid reads only subtrees delegated to it */
        READ_ACCESS_ROOT,  /* only root reads */
        _READ_ACCESS_MAX,
        _READ_ACCESS_INVALID = -EINVAL,
} ReadAccess;

/* What a confined peer (service/authz.h) reads outside its own group ([access] confined-read). */
typedef enum ConfinedRead {
        CONFINED_READ_SUBTREE, /* nothing: its group and below only (the default) */
        CONFINED_READ_ALL,     /* what [access] read lets any unprivileged uid read */
        _CONFINED_READ_MAX,
        _CONFINED_READ_INVALID = -EINVAL,
} ConfinedRead;

/** confined_read_to_string() - "subtree", "all"; NULL when out of range. */
const char *confined_read_to_string(ConfinedRead c);
/** confined_read_from_string() - the reverse; _CONFINED_READ_INVALID for anything else. */
ConfinedRead confined_read_from_string(const char *s);

/** read_access_to_string() - "all", "owner", "root"; NULL when out of range. */
const char *read_access_to_string(ReadAccess a);
/** read_access_from_string() - the reverse; _READ_ACCESS_INVALID for anything else. */
ReadAccess read_access_from_string(const char *s);

#define CONFIG_FILE_MAX (1u << 20) /* bytes; a longer file is refused */

/* A device memory region [regions] declares: "region = NAME CAPACITY". */
typedef struct ConfigRegion {
        char name[MEM_REGION_NAME_MAX + 1]; /* mem_region_name_check(), not "memory" */
        uint64_t capacity;                  /* UINT64_MAX: max */
} ConfigRegion;

typedef struct Config {
        /* [daemon] */
        char *socket_path; /* NULL: the default for the user */
        char *state_dir;   /* NULL: the default for the user */
        unsigned workers;  /* 0: one per CPU */
        bool sync;         /* a durable change's OK waits for fsync, not only the write */
        int log_level;     /* LOG_ERR .. LOG_DEBUG: the messages logged; -v adds one each */

        /* [limits] */
        uint32_t frame_size;           /* bytes in one frame body */
        unsigned max_groups;           /* groups, the root included */
        unsigned max_depth;            /* path components */
        unsigned sessions_per_uid;     /* 0: unlimited */
        unsigned outstanding_requests; /* per connection: reading pauses at this many */
        uint64_t output_buffer;        /* per connection: reading pauses above this */
        unsigned idle_timeout_sec;     /* 0: none */
        unsigned frame_timeout_sec;    /* a half-received frame may wait this long; 0: forever */
        /* What one uid, and all uids but root together, may make the
         * daemon hold; root is never limited. 0: unlimited. */
        unsigned connections_per_uid;
        unsigned connections;          /* socket connections of all uids but root */
        unsigned subscriptions_per_uid;
        unsigned subscriptions;        /* of all uids but root */
        unsigned groups_per_uid;       /* groups one uid owns; all but root own at most 7/8 of groups */
        uint64_t output_buffer_per_uid; /* unwritten replies and queued events, bytes */
        uint64_t output_buffer_total;  /* of all uids but root */

        /* [accounting] */
        unsigned flush_interval_msec;
        uint64_t charge_batch;  /* largest stock refill advertised */
        uint64_t rss_threshold; /* bytes */
        bool recursive_protection;
        bool charge_stock;      /* each worker's charge stock (core/stock.h); restart */
        unsigned reclaim_timeout_msec; /* how long a round of reclaim waits for its holders */

        /* [access] */
        ReadAccess read_access;
        ConfinedRead confined_read;

        /* [cgroup] */
        char *cgroup_prefix;            /* mirrors go below it; NULL: "/" */
        bool cgroup_import_at_start;
        unsigned cgroup_sample_interval_sec; /* kernel usage sampling; 0: off */
        bool cgroup_auto_create;        /* Attach "auto" creates the mirror */
        bool cgroup_prune;              /* each sample removes mirrors of vanished cgroups */

        /* [metrics] */
        char *metrics_listen;      /* config_listen_parse() syntax; NULL: no listener */
        bool metrics_allow_remote; /* a listen address that is not loopback is accepted */
        unsigned metrics_connections;       /* open at once; more are refused or evict a stalled one */
        unsigned metrics_head_timeout_sec;  /* a request head must be complete this long after it may start */
        unsigned metrics_write_timeout_sec; /* an answer must be sent this long after it is queued */
        uint32_t metrics_header_size;       /* bytes of a request line and headers */
        uint32_t metrics_body_size;         /* bytes of a request body */
        uint64_t metrics_output_buffer;     /* bytes of answers unsent, all connections together */
        unsigned metrics_max_groups;        /* groups one scrape exports at most; the rest are cut */
        bool metrics_series_basic;          /* series = basic: 12 series a group, not 34 */

        /* [regions]: in file order, each name once */
        ConfigRegion regions[MEM_REGION_MAX - 1];
        unsigned n_regions;
} Config;

#define CONFIG_DEFAULT                                     \
        ((Config) {                                        \
                .sync = true,                              \
                .log_level = LOG_NOTICE,                   \
                .frame_size = 64 * 1024,                   \
                .max_groups = 65536,                       \
                .max_depth = 32,                           \
                .sessions_per_uid = 1024,                  \
                .outstanding_requests = 1024,              \
                .output_buffer = 4 * 1024 * 1024,          \
                .idle_timeout_sec = 0,                     \
                .frame_timeout_sec = 10,                   \
                .connections_per_uid = 512,                \
                .connections = 8192,                       \
                .subscriptions_per_uid = 256,              \
                .subscriptions = 4096,                     \
                .groups_per_uid = 1024,                    \
                .output_buffer_per_uid = 16 * 1024 * 1024, \
                .output_buffer_total = 256 * 1024 * 1024,  \
                .flush_interval_msec = 2000,               \
                .charge_batch = 4 * 1024 * 1024,           \
                .rss_threshold = 256 * 1024,               \
                .recursive_protection = false,             \
                .charge_stock = false,                     \
                .reclaim_timeout_msec = 1000,              \
                .read_access = READ_ACCESS_ALL,            \
                .confined_read = CONFINED_READ_SUBTREE,    \
                .cgroup_import_at_start = false,           \
                .cgroup_sample_interval_sec = 5,           \
                .cgroup_auto_create = false,               \
                .cgroup_prune = true,                      \
                .metrics_allow_remote = false,             \
                .metrics_connections = 16,                 \
                .metrics_head_timeout_sec = 10,            \
                .metrics_write_timeout_sec = 10,           \
                .metrics_header_size = 8 * 1024,           \
                .metrics_body_size = 1024,                 \
                .metrics_output_buffer = 64 * 1024 * 1024, \
                .metrics_max_groups = 10000,               \
        })

/* A listen address: what [metrics] listen and --metrics name. */
typedef struct ConfigListen {
        struct sockaddr_storage addr; /* AF_INET, AF_INET6 or AF_UNIX */
        socklen_t addr_len;
        bool local; /* a loopback address or a Unix socket: nothing remote reaches it */
} ConfigListen;

/**
 * config_listen_parse() - parse a listen address: "IPV4:PORT", "[IPV6]:PORT",
 * "localhost:PORT" (127.0.0.1) or "unix:PATH" (an absolute path that fits
 * sun_path). Numeric addresses only (no name resolution); PORT is 0..65535,
 * 0 letting the kernel choose. Pure; any thread.
 * @ret: optional
 *
 * Return: 0, or -EINVAL.
 */
int config_listen_parse(const char *s, ConfigListen *ret);

/**
 * config_series_from_string() - the metrics series word of @n bytes at
 * @s, as [metrics] series and a scrape's ?series= both spell it.
 * Return: 1 for "basic", 0 for "full", -EINVAL otherwise.
 */
int config_series_from_string(const char *s, size_t n);

/**
 * config_groups_not_root() - the groups all uids but root may own
 * together: 7/8 of [limits] groups, so root keeps the rest.
 */
unsigned config_groups_not_root(const Config *c);

/** config_cgroup_prefix() - [cgroup] prefix, "/" when not set. */
const char *config_cgroup_prefix(const Config *c);

/** config_done() - free what @c owns and reset it to CONFIG_DEFAULT. Accepts a zeroed Config. */
void config_done(Config *c);

/**
 * config_copy() - deep copy of @src into @ret (which is overwritten, not freed).
 * Return: 0 or -ENOMEM.
 */
int config_copy(const Config *src, Config *ret);

/**
 * config_parse() - parse the INI text @text of @size bytes (it need not be
 * NUL-terminated and may hold any bytes). Every key not set keeps its
 * CONFIG_DEFAULT value.
 * @filename: used in error messages only
 * @ret: on success, the configuration (free with config_done()); untouched
 *       on failure
 * @ret_error: on failure, a malloc'ed message "FILE:LINE: ..." naming the
 *       key and the problem; NULL on success or when out of memory
 *
 * Unknown sections and keys, a key set twice (but [regions] region, once
 * per region), a value that does not parse or is out of range, a line too
 * long, a NUL byte: all refuse the file.
 * Pure: no I/O, no global state; any thread.
 *
 * Return: 0; -EINVAL for a bad file (message set); -ENOMEM.
 */
int config_parse(const char *text, size_t size, const char *filename, Config *ret, char **ret_error);

/**
 * config_load() - read @path and config_parse() it.
 * Return: as config_parse(), and -errno when the file cannot be read
 * (-ENOENT when it does not exist; *ret_error is set for every error but
 * -ENOMEM), -EFBIG above CONFIG_FILE_MAX.
 */
int config_load(const char *path, Config *ret, char **ret_error);
