/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memacctd.conf parsing
 *
 * The file is INI, read by inih through a reader callback over memory, so
 * the same code parses a file, a test string or fuzzer bytes. The reader
 * knows the line of every chunk it hands out; the handler uses it for
 * "FILE:LINE:" in messages, and inih's own first-error line covers syntax
 * errors the handler never sees. Of several problems the one on the
 * earliest line is reported.
 *
 * The rules are strict on purpose: a typo in a limit must stop the daemon,
 * not leave a default silently in force. So unknown sections and keys, a
 * key given twice (which also catches inih's indented continuation lines;
 * [regions] region is the one key given once per region, and a region
 * declared twice is refused),
 * values outside their documented range, NUL bytes and lines longer than
 * inih's line buffer (which it would otherwise split into two lines) all
 * refuse the file.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/config.h"
#include "core/model.h"
#include "file-util.h"
#include "macro.h"
#include "parse-size.h"

typedef enum KeyType {
        KEY_PATH,     /* char *; @max is the longest accepted length */
        KEY_UNSIGNED, /* unsigned, decimal digits */
        KEY_SIZE32,   /* uint32_t, parse_size() */
        KEY_SIZE,     /* uint64_t, parse_size() */
        KEY_BOOL,     /* bool */
        KEY_ACCESS,   /* ReadAccess */
        KEY_CONFINED, /* ConfinedRead */
        KEY_SERIES,   /* bool: "basic" true, "full" false */
        KEY_LEVEL,    /* int, a syslog level from LOG_ERR to LOG_DEBUG by name */
        KEY_GROUP,    /* char *, an absolute group path (mem_path_check()) */
        KEY_LISTEN,   /* char *, config_listen_parse(); empty: NULL */
        KEY_REGION,   /* ConfigRegion[], one appended per line: the one key given more than once */
} KeyType;

typedef struct ConfigKey {
        const char *section;
        const char *name;
        KeyType type;
        size_t offset;
        uint64_t min, max;
} ConfigKey;

static const char *const read_access_table[_READ_ACCESS_MAX] = {
        [READ_ACCESS_ALL] = "all",
        [READ_ACCESS_OWNER] = "owner",
        [READ_ACCESS_ROOT] = "root",
};

DEFINE_STRING_TABLE(read_access, ReadAccess, _READ_ACCESS_MAX)

static const char *const confined_read_table[_CONFINED_READ_MAX] = {
        [CONFINED_READ_SUBTREE] = "subtree",
        [CONFINED_READ_ALL] = "all",
};

DEFINE_STRING_TABLE(confined_read, ConfinedRead, _CONFINED_READ_MAX)

#define KEY(s, n, t, field, lo, hi) { s, n, t, offsetof(Config, field), lo, hi }

/* sun_path holds 108 bytes with the NUL. */
#define SOCKET_PATH_MAX (sizeof(((struct sockaddr_un *) NULL)->sun_path) - 1)
#define STATE_DIR_MAX 3072

