/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A CDI spec checked as podman 4.3's CDI library (container-device-
 * interface v0.5.2, pkg/cdi) reads one, so that `cdi generate` never
 * writes a spec podman would refuse, or read otherwise than meant:
 *
 * - it unmarshals strictly: a field it does not know is an error, so
 *   every object here has a closed set of fields;
 * - cdiVersion is one it knows (0.1.0 to 0.5.0);
 * - kind is VENDOR/CLASS, a vendor of letters, digits, '_', '-' and '.',
 *   a class without the dots, each starting with a letter and ending
 *   with a letter or a digit;
 * - each device has a name (letters, digits, '_', '-', '.', ':',
 *   starting and ending with a letter or a digit), unique, and edits that
 *   are not empty;
 * - env entries are NAME=VALUE with a NAME; mounts have both paths (here
 *   absolute too, which runc needs); hooks a known name and a path;
 *   device nodes a path.
 */

#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cdi.h"
#include "macro.h"
#include "output.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(json_tokener *, json_tokener_free);

static bool is_alpha(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_alnum(char c) {
        return is_alpha(c) || (c >= '0' && c <= '9');
}

/* CDI's names: @first a letter (or, for a device, a letter or a digit),
 * the last a letter or a digit, those between alphanumeric or in @extra. */
static bool name_ok(const char *s, size_t n, bool digit_first, const char *extra) {
        if (n == 0 || !(digit_first ? is_alnum(s[0]) : is_alpha(s[0])) || !is_alnum(s[n - 1]))
                return false;
        for (size_t i = 1; i + 1 < n; i++)
                if (!is_alnum(s[i]) && !strchr(extra, s[i]))
                        return false;
        return true;
}

/* An absent array is an empty one. */
static size_t alen(json_object *a) {
        return a ? json_object_array_length(a) : 0;
}

/* Every key of @o is one of @known (NULL-terminated). */
static int keys_known(json_object *o, const char *where, const char *const *known, char *err,
                      size_t errlen) {
        json_object_object_foreach(o, key, value) {
                const char *const *k;

                (void) value;
                for (k = known; *k && strcmp(*k, key) != 0; k++)
                        ;
                if (!*k)
                        return errorf(err, errlen, -EINVAL, "%s: unknown field \"%s\"", where, key);
        }
        return 0;
}

/* @o's @key as a string into @ret; NULL if absent and not @required. */
static int get_string(json_object *o, const char *where, const char *key, bool required,
                      const char **ret, char *err, size_t errlen) {
        json_object *v;

        *ret = NULL;
        if (!json_object_object_get_ex(o, key, &v)) {
                if (required)
                        return errorf(err, errlen, -EINVAL, "%s: \"%s\" missing", where, key);
                return 0;
        }
        if (!json_object_is_type(v, json_type_string))
                return errorf(err, errlen, -EINVAL, "%s: \"%s\" is not a string", where, key);
        *ret = json_object_get_string(v);
        return 0;
}

/* @o's @key: absent, or an array of objects (of strings with @strings). */
static int get_array(json_object *o, const char *where, const char *key, bool strings,
                     json_object **ret, char *err, size_t errlen) {
        *ret = NULL;
        if (!json_object_object_get_ex(o, key, ret))
                return 0;
        if (!json_object_is_type(*ret, json_type_array))
                return errorf(err, errlen, -EINVAL, "%s: \"%s\" is not an array", where, key);
        for (size_t i = 0; i < json_object_array_length(*ret); i++)
                if (!json_object_is_type(json_object_array_get_idx(*ret, i),
                                         strings ? json_type_string : json_type_object))
                        return errorf(err, errlen, -EINVAL, "%s: \"%s\"[%zu] is not %s", where, key, i,
                                    strings ? "a string" : "an object");
        return 0;
}

static int check_mount(json_object *m, const char *where, char *err, size_t errlen) {
        static const char *const known[] = { "hostPath", "containerPath", "options", "type", NULL };
        /* Set by get_string() when it succeeds; "" for gcc -O3, which cannot tell. */
        const char *host = "", *container = "", *type = NULL;
        json_object *options;
        int r;

        r = keys_known(m, where, known, err, errlen);
        if (r == 0)
                r = get_string(m, where, "hostPath", true, &host, err, errlen);
        if (r == 0)
                r = get_string(m, where, "containerPath", true, &container, err, errlen);
        if (r == 0)
                r = get_string(m, where, "type", false, &type, err, errlen);
        if (r == 0)
                r = get_array(m, where, "options", true, &options, err, errlen);
        if (r < 0)
                return r;
        if (host[0] != '/' || container[0] != '/')
                return errorf(err, errlen, -EINVAL, "%s: a path that is not absolute", where);
        return 0;
}

static int check_hook(json_object *h, const char *where, char *err, size_t errlen) {
        static const char *const known[] = { "hookName", "path", "args", "env", "timeout", NULL };
        static const char *const names[] = { "prestart", "createRuntime", "createContainer",
                                             "startContainer", "poststart", "poststop", NULL };
        const char *name = "", *path = "";
        const char *const *n;
        int r;

        r = keys_known(h, where, known, err, errlen);
        if (r == 0)
                r = get_string(h, where, "hookName", true, &name, err, errlen);
        if (r == 0)
                r = get_string(h, where, "path", true, &path, err, errlen);
        if (r < 0)
                return r;
        for (n = names; *n && strcmp(*n, name) != 0; n++)
                ;
        if (!*n || !*path)
                return errorf(err, errlen, -EINVAL, "%s: an unknown hook name or an empty path", where);
        return 0;
}

static int check_edits(json_object *e, const char *where, bool device, char *err, size_t errlen) {
        static const char *const known[] = { "env", "deviceNodes", "hooks", "mounts", NULL };
        json_object *env, *nodes, *hooks, *mounts;
        char w[256];
        int r;

        if (!json_object_is_type(e, json_type_object))
                return errorf(err, errlen, -EINVAL, "%s: not an object", where);
        r = keys_known(e, where, known, err, errlen);
        if (r == 0)
                r = get_array(e, where, "env", true, &env, err, errlen);
        if (r == 0)
                r = get_array(e, where, "deviceNodes", false, &nodes, err, errlen);
        if (r == 0)
                r = get_array(e, where, "hooks", false, &hooks, err, errlen);
        if (r == 0)
                r = get_array(e, where, "mounts", false, &mounts, err, errlen);
        if (r < 0)
                return r;
        if (device && alen(env) + alen(nodes) + alen(hooks) + alen(mounts) == 0)
                return errorf(err, errlen, -EINVAL, "%s: empty (a device must edit something)", where);
        for (size_t i = 0; i < alen(env); i++) {
                const char *s = json_object_get_string(json_object_array_get_idx(env, i));

                if (s[0] == '=' || !strchr(s, '='))
                        return errorf(err, errlen, -EINVAL, "%s: env[%zu] is not NAME=VALUE", where, i);
        }
        for (size_t i = 0; i < alen(nodes); i++) {
                const char *path = NULL;

                snprintf(w, sizeof(w), "%s: deviceNodes[%zu]", where, i);
                r = get_string(json_object_array_get_idx(nodes, i), w, "path", true, &path, err, errlen);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < alen(hooks); i++) {
                snprintf(w, sizeof(w), "%s: hooks[%zu]", where, i);
                r = check_hook(json_object_array_get_idx(hooks, i), w, err, errlen);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < alen(mounts); i++) {
                snprintf(w, sizeof(w), "%s: mounts[%zu]", where, i);
                r = check_mount(json_object_array_get_idx(mounts, i), w, err, errlen);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int check_devices(json_object *devices, char *err, size_t errlen) {
        static const char *const known[] = { "name", "containerEdits", NULL };
        size_t n = json_object_array_length(devices);
        char w[128];
        int r;

        if (n == 0)
                return errorf(err, errlen, -EINVAL, "\"devices\": empty");
        for (size_t i = 0; i < n; i++) {
                json_object *d = json_object_array_get_idx(devices, i), *edits;
                const char *name = "";

                snprintf(w, sizeof(w), "devices[%zu]", i);
                r = keys_known(d, w, known, err, errlen);
                if (r == 0)
                        r = get_string(d, w, "name", true, &name, err, errlen);
                if (r < 0)
                        return r;
                if (!name_ok(name, strlen(name), true, "_-.:"))
                        return errorf(err, errlen, -EINVAL, "%s: invalid name '%s'", w, name);
                for (size_t k = 0; k < i; k++) {
                        json_object *o;

                        json_object_object_get_ex(json_object_array_get_idx(devices, k), "name", &o);
                        if (strcmp(json_object_get_string(o), name) == 0)
                                return errorf(err, errlen, -EINVAL, "%s: a second device '%s'", w, name);
                }
                if (!json_object_object_get_ex(d, "containerEdits", &edits))
                        return errorf(err, errlen, -EINVAL, "%s: \"containerEdits\" missing", w);
                snprintf(w, sizeof(w), "devices[%zu].containerEdits", i);
                r = check_edits(edits, w, true, err, errlen);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int check_spec(json_object *root, char *err, size_t errlen) {
        static const char *const known[] = { "cdiVersion", "kind", "devices", "containerEdits", NULL };
        static const char *const versions[] = { "0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.5.0", NULL };
        const char *version = "", *kind = "", *slash;
        const char *const *v;
        json_object *devices, *edits;
        int r;

        if (!json_object_is_type(root, json_type_object))
                return errorf(err, errlen, -EINVAL, "not an object");
        r = keys_known(root, "the spec", known, err, errlen);
        if (r == 0)
                r = get_string(root, "the spec", "cdiVersion", true, &version, err, errlen);
        if (r == 0)
                r = get_string(root, "the spec", "kind", true, &kind, err, errlen);
        if (r < 0)
                return r;
        for (v = versions; *v && strcmp(*v, version) != 0; v++)
                ;
        if (!*v)
                return errorf(err, errlen, -EINVAL, "cdiVersion '%s': not one podman's CDI library reads", version);
        slash = strchr(kind, '/');
        if (!slash || !name_ok(kind, (size_t) (slash - kind), false, "_-.") ||
            !name_ok(slash + 1, strlen(slash + 1), false, "_-"))
                return errorf(err, errlen, -EINVAL, "kind '%s': not VENDOR/CLASS", kind);
        if (!json_object_object_get_ex(root, "devices", &devices) ||
            !json_object_is_type(devices, json_type_array))
                return errorf(err, errlen, -EINVAL, "\"devices\": missing or not an array");
        r = check_devices(devices, err, errlen);
        if (r < 0)
                return r;
        if (json_object_object_get_ex(root, "containerEdits", &edits))
                return check_edits(edits, "containerEdits", false, err, errlen);
        return 0;
}

int cdi_spec_validate(const char *text, size_t len, char *err, size_t errlen) {
        _cleanup_(json_tokener_freep) json_tokener *tok = json_tokener_new();
        _cleanup_(json_object_putp) json_object *root = NULL;

        if (!tok)
                return -ENOMEM;
        if (len > INT32_MAX)
                return errorf(err, errlen, -EINVAL, "larger than 2 GiB");
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
        root = json_tokener_parse_ex(tok, text, (int) len);
        if (!root || json_tokener_get_error(tok) != json_tokener_success)
                return errorf(err, errlen, -EINVAL, "not JSON: %s",
                            json_tokener_error_desc(json_tokener_get_error(tok)));
        for (size_t end = json_tokener_get_parse_end(tok); end < len; end++)
                if (!strchr(" \t\r\n", text[end]))
                        return errorf(err, errlen, -EINVAL, "trailing data at byte %zu", end);
        return check_spec(root, err, errlen);
}
