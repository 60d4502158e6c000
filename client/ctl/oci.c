/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `memacctctl oci-hook create|delete`: the OCI runtime hook. runc and crun
 * run it as a createRuntime hook (the container's process exists, "pid" is
 * in the state) and as a poststop hook (the container is gone, "pid" may
 * be absent), with the container's state JSON on stdin.
 *
 * Invariants: everything the state says is checked before the first call
 * to the daemon, so bad input changes nothing; the container's group is
 * made with its limits in one create call, and if the pid cannot be moved
 * into it, it is removed again: a failed create leaves no group behind
 * (the prefix group, shared by every container, may stay). delete is
 * idempotent, as a poststop hook should be: a group already gone is a
 * success with a note.
 *
 * Placement: at create the hook also adds the daemon's confining
 * placement rule "the container's kernel memory cgroup -> its group", so
 * that every process of the container that attaches "auto" lands there,
 * and every process of the container, whatever its uid, acts only inside
 * that group (memacct(7), CONFINEMENT); at delete it removes every rule
 * that names the group, before the group.
 *
 * The rule's cgroup is only ever one the runtime vouches for: the pid's
 * own, where the pid is not 1, not the hook or one of its ancestors, not
 * in the hook's own cgroup (a container's process has a cgroup of its
 * own), and, when the bundle's config.json names a cgroupsPath, in that
 * cgroup. The daemon adds its own checks: never "/" or a cgroup that
 * holds it, one rule per cgroup.
 *
 * Annotations: org.memacct.max/high/low/min are the group's limits;
 * org.memacct.<region>.max/high/low/min its limits in a device memory
 * region (oci-regions.c), set before its rule is added;
 * org.memacct.owner=UID|USER delegates the group to that user (for a
 * rootless container's own subgroups; only a hook running as root may);
 * org.memacct.fail-open=true makes an unreachable daemon a note on stderr
 * and exit 0, so the runtime starts the container unaccounted rather than
 * refusing it (the default, fail-closed, is exit 1). Only reaching the
 * daemon is covered: a daemon that answers and refuses still fails the
 * hook, and bad annotations always do.
 *
 * memacctd moves sessions, not processes: a container pid that has no
 * session yet (the usual case: the runtime calls the hook before the
 * container's program runs) is "no such client". The group is then left
 * ready and the hook succeeds with a note; the container's clients attach
 * to it themselves or are moved later.
 */

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "limit-names.h"
#include "macro.h"
#include "oci-regions.h"
#include "oci-vouch.h"
#include "oci.h"
#include "output.h"
#include "parse-size.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(json_tokener *, json_tokener_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(memacct_group_info *, memacct_group_info_free);

/* The annotations of the limits: org.memacct.max and the others of limits.h. */
#define ANNOTATION_NAMESPACE "org.memacct."

/* The daemon's rule for a group name (mem_path_check() in
 * daemon/core/group.c), checked here so a bad id is refused before any
 * daemon call. */
static bool name_char_ok(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '.' || c == '_' || c == ':' || c == '@' || c == '-';
}

static const char *name_problem(const char *s, size_t n) {
        if (n == 0)
                return "empty";
        if (n > 255)
                return "longer than 255 bytes";
        if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
                return "'.' and '..' are not group names";
        for (size_t i = 0; i < n; i++)
                if (!name_char_ok(s[i]))
                        return "a group name may only hold [A-Za-z0-9._:@-]";
        return NULL;
}

bool oci_prefix_valid(const char *prefix) {
        const char *p;

        if (!prefix || prefix[0] != '/' || strlen(prefix) > 2048)
                return false;
        if (prefix[1] == '\0')
                return true;
        for (p = prefix + 1;;) {
                const char *end = strchrnul(p, '/');

                if (name_problem(p, (size_t) (end - p)))
                        return false;
                if (!*end)
                        return true;
                p = end + 1;
        }
}

/* A JSON string for messages: short, and only printable ASCII. */
static void quote_for_message(const char *s, size_t n, char *buf, size_t size) {
        size_t o = 0;

        for (size_t i = 0; i < n && o + 5 < size; i++) {
                unsigned char c = (unsigned char) s[i];

                if (i == 64) {
                        o += (size_t) snprintf(buf + o, size - o, "...");
                        break;
                }
                if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\')
                        buf[o++] = (char) c;
                else
                        o += (size_t) snprintf(buf + o, size - o, "\\x%02x", c);
        }
        buf[MIN(o, size - 1)] = '\0';
}

static const char *json_type_word(json_object *o) {
        switch (json_object_get_type(o)) {
        case json_type_null:
                return "null";
        case json_type_boolean:
                return "a boolean";
        case json_type_double:
                return "a fraction";
        case json_type_int:
                return "an integer";
        case json_type_object:
                return "an object";
        case json_type_array:
                return "an array";
        case json_type_string:
                return "a string";
        }
        return "?";
}

/* org.memacct.fail-open: "true" or "false", nothing looser (a typo must not
 * quietly decide what an unreachable daemon does). */
static int parse_fail_open(const char *key, const char *s, const char *q, OciState *st, char *err,
                           size_t errlen) {
        if (strcmp(s, "true") == 0)
                st->fail_open = true;
        else if (strcmp(s, "false") == 0)
                st->fail_open = false;
        else
                return errorf(err, errlen, -EINVAL, "annotation %s: '%s' is neither true nor false", key, q);
        return 0;
}

/* org.memacct.owner: a uid, or a user name looked up later (parsing does no
 * I/O). Not MEMACCT_NO_OWNER, which means "no owner". */
static int parse_owner(const char *key, const char *s, const char *q, OciState *st, char *err,
                       size_t errlen) {
        if (s[0] >= '0' && s[0] <= '9') {
                char *end;
                unsigned long long v;

                errno = 0;
                v = strtoull(s, &end, 10);
                if (errno != 0 || *end || v >= MEMACCT_NO_OWNER)
                        return errorf(err, errlen, -EINVAL, "annotation %s: '%s' is not a valid uid", key, q);
                st->owner = (uint32_t) v;
                st->owner_name[0] = '\0';
                return 0;
        }
        /* The portable user name set, as useradd(8) takes it. */
        for (const char *c = s; *c; c++)
                if (!name_char_ok(*c) || *c == ':' || *c == '@')
                        return errorf(err, errlen, -EINVAL,
                                    "annotation %s: '%s' is neither a uid nor a user name", key, q);
        if (!s[0] || strlen(s) >= sizeof(st->owner_name))
                return errorf(err, errlen, -EINVAL, "annotation %s: '%s' is neither a uid nor a user name",
                            key, q);
        st->owner = MEMACCT_NO_OWNER;
        snprintf(st->owner_name, sizeof(st->owner_name), "%s", s);
        return 0;
}

static int parse_annotations(json_object *annotations, bool create, OciState *st, char *err,
                             size_t errlen) {
        if (!json_object_is_type(annotations, json_type_object))
                return errorf(err, errlen, -EINVAL, "state JSON: \"annotations\" is %s, not an object",
                            json_type_word(annotations));

        json_object_object_foreach(annotations, key, value) {
                const char *name = key + strlen(ANNOTATION_NAMESPACE), *s;
                bool fail_open, owner, region;
                unsigned bit = 0;
                uint64_t v;
                char q[300];
                int r;

                if (strncmp(key, ANNOTATION_NAMESPACE, strlen(ANNOTATION_NAMESPACE)) != 0)
                        continue; /* someone else's */
                fail_open = strcmp(name, "fail-open") == 0;
                owner = strcmp(name, "owner") == 0;
                /* The poststop hook removes what create made: limits and
                 * owner no longer matter, and were checked at create. */
                if (!create && !fail_open)
                        continue;
                if (!fail_open && !owner)
                        bit = limit_by_name(name, strlen(name));
                /* org.memacct.<region>.<limit>: a device region's (its
                 * value is judged below, once it is known to be a string). */
                region = !fail_open && !owner && bit == 0 && oci_region_key(name);
                if (!fail_open && !owner && bit == 0 && !region) {
                        /* A typo in a limit must not pass silently. */
                        quote_for_message(key, strlen(key), q, sizeof(q));
                        return errorf(err, errlen, -EINVAL,
                                    "annotation %s: unknown (known: org.memacct.max, "
                                    "org.memacct.high, org.memacct.low, org.memacct.min, "
                                    "org.memacct.REGION.max (.high .low .min), "
                                    "org.memacct.owner, org.memacct.fail-open)",
                                    q);
                }
                if (!json_object_is_type(value, json_type_string))
                        return errorf(err, errlen, -EINVAL, "annotation %s: %s, not a string%s", key,
                                    json_type_word(value), bit || region ? " of a size" : "");
                s = json_object_get_string(value);
                quote_for_message(s, (size_t) json_object_get_string_len(value), q, sizeof(q));
                /* An embedded NUL would hide the rest from the parsers. */
                if (strlen(s) != (size_t) json_object_get_string_len(value))
                        return errorf(err, errlen, -EINVAL, "annotation %s: invalid value '%s'", key, q);
                if (region) {
                        r = oci_region_annotation(key, name, s, q, &st->regions, err, errlen);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (fail_open || owner) {
                        r = (fail_open ? parse_fail_open : parse_owner)(key, s, q, st, err, errlen);
                        if (r < 0)
                                return r;
                        continue;
                }
                r = parse_size(s, &v);
                if (r == -ERANGE)
                        return errorf(err, errlen, -EINVAL, "annotation %s: size '%s' does not fit in 64 bits",
                                    key, q);
                if (r < 0)
                        return errorf(err, errlen, -EINVAL,
                                    "annotation %s: invalid size '%s' (bytes with an optional "
                                    "K/M/G/T suffix, or max)",
                                    key, q);
                limits_set(&st->limits, bit, v);
        }
        return 0;
}

/* @buf as one JSON object, with nothing but white space after it, into @ret. */
static int parse_json_object(const char *buf, size_t len, json_object **ret, char *err,
                             size_t errlen) {
        _cleanup_(json_tokener_freep) json_tokener *tok = NULL;
        _cleanup_(json_object_putp) json_object *root = NULL;
        enum json_tokener_error jerr;

        if (len > OCI_STATE_MAX)
                return errorf(err, errlen, -EINVAL, "state JSON: larger than %d bytes", OCI_STATE_MAX), -E2BIG;
        if (len == 0)
                return errorf(err, errlen, -EINVAL, "state JSON: empty input (expected the container's state "
                                         "on stdin)");
        tok = json_tokener_new_ex(OCI_STATE_DEPTH);
        if (!tok)
                return -ENOMEM;
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
        /* json-c takes an int length: len is at most OCI_STATE_MAX. */
        root = json_tokener_parse_ex(tok, buf, (int) len);
        jerr = json_tokener_get_error(tok);
        if (!root && jerr == json_tokener_continue)
                return errorf(err, errlen, -EINVAL, "state JSON: truncated (input ends inside a value)");
        if (jerr == json_tokener_error_depth)
                return errorf(err, errlen, -EINVAL, "state JSON: nested deeper than %d levels",
                            OCI_STATE_DEPTH);
        if (!root || jerr != json_tokener_success)
                return errorf(err, errlen, -EINVAL, "state JSON: not JSON: %s at byte %zu",
                            json_tokener_error_desc(jerr), json_tokener_get_parse_end(tok));
        for (size_t end = json_tokener_get_parse_end(tok); end < len; end++)
                if (!strchr(" \t\r\n", buf[end]))
                        return errorf(err, errlen, -EINVAL, "state JSON: trailing data at byte %zu", end);
        if (!json_object_is_type(root, json_type_object))
                return errorf(err, errlen, -EINVAL, "state JSON: %s, not an object", json_type_word(root));
        *ret = TAKE_PTR(root);
        return 0;
}

/* "id": a string that is one valid group name. */
static int parse_id(json_object *root, OciState *st, char *err, size_t errlen) {
        const char *problem;
        json_object *o;
        char q[300];
        size_t n;

        if (!json_object_object_get_ex(root, "id", &o))
                return errorf(err, errlen, -EINVAL, "state JSON: \"id\" missing");
        if (!json_object_is_type(o, json_type_string))
                return errorf(err, errlen, -EINVAL, "state JSON: \"id\" is %s, not a string",
                            json_type_word(o));
        n = (size_t) json_object_get_string_len(o);
        problem = name_problem(json_object_get_string(o), n);
        if (problem) {
                quote_for_message(json_object_get_string(o), n, q, sizeof(q));
                return errorf(err, errlen, -EINVAL, "state JSON: \"id\" '%s' is not a valid group name: %s",
                            q, problem);
        }
        memcpy(st->id, json_object_get_string(o), n);
        st->id[n] = '\0';
        return 0;
}

/* "bundle": optional; a path too long to be one is not used. */
static int parse_bundle(json_object *root, OciState *st, char *err, size_t errlen) {
        json_object *o;
        size_t n;

        if (!json_object_object_get_ex(root, "bundle", &o) || json_object_is_type(o, json_type_null))
                return 0;
        if (!json_object_is_type(o, json_type_string))
                return errorf(err, errlen, -EINVAL, "state JSON: \"bundle\" is %s, not a string", json_type_word(o));
        n = (size_t) json_object_get_string_len(o);
        if (n < sizeof(st->bundle) && strlen(json_object_get_string(o)) == n)
                memcpy(st->bundle, json_object_get_string(o), n + 1);
        return 0;
}

/* "pid": the container's process, required by the createRuntime hook. */
static int parse_pid(json_object *root, OciState *st, char *err, size_t errlen) {
        json_object *o;
        int64_t pid;

        if (!json_object_object_get_ex(root, "pid", &o))
                return errorf(err, errlen, -EINVAL,
                            "state JSON: \"pid\" missing (the createRuntime hook needs "
                            "the container's process)");
        if (!json_object_is_type(o, json_type_int))
                return errorf(err, errlen, -EINVAL, "state JSON: \"pid\" is %s, not an integer",
                            json_type_word(o));
        /* json-c clamps what overflows 64 bits to INT64_MIN/MAX: out of
         * range either way. */
        pid = json_object_get_int64(o);
        if (pid <= 0 || pid > INT32_MAX)
                return errorf(err, errlen, -EINVAL, "state JSON: \"pid\" %" PRId64 " is not a positive pid",
                            pid);
        st->pid = (pid_t) pid;
        return 0;
}

int oci_state_parse(const char *buf, size_t len, bool create, OciState *ret, char *err,
                    size_t errlen) {
        _cleanup_(json_object_putp) json_object *root = NULL;
        json_object *o;
        OciState st = { .owner = MEMACCT_NO_OWNER };
        int r;

        r = parse_json_object(buf, len, &root, err, errlen);
        if (r < 0)
                return r;
        if (json_object_object_get_ex(root, "ociVersion", &o) &&
            !json_object_is_type(o, json_type_string))
                return errorf(err, errlen, -EINVAL, "state JSON: \"ociVersion\" is %s, not a string",
                            json_type_word(o));
        r = parse_id(root, &st, err, errlen);
        if (r < 0)
                return r;
        r = parse_bundle(root, &st, err, errlen);
        if (r < 0)
                return r;
        if (create) {
                r = parse_pid(root, &st, err, errlen);
                if (r < 0)
                        return r;
        }
        if (json_object_object_get_ex(root, "annotations", &o) &&
            !json_object_is_type(o, json_type_null)) {
                r = parse_annotations(o, create, &st, err, errlen);
                if (r < 0)
                        return r;
        }
        *ret = st;
        return 0;
}

/* Read all of @in, refusing more than OCI_STATE_MAX bytes. */
static int read_state(FILE *in, char **ret, size_t *ret_len) {
        _cleanup_free_ char *buf = malloc(OCI_STATE_MAX + 1);
        size_t len = 0, k;

        if (!buf)
                return -ENOMEM;
        while (len <= OCI_STATE_MAX) {
                k = fread(buf + len, 1, OCI_STATE_MAX + 1 - len, in);
                if (k == 0)
                        break;
                len += k;
        }
        if (ferror(in))
                return -EIO;
        if (len > OCI_STATE_MAX)
                return -E2BIG;
        *ret = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}

static const char *cause(memacct *m, int r) {
        const char *msg = memacct_last_error(m);

        return msg ? msg : strerror(-r);
}

static int failed(memacct *m, const char *what, const char *path, int r) {
        fprintf(stderr, "memacctctl: oci-hook: %s %s: %s\n", what, path,
                message_past_path(cause(m, r), path));
        return EXIT_FAILURE;
}

/* Create each missing group along @prefix, without limits. */
static int ensure_prefix(memacct *m, const char *prefix) {
        char path[2049];
        size_t n = strlen(prefix);

        if (n <= 1)
                return 0;
        for (size_t i = 1; i <= n; i++) {
                int r;

                if (prefix[i] != '/' && prefix[i] != '\0')
                        continue;
                memcpy(path, prefix, i);
                path[i] = '\0';
                r = memacct_create_group(m, path, NULL, MEMACCT_NO_OWNER);
                if (r < 0 && r != -EEXIST)
                        return failed(m, "create of the prefix group", path, r);
        }
        return 0;
}

/* The confining rule "@st's pid's cgroup -> @path", once vouched for. Return: 0 or the exit status, said. */
static int add_rule(memacct *m, const OciState *st, const char *path) {
        char cg[4096], err[512];
        int r;

        r = oci_proc_memory_cgroup(st->pid, cg, sizeof(cg));
        if (r < 0) {
                fprintf(stderr, "memacctctl: oci-hook: pid %d: cannot read its memory cgroup: %s\n",
                        (int) st->pid, strerror(-r));
                return EXIT_FAILURE;
        }
        if (oci_vouch(st->pid, st->bundle, cg, err, sizeof(err)) < 0) {
                fprintf(stderr, "memacctctl: oci-hook: no placement rule: %s\n", err);
                return EXIT_FAILURE;
        }
        r = memacct_rule_add_flags(m, cg, path, MEMACCT_RULE_CONFINE);
        if (r < 0)
                return failed(m, "placement rule to", path, r);
        return 0;
}

/* Every rule naming @path goes (a poststop has no pid to read a cgroup of). */
static int remove_rules(memacct *m, const char *path) {
        memacct_rules *rules = NULL;
        int r, k = 0;

        r = memacct_rule_list(m, &rules);
        if (r < 0)
                return failed(m, "list of the placement rules for", path, r);
        for (size_t i = 0; i < memacct_rules_size(rules); i++) {
                const memacct_rule *ru = memacct_rules_get(rules, i);

                if (ru->mirror || strcmp(ru->group, path) != 0)
                        continue; /* a mirror goes with its group, not as a rule */
                r = memacct_rule_remove(m, ru->cgroup);
                if (r < 0 && r != -ENOENT)
                        k = failed(m, "removal of the placement rule to", path, r);
        }
        memacct_rules_free(rules);
        return k;
}

static int hook_create(memacct *m, const OciState *st, const char *prefix, const char *path) {
        _cleanup_free_ OciRegionSettings *regions = malloc(sizeof(OciRegionSettings));
        unsigned sessions = 0;
        int r;

        if (!regions) {
                fputs("memacctctl: out of memory\n", stderr);
                return EXIT_FAILURE;
        }
        /* The device limits' regions before anything is made. */
        r = oci_region_limits_resolve(m, path, &st->regions, regions);
        if (r != 0)
                return r;
        r = ensure_prefix(m, prefix);
        if (r != 0)
                return r;
        r = memacct_create_group(m, path, st->limits.set ? &st->limits : NULL, st->owner);
        if (r == -EEXIST) {
                /* Not ours: a running container of that id, or one whose
                 * poststop hook never ran. Leave it alone. */
                fprintf(stderr,
                        "memacctctl: oci-hook: create %s: the group exists already (another "
                        "container of id '%s', or a leftover: 'memacctctl remove %s')\n",
                        path, st->id, path);
                return EXIT_FAILURE;
        }
        if (r < 0)
                return failed(m, "create", path, r);
        /* The device limits before the rule and the move: the container's
         * first allocation must already meet them. */
        r = oci_region_limits_apply(m, path, regions);
        if (r == 0)
                r = add_rule(m, st, path);
        if (r != 0) {
                /* A failed create leaves no group behind. */
                (void) memacct_remove_group(m, path);
                return r;
        }

        r = memacct_move(m, st->pid, path, &sessions);
        if (r == -ENOENT) {
                _cleanup_(memacct_group_info_freep) memacct_group_info *g = NULL;

                /* -ENOENT is "no such group" or "no such client": the
                 * group being there tells them apart. */
                if (memacct_get_group(m, path, NULL, 0, &g) >= 0) {
                        fprintf(stderr,
                                "memacctctl: oci-hook: pid %d has no memacctd session yet: %s is "
                                "ready, its clients attach to it (or are moved there later)\n",
                                (int) st->pid, path);
                        printf("oci-hook: created %s; pid %d: no session to move\n", path,
                               (int) st->pid);
                        return 0;
                }
        }
        if (r < 0) {
                int k = failed(m, "move of the container's pid to", path, r);
                int q;

                (void) remove_rules(m, path);
                q = memacct_remove_group(m, path);

                if (q < 0 && q != -ENOENT)
                        fprintf(stderr, "memacctctl: oci-hook: cannot remove %s again: %s\n", path,
                                cause(m, q));
                return k;
        }
        printf("oci-hook: created %s; pid %d: %u session%s moved\n", path, (int) st->pid, sessions,
               sessions == 1 ? "" : "s");
        return 0;
}

static int hook_delete(memacct *m, const char *path) {
        int r;

        /* The rules first: no new process may be placed in a group going away. */
        r = remove_rules(m, path);
        if (r != 0)
                return r;

        /* The container's processes are gone, but the daemon may not have
         * seen their sockets close yet: give their sessions a moment to end
         * (about 2 s) before calling the group busy. */
        for (unsigned attempt = 0;; attempt++) {
                _cleanup_(memacct_group_info_freep) memacct_group_info *g = NULL;

                r = memacct_remove_group(m, path);
                if (r != -EBUSY || attempt >= 40)
                        break;
                if (memacct_get_group(m, path, NULL, 0, &g) < 0 || g->nr_children > 0)
                        break;
                usleep(50 * 1000);
        }
        if (r == -ENOENT) {
                fprintf(stderr, "memacctctl: oci-hook: %s is already gone\n", path);
                return 0;
        }
        if (r < 0)
                return failed(m, "remove", path, r);
        printf("oci-hook: removed %s\n", path);
        return 0;
}

/*
 * org.memacct.owner into a uid in @st. Only root may delegate a group (the
 * daemon refuses anyone else too, but less clearly): the hook of a rootless
 * runtime runs as that user and is told so here.
 * Return: 0 or the exit status, said.
 */
static int resolve_owner(OciState *st) {
        struct passwd pw, *res = NULL;
        char buf[4096];
        int r;

        if (st->owner == MEMACCT_NO_OWNER && !st->owner_name[0])
                return 0;
        if (geteuid() != 0) {
                fprintf(stderr,
                        "memacctctl: oci-hook: annotation " ANNOTATION_NAMESPACE "owner: only a "
                        "hook running as root may delegate a group (this one runs as uid %u)\n",
                        (unsigned) geteuid());
                return EXIT_FAILURE;
        }
        if (!st->owner_name[0])
                return 0;
        r = getpwnam_r(st->owner_name, &pw, buf, sizeof(buf), &res);
        if (r != 0 || !res) {
                fprintf(stderr, "memacctctl: oci-hook: annotation " ANNOTATION_NAMESPACE
                                "owner: %s '%s'%s%s\n",
                        r ? "cannot look up the user" : "no user", st->owner_name,
                        r ? ": " : "", r ? strerror(r) : "");
                return EXIT_FAILURE;
        }
        if (res->pw_uid == MEMACCT_NO_OWNER) {
                fprintf(stderr, "memacctctl: oci-hook: annotation " ANNOTATION_NAMESPACE
                                "owner: user '%s' has no valid uid\n", st->owner_name);
                return EXIT_FAILURE;
        }
        st->owner = res->pw_uid;
        return 0;
}

static int usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage(const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = usage_errorv("oci-hook: ", fmt, ap);
        va_end(ap);
        return r;
}

int oci_hook_main(memacct **mp, int argc, char **argv, const char *prefix, FILE *in,
                  int (*connect)(memacct **ret)) {
        _cleanup_free_ char *buf = NULL;
        char err[512], path[2048 + 1 + 256];
        OciState st;
        bool create;
        size_t len;
        int r;

        if (argc < 2)
                return usage("missing action (create or delete)");
        if (argc > 2)
                return usage("too many arguments");
        if (strcmp(argv[1], "create") == 0)
                create = true;
        else if (strcmp(argv[1], "delete") == 0)
                create = false;
        else
                return usage("unknown action '%s' (create or delete)", argv[1]);
        if (!prefix)
                prefix = OCI_DEFAULT_PREFIX;
        if (!oci_prefix_valid(prefix))
                return usage("--prefix '%s': not an absolute group path", prefix);

        r = read_state(in, &buf, &len);
        if (r == -E2BIG) {
                fprintf(stderr, "memacctctl: oci-hook: state JSON: larger than %d bytes\n",
                        OCI_STATE_MAX);
                return EXIT_FAILURE;
        }
        if (r < 0) {
                fprintf(stderr, "memacctctl: oci-hook: cannot read the state from stdin: %s\n",
                        strerror(-r));
                return EXIT_FAILURE;
        }
        r = oci_state_parse(buf, len, create, &st, err, sizeof(err));
        if (r == -ENOMEM) {
                fputs("memacctctl: out of memory\n", stderr);
                return EXIT_FAILURE;
        }
        if (r < 0) {
                fprintf(stderr, "memacctctl: oci-hook: %s\n", err);
                return EXIT_FAILURE;
        }
        snprintf(path, sizeof(path), "%s/%s", strcmp(prefix, "/") == 0 ? "" : prefix, st.id);
        if (create) {
                r = resolve_owner(&st);
                if (r != 0)
                        return r;
        }

        r = connect(mp);
        if (r != 0 && st.fail_open) {
                /* connect() said why. The container runs unaccounted: the
                 * annotation chose that over not running. */
                fprintf(stderr,
                        "memacctctl: oci-hook: " ANNOTATION_NAMESPACE "fail-open=true: %s not %s%s\n",
                        path, create ? "created" : "removed",
                        create ? ", the container runs unaccounted" : "");
                return 0;
        }
        if (r != 0)
                return r;
        return create ? hook_create(*mp, &st, prefix, path) : hook_delete(*mp, path);
}
