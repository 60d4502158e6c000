/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Placement rules (placement.h): a sorted array of (kernel cgroup, group)
 * pairs under one mutex, and its file.
 *
 * Invariants: the array is sorted by cgroup with no two rules of one
 * cgroup; every cgroup passed placement_cgroup_check() and every group
 * mem_path_check(); the file on disk holds the array as it is whenever
 * the mutex is free (a change that cannot be saved is undone).
 *
 * The file, line by line:
 *   memacctd-rules 1
 *   <cgroup> TAB <group>      one per rule, sorted by cgroup
 *   <cgroup> TAB <group> TAB confine    a confining rule (PLACEMENT_CONFINE)
 *   end <count>
 * The last line tells a file cut short; the file is replaced whole by a
 * rename, so a reader sees the old one or the new one, never a mix. A
 * file with a confining rule says "memacctd-rules 2": a daemon that knows
 * no confinement refuses it (and sets it aside) rather than placing a
 * container's processes without confining them.
 */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/group.h"
#include "file-util.h"
#include "macro.h"
#include "base/log.h"
#include "cgroup/placement.h"

#define RULES_HEADER "memacctd-rules 1\n"
#define RULES_HEADER_CONFINE "memacctd-rules 2\n"
#define RULES_TMP "rules.tmp"

typedef struct Rule {
        char *cgroup, *group;
        unsigned flags; /* PlacementFlags */
} Rule;

struct Placement {
        pthread_mutex_t lock;
        char *dir; /* NULL: not saved */
        Rule *rules;
        size_t n, cap;
        _Atomic size_t confining; /* rules with PLACEMENT_CONFINE; written under the lock */
};

int placement_new(const char *dir, Placement **ret) {
        Placement *pl = calloc(1, sizeof(*pl));

        if (!pl)
                return -ENOMEM;
        pthread_mutex_init(&pl->lock, NULL);
        if (dir && !(pl->dir = strdup(dir))) {
                free(pl);
                return -ENOMEM;
        }
        *ret = pl;
        return 0;
}

static void rules_clear(Rule *rules, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(rules[i].cgroup);
                free(rules[i].group);
        }
}

Placement *placement_free(Placement *pl) {
        if (!pl)
                return NULL;
        rules_clear(pl->rules, pl->n);
        free(pl->rules);
        free(pl->dir);
        pthread_mutex_destroy(&pl->lock);
        free(pl);
        return NULL;
}

