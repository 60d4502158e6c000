/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The OCI hook's rule makes a cgroup a container's: every process in it
 * is confined to the container's group from then on, and placed there.
 * So the cgroup must be one the runtime vouches for, not merely "whatever
 * cgroup the pid in the state is in": a state naming pid 1, or the hook's
 * own process, would confine the host. The runtime starts the container's
 * process in a cgroup of its own before it runs createRuntime hooks, and
 * says which in the bundle's config.json (linux.cgroupsPath); each of
 * those facts is checked here, from the kernel's /proc and the bundle.
 *
 * cgroupsPath comes in two forms: a path ("/mycontainer", or relative to
 * the runtime's own cgroup), and systemd's "slice:prefix:name", which the
 * systemd cgroup driver turns into a unit "prefix-name.scope". Either is
 * matched against the end of the pid's cgroup, since the cgroup the hook
 * sees is the full path from the hierarchy's root.
 */

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "file-util.h"
#include "macro.h"
#include "output.h"
#include "oci-vouch.h"

/* A bundle's config.json is small; one larger than this is not read. */
#define CONFIG_JSON_MAX (4 * 1024 * 1024)

int oci_proc_memory_cgroup(pid_t pid, char *buf, size_t size) {
        char path[64], line[4096 + 256];
        bool found = false;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/cgroup", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return errno == ENOENT ? -ESRCH : -errno;
        while (fgets(line, sizeof(line), f)) {
                char *ctl = strchr(line, ':'), *p, *tok, *save = NULL;
                bool memory = false;

                if (!ctl || !(p = strchr(ctl + 1, ':')))
                        continue;
                *p++ = 0;
                *ctl++ = 0;
                p[strcspn(p, "\n")] = 0;
                for (tok = strtok_r(ctl, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
                        memory |= strcmp(tok, "memory") == 0;
                if (memory || (!found && strcmp(line, "0") == 0 && *ctl == 0)) {
                        snprintf(buf, size, "%s", p);
                        found = true;
                        if (memory)
                                break;
                }
        }
        fclose(f);
        return found ? 0 : -ENOENT;
}

/* The parent of @pid, from /proc/PID/stat (its fourth field, after the comm in parentheses). */
static pid_t parent_of(pid_t pid) {
        char path[64], buf[512], *close;
        int ppid = 0;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return 0;
        if (fgets(buf, sizeof(buf), f) && (close = strrchr(buf, ')')) && sscanf(close + 1, " %*c %d", &ppid) != 1)
                ppid = 0;
        fclose(f);
        return ppid;
}

/* Is @pid the hook itself or one of its ancestors? */
static bool is_own_tree(pid_t pid) {
        for (pid_t p = getpid(), n = 0; p > 0 && n < 4096; p = parent_of(p), n++)
                if (p == pid)
                        return true;
        return false;
}

static bool ends_with_component(const char *s, const char *tail) {
        size_t n = strlen(s), m = strlen(tail);

        if (m == 0 || m > n || strcmp(s + n - m, tail) != 0)
                return false;
        return m == n || tail[0] == '/' || s[n - m - 1] == '/';
}

/* linux.cgroupsPath of @bundle/config.json into @ret (size @size); "" when it names none. */
static int bundle_cgroups_path(const char *bundle, char *ret, size_t size) {
        _cleanup_(json_object_putp) json_object *root = NULL;
        _cleanup_free_ char *text = NULL;
        json_object *spec_linux, *o;
        char path[4096 + 32];
        size_t len;
        int r;

        ret[0] = 0;
        if ((size_t) snprintf(path, sizeof(path), "%s/config.json", bundle) >= sizeof(path))
                return -ENAMETOOLONG;
        r = read_file_at(AT_FDCWD, path, 0, CONFIG_JSON_MAX, &text, &len);
        if (r < 0)
                return r;
        root = json_tokener_parse(text);
        if (!root)
                return -EBADMSG;
        if (json_object_object_get_ex(root, "linux", &spec_linux) &&
            json_object_object_get_ex(spec_linux, "cgroupsPath", &o) && json_object_is_type(o, json_type_string))
                snprintf(ret, size, "%s", json_object_get_string(o));
        return 0;
}

/* Does @cgroup match the runtime's @want (either form of cgroupsPath)? */
static bool matches_cgroups_path(const char *cgroup, const char *want) {
        const char *first = strchr(want, ':');
        char unit[4096 + 16];

        if (!first)
                return ends_with_component(cgroup, want);
        /* "slice:prefix:name" -> "prefix-name.scope" */
        const char *second = strchr(first + 1, ':');

        if (!second)
                return false;
        snprintf(unit, sizeof(unit), "%.*s-%s.scope", (int) (second - first - 1), first + 1, second + 1);
        return ends_with_component(cgroup, unit);
}

int oci_vouch(pid_t pid, const char *bundle, const char *cgroup, char *err, size_t errlen) {
        char own[4096], want[4096];

        if (pid == 1)
                return errorf(err, errlen, -EPERM, "pid 1 is the host's init, not a container's process");
        if (is_own_tree(pid))
                return errorf(err, errlen, -EPERM, "pid %d is this hook or one of its ancestors, not a container's process",
                              (int) pid);
        if (strcmp(cgroup, "/") == 0)
                return errorf(err, errlen, -EPERM, "pid %d is in the root cgroup, not in a container's own", (int) pid);
        if (oci_proc_memory_cgroup(getpid(), own, sizeof(own)) == 0 && strcmp(own, cgroup) == 0)
                return errorf(err, errlen, -EPERM, "pid %d is in the hook's own cgroup %s, not in a container's own",
                              (int) pid, cgroup);
        if (bundle && bundle[0] && bundle_cgroups_path(bundle, want, sizeof(want)) >= 0 && want[0] &&
            !matches_cgroups_path(cgroup, want))
                return errorf(err, errlen, -EPERM, "pid %d is in %s, not in the bundle's cgroupsPath %s", (int) pid, cgroup,
                              want);
        return 0;
}