static const ConfigKey config_keys[] = {
        KEY("daemon", "socket", KEY_PATH, socket_path, 1, SOCKET_PATH_MAX),
        KEY("daemon", "workers", KEY_UNSIGNED, workers, 0, 1024),
        KEY("daemon", "state-dir", KEY_PATH, state_dir, 1, STATE_DIR_MAX),
        KEY("daemon", "sync", KEY_BOOL, sync, 0, 1),
        KEY("daemon", "log-level", KEY_LEVEL, log_level, 0, 0),

        KEY("limits", "frame-size", KEY_SIZE32, frame_size, 1024, 64u << 20),
        KEY("limits", "groups", KEY_UNSIGNED, max_groups, 1, 1u << 24),
        KEY("limits", "depth", KEY_UNSIGNED, max_depth, 1, 255),
        KEY("limits", "sessions-per-uid", KEY_UNSIGNED, sessions_per_uid, 0, 1u << 24),
        KEY("limits", "outstanding-requests", KEY_UNSIGNED, outstanding_requests, 1, 1u << 20),
        KEY("limits", "output-buffer", KEY_SIZE, output_buffer, 4096, 1ull << 30),
        KEY("limits", "idle-timeout", KEY_UNSIGNED, idle_timeout_sec, 0, 365u * 24 * 3600),
        KEY("limits", "frame-timeout", KEY_UNSIGNED, frame_timeout_sec, 0, 24 * 3600),
        KEY("limits", "connections-per-uid", KEY_UNSIGNED, connections_per_uid, 0, 1u << 24),
        KEY("limits", "connections", KEY_UNSIGNED, connections, 0, 1u << 24),
        KEY("limits", "subscriptions-per-uid", KEY_UNSIGNED, subscriptions_per_uid, 0, 1u << 24),
        KEY("limits", "subscriptions", KEY_UNSIGNED, subscriptions, 0, 1u << 24),
        KEY("limits", "groups-per-uid", KEY_UNSIGNED, groups_per_uid, 0, 1u << 24),
        KEY("limits", "output-buffer-per-uid", KEY_SIZE, output_buffer_per_uid, 0, 1ull << 40),
        KEY("limits", "output-buffer-total", KEY_SIZE, output_buffer_total, 0, 1ull << 40),

        KEY("accounting", "flush-interval", KEY_UNSIGNED, flush_interval_msec, 10, 3600 * 1000),
        KEY("accounting", "charge-batch", KEY_SIZE, charge_batch, 4096, 1ull << 30),
        KEY("accounting", "rss-threshold", KEY_SIZE, rss_threshold, 0, 1ull << 40),
        KEY("accounting", "recursive-protection", KEY_BOOL, recursive_protection, 0, 1),
        KEY("accounting", "charge-stock", KEY_BOOL, charge_stock, 0, 1),
        KEY("accounting", "reclaim-timeout", KEY_UNSIGNED, reclaim_timeout_msec, 1, 600 * 1000),

        KEY("access", "read", KEY_ACCESS, read_access, 0, 0),
        KEY("access", "confined-read", KEY_CONFINED, confined_read, 0, 0),

        KEY("cgroup", "prefix", KEY_GROUP, cgroup_prefix, 1, MEM_PATH_MAX),
        KEY("cgroup", "import-at-start", KEY_BOOL, cgroup_import_at_start, 0, 1),
        KEY("cgroup", "sample-interval", KEY_UNSIGNED, cgroup_sample_interval_sec, 0, 24 * 3600),
        KEY("cgroup", "auto-create", KEY_BOOL, cgroup_auto_create, 0, 1),
        KEY("cgroup", "prune", KEY_BOOL, cgroup_prune, 0, 1),

        KEY("metrics", "listen", KEY_LISTEN, metrics_listen, 0, 0),
        KEY("metrics", "allow-remote", KEY_BOOL, metrics_allow_remote, 0, 1),
        KEY("metrics", "connections", KEY_UNSIGNED, metrics_connections, 1, 4096),
        KEY("metrics", "head-timeout", KEY_UNSIGNED, metrics_head_timeout_sec, 1, 3600),
        KEY("metrics", "write-timeout", KEY_UNSIGNED, metrics_write_timeout_sec, 1, 3600),
        KEY("metrics", "header-size", KEY_SIZE32, metrics_header_size, 1024, 1u << 20),
        KEY("metrics", "body-size", KEY_SIZE32, metrics_body_size, 0, 1u << 20),
        KEY("metrics", "output-buffer", KEY_SIZE, metrics_output_buffer, 1u << 20, 1ull << 40),
        KEY("metrics", "max-groups", KEY_UNSIGNED, metrics_max_groups, 1, 1u << 24),
        KEY("metrics", "series", KEY_SERIES, metrics_series_basic, 0, 0),

        KEY("regions", "region", KEY_REGION, regions, 0, 0),
};

static const char *const config_sections[] = { "daemon", "limits", "accounting", "access", "cgroup",
                                               "metrics", "regions" };