int placement_cgroup_check(const char *cgroup) {
        size_t n = strlen(cgroup);

        if (n > PLACEMENT_CGROUP_MAX)
                return -ENAMETOOLONG;
        if (cgroup[0] != '/')
                return -EINVAL;
        if (n == 1)
                return 0;
        for (const char *c = cgroup; *c; c++)
                if ((unsigned char) *c < 0x20 || *c == 0x7f)
                        return -EINVAL; /* the file is split on tabs and newlines */
        for (const char *c = cgroup + 1;;) {
                size_t len = strcspn(c, "/");

                if (len == 0 || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
                        return -EINVAL; /* "//", a trailing "/", ".", ".." */
                if (c[len] == 0)
                        return 0;
                c += len + 1;
        }
}

bool placement_covers(const char *rule, const char *cgroup) {
        size_t n = strlen(rule);

        if (strcmp(rule, "/") == 0)
                return cgroup[0] == '/';
        return strncmp(rule, cgroup, n) == 0 && (cgroup[n] == 0 || cgroup[n] == '/');
}

/* The index of @cgroup, or where it would go (*@found false). */
static size_t rule_find(const Placement *pl, const char *cgroup, size_t len, bool *found) {
        size_t lo = 0, hi = pl->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                const char *c = pl->rules[mid].cgroup;
                int d = strncmp(c, cgroup, len);

                if (d == 0)
                        d = c[len] == 0 ? 0 : 1;
                if (d == 0) {
                        *found = true;
                        return mid;
                }
                if (d < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *found = false;
        return lo;
}

static int rules_format(Placement *pl, char **ret, size_t *ret_size) {
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        if (!f)
                return -ENOMEM;
        fputs(atomic_load(&pl->confining) > 0 ? RULES_HEADER_CONFINE : RULES_HEADER, f);
        for (size_t i = 0; i < pl->n; i++)
                fprintf(f, "%s\t%s%s\n", pl->rules[i].cgroup, pl->rules[i].group,
                        pl->rules[i].flags & PLACEMENT_CONFINE ? "\tconfine" : "");
        fprintf(f, "end %zu\n", pl->n);
        if (fclose(f) != 0) {
                free(text);
                return -ENOMEM;
        }
        *ret = text;
        *ret_size = size;
        return 0;
}

/* The table to @pl->dir/rules, as persist_save() writes the state: a
 * temporary file, fsync, rename over, fsync of the directory. Always
 * synced: a rule changes seldom, and its OK says it is on disk. */
static int rules_save(Placement *pl) {
        _cleanup_free_ char *text = NULL;
        _cleanup_close_ int dirfd = -EBADF;
        size_t size;
        int r;

        if (!pl->dir)
                return 0;
        r = rules_format(pl, &text, &size);
        if (r < 0)
                return r;
        dirfd = open(pl->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0)
                return -errno;
        return write_file_atomic_at(dirfd, PLACEMENT_FILE, RULES_TMP, text, size, fsync_fd, NULL);
}

static int rules_reserve(Placement *pl) {
        Rule *p;
        size_t cap;

        if (pl->n < pl->cap)
                return 0;
        if (pl->n >= PLACEMENT_RULES_MAX)
                return -ENOSPC;
        cap = MAX(pl->cap * 2, (size_t) 16);
        p = realloc(pl->rules, cap * sizeof(Rule));
        if (!p)
                return -ENOMEM;
        pl->rules = p;
        pl->cap = cap;
        return 0;
}

/* Count @flags in or out of the confining rules; under the lock. */
static void count_flags(Placement *pl, unsigned flags, int delta) {
        if (flags & PLACEMENT_CONFINE)
                atomic_fetch_add(&pl->confining, (size_t) delta);
}

int placement_add(Placement *pl, const char *cgroup, const char *group, unsigned flags) {
        char *c = NULL, *g = NULL;
        bool found;
        size_t i;
        int r;

        pthread_mutex_lock(&pl->lock);
        i = rule_find(pl, cgroup, strlen(cgroup), &found);
        if (found) {
                r = strcmp(pl->rules[i].group, group) == 0 && pl->rules[i].flags == flags ? 1 : -EEXIST;
                pthread_mutex_unlock(&pl->lock);
                return r;
        }
        r = rules_reserve(pl);
        if (r >= 0 && (!(c = strdup(cgroup)) || !(g = strdup(group))))
                r = -ENOMEM;
        if (r >= 0) {
                memmove(pl->rules + i + 1, pl->rules + i, (pl->n - i) * sizeof(Rule));
                pl->rules[i] = (Rule) { .cgroup = c, .group = g, .flags = flags };
                pl->n++;
                count_flags(pl, flags, 1);
                r = rules_save(pl);
                if (r < 0) {
                        count_flags(pl, flags, -1);
                        pl->n--;
                        memmove(pl->rules + i, pl->rules + i + 1, (pl->n - i) * sizeof(Rule));
                }
        }
        pthread_mutex_unlock(&pl->lock);
        if (r < 0) {
                free(c);
                free(g);
        }
        return r < 0 ? r : 0;
}

int placement_remove(Placement *pl, const char *cgroup) {
        bool found;
        Rule gone;
        size_t i;
        int r;

        pthread_mutex_lock(&pl->lock);
        i = rule_find(pl, cgroup, strlen(cgroup), &found);
        if (!found) {
                pthread_mutex_unlock(&pl->lock);
                return -ENOENT;
        }
        gone = pl->rules[i];
        memmove(pl->rules + i, pl->rules + i + 1, (pl->n - i - 1) * sizeof(Rule));
        pl->n--;
        count_flags(pl, gone.flags, -1);
        r = rules_save(pl);
        if (r < 0) {
                /* Undone: the room is there, the entry was in it. */
                memmove(pl->rules + i + 1, pl->rules + i, (pl->n - i) * sizeof(Rule));
                pl->rules[i] = gone;
                pl->n++;
                count_flags(pl, gone.flags, 1);
        } else
                rules_clear(&gone, 1);
        pthread_mutex_unlock(&pl->lock);
        return r;
}

int placement_match(Placement *pl, const char *cgroup, char *ret_group, size_t size, char *ret_rule,
                    size_t rule_size) {
        size_t len = strlen(cgroup);
        int r = -ENOENT;

        pthread_mutex_lock(&pl->lock);
        /* The whole path first, then each shorter prefix ending before a
         * "/", then "/": the first found is the longest. */
        for (;;) {
                bool found;
                size_t i = rule_find(pl, cgroup, len == 0 ? 1 : len, &found);

                if (found) {
                        r = 0;
                        if ((size_t) snprintf(ret_group, size, "%s", pl->rules[i].group) >= size)
                                r = -ENAMETOOLONG;
                        if (ret_rule && (size_t) snprintf(ret_rule, rule_size, "%s", pl->rules[i].cgroup) >= rule_size)
                                r = -ENAMETOOLONG;
                        break;
                }
                if (len <= 1)
                        break;
                while (len > 0 && cgroup[len - 1] != '/')
                        len--;
                len = len > 1 ? len - 1 : 1; /* without the "/", but "/" itself */
        }
        pthread_mutex_unlock(&pl->lock);
        return r;
}

int placement_rule_of(Placement *pl, const char *cgroup, char *ret_group, size_t size, unsigned *ret_flags) {
        bool found;
        size_t i;
        int r = -ENOENT;

        pthread_mutex_lock(&pl->lock);
        i = rule_find(pl, cgroup, strlen(cgroup), &found);
        if (found) {
                r = (size_t) snprintf(ret_group, size, "%s", pl->rules[i].group) >= size ? -ENAMETOOLONG : 0;
                *ret_flags = pl->rules[i].flags;
        }
        pthread_mutex_unlock(&pl->lock);
        return r;
}

int placement_confinement(Placement *pl, const char *cgroup, char *ret_group, size_t size) {
        size_t len = strlen(cgroup);
        int r = -ENOENT;

        if (atomic_load(&pl->confining) == 0)
                return -ENOENT;
        pthread_mutex_lock(&pl->lock);
        /* As placement_match(), the longest first, but only confining
         * rules count: a container's processes are confined by the
         * container's rule even below a plain rule of their own. */
        for (;;) {
                bool found;
                size_t i = rule_find(pl, cgroup, len == 0 ? 1 : len, &found);

                if (found && (pl->rules[i].flags & PLACEMENT_CONFINE)) {
                        r = (size_t) snprintf(ret_group, size, "%s", pl->rules[i].group) >= size ? -ENAMETOOLONG
                                                                                                 : 0;
                        break;
                }
                if (len <= 1)
                        break;
                while (len > 0 && cgroup[len - 1] != '/')
                        len--;
                len = len > 1 ? len - 1 : 1;
        }
        pthread_mutex_unlock(&pl->lock);
        return r;
}

size_t placement_confining(Placement *pl) {
        return atomic_load(&pl->confining);
}

int placement_list(Placement *pl, PlacementFn fn, void *userdata) {
        int r = 0;

        pthread_mutex_lock(&pl->lock);
        for (size_t i = 0; i < pl->n && r >= 0; i++)
                r = fn(userdata, pl->rules[i].cgroup, pl->rules[i].group, pl->rules[i].flags);
        pthread_mutex_unlock(&pl->lock);
        return r < 0 ? r : 0;
}

size_t placement_count(Placement *pl) {
        size_t n;

        pthread_mutex_lock(&pl->lock);
        n = pl->n;
        pthread_mutex_unlock(&pl->lock);
        return n;
}

/* One "cgroup TAB group [TAB confine]" line, appended in order; "confine" only in a file of @version 2. */
static int parse_line(Placement *pl, char *line, unsigned version) {
        char *tab = strchr(line, '\t'), *flag;
        unsigned flags = 0;

        if (!tab)
                return -EBADMSG;
        *tab = 0;
        flag = strchr(tab + 1, '\t');
        if (flag) {
                *flag++ = 0;
                if (version < 2 || strcmp(flag, "confine") != 0)
                        return -EBADMSG;
                flags = PLACEMENT_CONFINE;
        }
        if (placement_cgroup_check(line) < 0 || mem_path_check(tab + 1, UINT32_MAX, NULL) < 0)
                return -EBADMSG;
        if (pl->n > 0 && strcmp(pl->rules[pl->n - 1].cgroup, line) >= 0)
                return -EBADMSG; /* unsorted or twice: not a file we wrote */
        if (rules_reserve(pl) < 0)
                return pl->n >= PLACEMENT_RULES_MAX ? -ENOSPC : -ENOMEM;
        pl->rules[pl->n] = (Rule) { .cgroup = strdup(line), .group = strdup(tab + 1), .flags = flags };
        if (!pl->rules[pl->n].cgroup || !pl->rules[pl->n].group) {
                rules_clear(pl->rules + pl->n, 1);
                return -ENOMEM;
        }
        pl->n++;
        count_flags(pl, flags, 1);
        return 0;
}

int placement_parse(Placement *pl, const char *text, size_t size) {
        _cleanup_free_ char *copy = NULL;
        char *p, *end;
        unsigned version = 1;
        size_t count;
        int r = 0;

        pthread_mutex_lock(&pl->lock);
        rules_clear(pl->rules, pl->n);
        pl->n = 0;
        atomic_store(&pl->confining, 0);
        /* Both headers have the same length. */
        if (size >= strlen(RULES_HEADER_CONFINE) &&
            memcmp(text, RULES_HEADER_CONFINE, strlen(RULES_HEADER_CONFINE)) == 0)
                version = 2;
        if (size < strlen(RULES_HEADER) ||
            (version == 1 && memcmp(text, RULES_HEADER, strlen(RULES_HEADER)) != 0) ||
            text[size - 1] != '\n' || memchr(text, 0, size)) {
                r = -EBADMSG;
                goto out;
        }
        copy = strndup(text, size);
        if (!copy) {
                r = -ENOMEM;
                goto out;
        }
        for (p = copy + strlen(RULES_HEADER);; p = end + 1) {
                if (*p == 0) {
                        r = -EBADMSG; /* no end line: cut short */
                        break;
                }
                end = strchr(p, '\n');
                *end = 0;
                if (strncmp(p, "end ", 4) == 0) {
                        char *e;

                        errno = 0;
                        count = strtoul(p + 4, &e, 10);
                        if (errno || *e || e == p + 4 || count != pl->n || end[1] != 0)
                                r = -EBADMSG;
                        break;
                }
                r = parse_line(pl, p, version);
                if (r < 0)
                        break;
        }
out:
        if (r < 0) {
                rules_clear(pl->rules, pl->n);
                pl->n = 0;
                atomic_store(&pl->confining, 0);
        } else
                r = (int) pl->n;
        pthread_mutex_unlock(&pl->lock);
        return r;
}

int placement_load(Placement *pl, const char *dir) {
        _cleanup_free_ char *text = NULL, *copy = strdup(dir);
        _cleanup_close_ int dirfd = -EBADF;
        size_t size = 0;
        int r;

        if (!copy)
                return -ENOMEM;
        free(pl->dir);
        pl->dir = TAKE_PTR(copy);
        dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0)
                return log_error_errno(errno, "Cannot open the state directory %s: %m", dir);
        r = read_file_at(dirfd, PLACEMENT_FILE, O_NOFOLLOW,
                         (size_t) PLACEMENT_RULES_MAX * (PLACEMENT_CGROUP_MAX + MEM_PATH_MAX + 2) + 64, &text,
                         &size);
        if (r == -ENOENT) {
                (void) placement_parse(pl, RULES_HEADER "end 0\n", strlen(RULES_HEADER "end 0\n"));
                return 0;
        }
        if (r >= 0)
                r = placement_parse(pl, text, size);
        if (r == -EBADMSG || r == -EINVAL || r == -EFBIG || r == -ENOSPC) {
                log_error("%s/%s is damaged; set aside as %s, no placement rules", dir, PLACEMENT_FILE,
                          PLACEMENT_FILE_BAD);
                if (renameat(dirfd, PLACEMENT_FILE, dirfd, PLACEMENT_FILE_BAD) < 0)
                        r = log_error_errno(errno, "Cannot set %s/%s aside: %m", dir, PLACEMENT_FILE);
                else
                        r = 0;
        } else if (r < 0)
                log_error_errno(r, "Cannot read %s/%s: %m", dir, PLACEMENT_FILE);
        else
                log_info("Restored %d placement rule%s from %s/%s", r, r == 1 ? "" : "s", dir,
                         PLACEMENT_FILE);
        return r;
}

int placement_proc_cgroup(pid_t pid, char *buf, size_t size) {
        char path[64], line[PLACEMENT_CGROUP_MAX + 256];
        bool unified = false, memory = false;
        FILE *f;
        int r = -ENOENT;

        snprintf(path, sizeof(path), "/proc/%d/cgroup", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return errno == ENOENT ? -ESRCH : -errno;
        while (!memory && fgets(line, sizeof(line), f)) {
                char *ctl = strchr(line, ':'), *p, *tok, *save = NULL;
                bool is_memory = false;

                if (!ctl || !(p = strchr(ctl + 1, ':')))
                        continue;
                *p++ = 0;
                *ctl++ = 0;
                p[strcspn(p, "\n")] = 0;
                for (tok = strtok_r(ctl, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
                        is_memory |= strcmp(tok, "memory") == 0;
                /* v1's memory controller wins over the unified line: on a
                 * hybrid host that is where memory is accounted. */
                if (is_memory || (!unified && strcmp(line, "0") == 0 && *ctl == 0)) {
                        r = (size_t) snprintf(buf, size, "%s", p) >= size ? -ENAMETOOLONG : 0;
                        unified = true;
                        memory = is_memory;
                }
        }
        fclose(f);
        return r;
}