typedef struct ParseContext {
        Config config;
        const char *filename;

        /* The reader's position, and the line of the chunk it last returned. */
        const char *p, *end;
        unsigned line, next_line;

        unsigned seen[ELEMENTSOF(config_keys)]; /* line a key was set on, 0: not yet */
        unsigned region_lines[MEM_REGION_MAX - 1]; /* of config.regions */

        char *error; /* the first problem found, with its line */
        unsigned error_line;
        bool oom;
} ParseContext;

static void fail(ParseContext *ctx, unsigned line, const char *format, ...) __attribute__((format(printf, 3, 4)));
static void fail(ParseContext *ctx, unsigned line, const char *format, ...) {
        char *msg = NULL, *full = NULL;
        va_list ap;
        int r;

        /* Problems are found in line order, except inih's syntax errors,
         * which the caller compares separately: the first one stays. */
        if (ctx->error || ctx->oom)
                return;
        va_start(ap, format);
        r = vasprintf(&msg, format, ap);
        va_end(ap);
        if (r < 0 || asprintf(&full, "%s:%u: %s", ctx->filename, line, msg) < 0) {
                free(msg);
                ctx->oom = true;
                return;
        }
        free(msg);
        ctx->error = full;
        ctx->error_line = line;
}

static bool section_known(const char *s, size_t n) {
        for (size_t i = 0; i < ELEMENTSOF(config_sections); i++)
                if (strlen(config_sections[i]) == n && memcmp(config_sections[i], s, n) == 0)
                        return true;
        return false;
}

/*
 * inih's ini_reader over memory. It refuses what inih would mishandle:
 * a NUL byte (inih works on C strings and would cut the line) and a line
 * that does not fit inih's buffer of @num bytes (inih would read the rest
 * as a separate line). It also checks section headers, which inih reports
 * to nobody when the section has no keys.
 */
static char *reader(char *str, int num, void *stream) {
        ParseContext *ctx = stream;
        const char *nl, *s;
        size_t len;

        if (ctx->p >= ctx->end || ctx->error || ctx->oom)
                return NULL;
        ctx->line = ctx->next_line;
        nl = memchr(ctx->p, '\n', (size_t) (ctx->end - ctx->p));
        len = nl ? (size_t) (nl - ctx->p) + 1 : (size_t) (ctx->end - ctx->p);
        if (num <= 0 || len >= (size_t) num) {
                fail(ctx, ctx->line, "line too long (at most %d bytes)", num - 2);
                return NULL;
        }
        if (memchr(ctx->p, 0, len)) {
                fail(ctx, ctx->line, "NUL byte in the file");
                return NULL;
        }
        memcpy(str, ctx->p, len);
        str[len] = 0;
        ctx->p += len;
        ctx->next_line++;

        for (s = str; *s == ' ' || *s == '\t'; s++)
                ;
        if (*s == '[') {
                const char *close = strchr(s, ']');

                if (close && !section_known(s + 1, (size_t) (close - s - 1)))
                        fail(ctx, ctx->line, "unknown section [%.*s]", (int) MIN(close - s - 1, 64),
                             s + 1);
        }
        return str;
}

/* The port after the last ':' of a TCP address: 0..65535, decimal digits. */
static int parse_port(const char *s, uint16_t *ret) {
        unsigned v = 0;

        if (!*s || strlen(s) > 5)
                return -EINVAL;
        for (; *s; s++) {
                if (*s < '0' || *s > '9')
                        return -EINVAL;
                v = v * 10 + (unsigned) (*s - '0');
        }
        if (v > 65535)
                return -EINVAL;
        *ret = (uint16_t) v;
        return 0;
}

int config_listen_parse(const char *s, ConfigListen *ret) {
        ConfigListen l = {};
        char host[INET6_ADDRSTRLEN + 2];
        const char *colon;
        uint16_t port;
        size_t n;

        if (!s || !*s)
                return -EINVAL;
        if (strncmp(s, "unix:", 5) == 0) {
                struct sockaddr_un *sa = (struct sockaddr_un *) &l.addr;

                s += 5;
                n = strlen(s);
                if (s[0] != '/' || n >= sizeof(sa->sun_path))
                        return -EINVAL;
                sa->sun_family = AF_UNIX;
                memcpy(sa->sun_path, s, n);
                l.addr_len = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + n + 1);
                l.local = true;
                goto done;
        }
        colon = strrchr(s, ':');
        if (!colon || colon == s || (size_t) (colon - s) >= sizeof(host) ||
            parse_port(colon + 1, &port) < 0)
                return -EINVAL;
        n = (size_t) (colon - s);
        memcpy(host, s, n);
        host[n] = 0;
        if (host[0] == '[') {
                struct sockaddr_in6 *sa = (struct sockaddr_in6 *) &l.addr;

                if (n < 3 || host[n - 1] != ']')
                        return -EINVAL;
                host[n - 1] = 0;
                if (inet_pton(AF_INET6, host + 1, &sa->sin6_addr) != 1)
                        return -EINVAL;
                sa->sin6_family = AF_INET6;
                sa->sin6_port = htons(port);
                l.addr_len = sizeof(*sa);
                l.local = IN6_IS_ADDR_LOOPBACK(&sa->sin6_addr) ||
                          (IN6_IS_ADDR_V4MAPPED(&sa->sin6_addr) && sa->sin6_addr.s6_addr[12] == 127);
        } else {
                struct sockaddr_in *sa = (struct sockaddr_in *) &l.addr;

                if (strcmp(host, "localhost") == 0)
                        strcpy(host, "127.0.0.1");
                if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
                        return -EINVAL;
                sa->sin_family = AF_INET;
                sa->sin_port = htons(port);
                l.addr_len = sizeof(*sa);
                l.local = (ntohl(sa->sin_addr.s_addr) >> 24) == 127; /* 127.0.0.0/8 */
        }
done:
        if (ret)
                *ret = l;
        return 0;
}

static int parse_unsigned(const char *s, uint64_t *ret) {
        uint64_t v = 0;

        if (!*s)
                return -EINVAL;
        for (; *s; s++) {
                if (*s < '0' || *s > '9')
                        return -EINVAL;
                if (v > (UINT64_MAX - 9) / 10)
                        return -ERANGE;
                v = v * 10 + (uint64_t) (*s - '0');
        }
        *ret = v;
        return 0;
}

static int parse_bool(const char *s, bool *ret) {
        static const char *const yes[] = { "1", "yes", "true", "on" };
        static const char *const no[] = { "0", "no", "false", "off" };

        for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
                if (strcasecmp(s, yes[i]) == 0) {
                        *ret = true;
                        return 0;
                }
                if (strcasecmp(s, no[i]) == 0) {
                        *ret = false;
                        return 0;
                }
        }
        return -EINVAL;
}

static void fail_range(ParseContext *ctx, const ConfigKey *k, const char *value) {
        if (k->type == KEY_SIZE || k->type == KEY_SIZE32)
                fail(ctx, ctx->line, "[%s] %s = %.64s: out of range (%" PRIu64 "..%" PRIu64 " bytes)",
                     k->section, k->name, value, k->min, k->max);
        else
                fail(ctx, ctx->line, "[%s] %s = %.64s: out of range (%" PRIu64 "..%" PRIu64 ")",
                     k->section, k->name, value, k->min, k->max);
}

/* Replace the string in @field by a copy of @value (NULL: none). */
static void set_string(ParseContext *ctx, void *field, const char *value) {
        char *copy = NULL;

        if (value && !(copy = strdup(value))) {
                ctx->oom = true;
                return;
        }
        free(*(char **) field);
        *(char **) field = copy;
}

/*
 * [regions] region = NAME CAPACITY: the name is in the value, as inih
 * splits a line at its first '=' or ':', which a region name may hold.
 * Each name once, at most as many as a core holds.
 */
static void set_region(ParseContext *ctx, const char *value) {
        Config *c = &ctx->config;
        size_t n = strcspn(value, " \t");
        const char *capacity = value + n + strspn(value + n, " \t");
        ConfigRegion region = {};
        int r;

        if (n == 0 || !*capacity || capacity[strcspn(capacity, " \t")]) {
                fail(ctx, ctx->line, "[regions] region = %.64s: expected NAME CAPACITY (a size or max)", value);
                return;
        }
        if (n > MEM_REGION_NAME_MAX) {
                fail(ctx, ctx->line, "[regions] region = %.64s: a region name is at most %d bytes", value,
                     MEM_REGION_NAME_MAX);
                return;
        }
        memcpy(region.name, value, n);
        if (mem_region_name_check(region.name) < 0 || strcmp(region.name, MEM_REGION_MEMORY_NAME) == 0) {
                fail(ctx, ctx->line, "[regions] region = %.64s: '%s' is not a region name ([A-Za-z0-9._:/@+-], "
                     "not memory)", value, region.name);
                return;
        }
        r = parse_size(capacity, &region.capacity);
        if (r < 0) {
                fail(ctx, ctx->line, "[regions] region = %.64s: %s", value,
                     r == -ERANGE ? "capacity out of range" :
                                    "capacity not a size (bytes with an optional K, M, G or T suffix, or max)");
                return;
        }
        for (unsigned i = 0; i < c->n_regions; i++)
                if (strcmp(c->regions[i].name, region.name) == 0) {
                        fail(ctx, ctx->line, "[regions] region %s declared twice (first on line %u)", region.name,
                             ctx->region_lines[i]);
                        return;
                }
        if (c->n_regions == ELEMENTSOF(c->regions)) {
                fail(ctx, ctx->line, "[regions] region = %.64s: more than %zu regions", value,
                     ELEMENTSOF(c->regions));
                return;
        }
        ctx->region_lines[c->n_regions] = ctx->line;
        c->regions[c->n_regions++] = region;
}

/*
 * Parse @value as key @k says and store it: the switch over the key
 * types, one case each (a documented table: the types of config_keys).
 */
static void set_value(ParseContext *ctx, const ConfigKey *k, const char *value) {
        void *field = (uint8_t *) &ctx->config + k->offset;
        uint64_t v;
        bool b;
        int r;

        switch (k->type) {
        case KEY_LISTEN:
                /* Empty: no listener, as when the key is not given. */
                if (*value && config_listen_parse(value, NULL) < 0) {
                        fail(ctx, ctx->line,
                             "[%s] %s = %.64s: expected ADDRESS:PORT (numeric, IPv6 in brackets) or "
                             "unix:/PATH", k->section, k->name, value);
                        return;
                }
                set_string(ctx, field, *value ? value : NULL);
                return;
        case KEY_GROUP:
                if (mem_path_check(value, MEM_PATH_MAX, NULL) < 0) {
                        fail(ctx, ctx->line, "[%s] %s = %.64s: not an absolute group path", k->section,
                             k->name, value);
                        return;
                }
                __attribute__((fallthrough));
        case KEY_PATH: {
                size_t n = strlen(value);

                if (n < k->min) {
                        fail(ctx, ctx->line, "[%s] %s: must not be empty", k->section, k->name);
                        return;
                }
                if (n > k->max) {
                        fail(ctx, ctx->line, "[%s] %s: path too long (%zu bytes, at most %" PRIu64 ")",
                             k->section, k->name, n, k->max);
                        return;
                }
                set_string(ctx, field, value);
                return;
        }
        case KEY_UNSIGNED:
                r = parse_unsigned(value, &v);
                if (r == -EINVAL) {
                        fail(ctx, ctx->line, "[%s] %s = %.64s: not a number (decimal digits)", k->section,
                             k->name, value);
                        return;
                }
                if (r < 0 || v < k->min || v > k->max) {
                        fail_range(ctx, k, value);
                        return;
                }
                *(unsigned *) field = (unsigned) v;
                return;
        case KEY_SIZE32:
        case KEY_SIZE:
                r = parse_size(value, &v);
                if (r == -EINVAL) {
                        fail(ctx, ctx->line,
                             "[%s] %s = %.64s: not a size (bytes with an optional K, M, G or T suffix)",
                             k->section, k->name, value);
                        return;
                }
                if (r < 0 || v < k->min || v > k->max) {
                        fail_range(ctx, k, value);
                        return;
                }
                if (k->type == KEY_SIZE32)
                        *(uint32_t *) field = (uint32_t) v;
                else
                        *(uint64_t *) field = v;
                return;
        case KEY_BOOL:
                if (parse_bool(value, &b) < 0) {
                        fail(ctx, ctx->line, "[%s] %s = %.64s: not a boolean (yes/no, true/false, on/off, 1/0)",
                             k->section, k->name, value);
                        return;
                }
                *(bool *) field = b;
                return;
        case KEY_ACCESS: {
                ReadAccess a = read_access_from_string(value);

                if (a < 0) {
                        fail(ctx, ctx->line, "[%s] %s = %.64s: must be all, owner or root", k->section,
                             k->name, value);
                        return;
                }
                *(ReadAccess *) field = a;
                return;
        }
        case KEY_SERIES: {
                int basic = config_series_from_string(value, strlen(value));

                if (basic < 0) {
                        fail(ctx, ctx->line, "[%s] %s = %.64s: must be basic or full", k->section, k->name, value);
                        return;
                }
                *(bool *) field = basic;
                return;
        }
        case KEY_LEVEL: {
                static const char *const levels[] = {
                        [LOG_ERR] = "err",         [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
                        [LOG_INFO] = "info",       [LOG_DEBUG] = "debug",
                };

                for (int l = LOG_ERR; l <= LOG_DEBUG; l++)
                        if (strcmp(value, levels[l]) == 0) {
                                *(int *) field = l;
                                return;
                        }
                fail(ctx, ctx->line, "[%s] %s = %.64s: must be err, warning, notice, info or debug", k->section,
                     k->name, value);
                return;
        }
        case KEY_CONFINED: {
                ConfinedRead cr = confined_read_from_string(value);

                if (cr < 0) {
                        fail(ctx, ctx->line, "[%s] %s = %.64s: must be subtree or all", k->section, k->name,
                             value);
                        return;
                }
                *(ConfinedRead *) field = cr;
                return;
        }
        case KEY_REGION:
                set_region(ctx, value);
                return;
        }
}

static int handler(void *user, const char *section, const char *name, const char *value) {
        ParseContext *ctx = user;

        if (ctx->error || ctx->oom)
                return 0;
        if (!*section) {
                fail(ctx, ctx->line, "'%.64s' outside of any section", name);
                return 0;
        }
        if (!section_known(section, strlen(section))) {
                fail(ctx, ctx->line, "unknown section [%.64s]", section);
                return 0;
        }
        for (size_t i = 0; i < ELEMENTSOF(config_keys); i++) {
                const ConfigKey *k = &config_keys[i];

                if (strcmp(k->section, section) != 0 || strcmp(k->name, name) != 0)
                        continue;
                if (ctx->seen[i] && k->type != KEY_REGION) {
                        fail(ctx, ctx->line, "[%s] %s set twice (first on line %u)", section, name,
                             ctx->seen[i]);
                        return 0;
                }
                if (!ctx->seen[i])
                        ctx->seen[i] = ctx->line;
                set_value(ctx, k, value);
                return !ctx->error && !ctx->oom;
        }
        fail(ctx, ctx->line, "unknown key '%.64s' in [%s]", name, section);
        return 0;
}

void config_done(Config *c) {
        if (!c)
                return;
        free(c->socket_path);
        free(c->state_dir);
        free(c->cgroup_prefix);
        free(c->metrics_listen);
        *c = CONFIG_DEFAULT;
}

int config_copy(const Config *src, Config *ret) {
        Config c = *src;

        c.socket_path = NULL;
        c.state_dir = NULL;
        c.cgroup_prefix = NULL;
        c.metrics_listen = NULL;
        if ((src->socket_path && !(c.socket_path = strdup(src->socket_path))) ||
            (src->state_dir && !(c.state_dir = strdup(src->state_dir))) ||
            (src->cgroup_prefix && !(c.cgroup_prefix = strdup(src->cgroup_prefix))) ||
            (src->metrics_listen && !(c.metrics_listen = strdup(src->metrics_listen)))) {
                config_done(&c);
                return -ENOMEM;
        }
        *ret = c;
        return 0;
}

unsigned config_groups_not_root(const Config *c) {
        return c->max_groups - c->max_groups / 8;
}

const char *config_cgroup_prefix(const Config *c) {
        return c->cgroup_prefix ? c->cgroup_prefix : "/";
}

int config_series_from_string(const char *s, size_t n) {
        if (n == 5 && memcmp(s, "basic", 5) == 0)
                return 1;
        if (n == 4 && memcmp(s, "full", 4) == 0)
                return 0;
        return -EINVAL;
}

/* The line @field's key was set on, 0: not set; for the checks across keys. */
static unsigned seen_line(const ParseContext *ctx, size_t field) {
        for (size_t i = 0; i < ELEMENTSOF(config_keys); i++)
                if (config_keys[i].offset == field)
                        return ctx->seen[i];
        return 0;
}

/* Across keys, once the file is read: a listener anyone may reach only when asked for. */
static void check_metrics(ParseContext *ctx) {
        const Config *c = &ctx->config;
        ConfigListen l;

        if (!c->metrics_listen || c->metrics_allow_remote)
                return;
        if (config_listen_parse(c->metrics_listen, &l) >= 0 && !l.local)
                fail(ctx, seen_line(ctx, offsetof(Config, metrics_listen)),
                     "[metrics] listen = %.64s: not a loopback address or Unix socket; the listener has "
                     "no authentication (set allow-remote = yes to serve it anyway)", c->metrics_listen);
}

int config_parse(const char *text, size_t size, const char *filename, Config *ret, char **ret_error) {
        ParseContext ctx = {
                .config = CONFIG_DEFAULT,
                .filename = filename ? filename : "(config)",
                .p = text,
                .end = text ? text + size : NULL,
                .next_line = 1,
        };
        int r;

        if (ret_error)
                *ret_error = NULL;
        r = ini_parse_stream(reader, &ctx, handler, &ctx);
        if (!ctx.oom && r > 0 && (!ctx.error || (unsigned) r < ctx.error_line)) {
                /* inih's own complaint came first: a line that is neither
                 * a [section], a comment, nor key = value. */
                free(ctx.error);
                ctx.error = NULL;
                fail(&ctx, (unsigned) r, "syntax error: expected [section], key = value or a comment");
        }
        if (!ctx.oom && !ctx.error && r == 0)
                check_metrics(&ctx);
        if (ctx.oom || r < 0) {
                free(ctx.error);
                config_done(&ctx.config);
                return -ENOMEM;
        }
        if (ctx.error) {
                config_done(&ctx.config);
                if (ret_error)
                        *ret_error = ctx.error;
                else
                        free(ctx.error);
                return -EINVAL;
        }
        *ret = ctx.config;
        return 0;
}

int config_load(const char *path, Config *ret, char **ret_error) {
        _cleanup_free_ char *buf = NULL;
        size_t n = 0;
        int r;

        if (ret_error)
                *ret_error = NULL;
        r = read_file_at(AT_FDCWD, path, 0, CONFIG_FILE_MAX, &buf, &n);
        if (r == -ENOMEM)
                return r;
        if (r >= 0)
                return config_parse(buf, n, path, ret, ret_error);
        if (ret_error) {
                int k;

                if (r == -EFBIG)
                        k = asprintf(ret_error, "%s: cannot read: larger than %u bytes", path, CONFIG_FILE_MAX);
                else if (r == -EINVAL)
                        k = asprintf(ret_error, "%s: cannot read: not a regular file", path);
                else {
                        errno = -r;
                        k = asprintf(ret_error, "%s: cannot read: %m", path);
                }
                if (k < 0)
                        *ret_error = NULL;
        }
        return r;
}
