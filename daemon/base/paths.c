/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Where memacctd puts things when nobody says: systemd's directories when
 * it runs as a service, the FHS places as root, the XDG base directories
 * (then the current directory) for a user.
 */

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "base/paths.h"

/* The first entry of a colon-separated list ($RUNTIME_DIRECTORY may hold several). */
static char *first_dir(const char *list) {
        size_t n = strcspn(list, ":");

        return n > 0 ? strndup(list, n) : NULL;
}

static const char *home_dir(void) {
        const char *e = getenv("HOME");
        struct passwd *pw;

        if (e && *e == '/')
                return e;
        pw = getpwuid(geteuid());
        return pw && pw->pw_dir && *pw->pw_dir == '/' ? pw->pw_dir : NULL;
}

int paths_default_socket(char **ret) {
        const char *e = getenv("RUNTIME_DIRECTORY");
        _cleanup_free_ char *dir = NULL;
        int r;

        if (e && (dir = first_dir(e)))
                r = asprintf(ret, "%s/memacctd.sock", dir);
        else if (geteuid() == 0)
                r = asprintf(ret, "/run/memacctd/memacctd.sock");
        else if ((e = getenv("XDG_RUNTIME_DIR")) && *e == '/')
                r = asprintf(ret, "%s/memacctd/memacctd.sock", e);
        else
                r = asprintf(ret, "memacctd.sock");
        return r < 0 ? -ENOMEM : 0;
}

int paths_default_state_dir(char **ret) {
        const char *e = getenv("STATE_DIRECTORY");
        _cleanup_free_ char *dir = NULL;
        int r;

        if (e && (dir = first_dir(e))) {
                *ret = TAKE_PTR(dir);
                return 0;
        }
        if (geteuid() == 0)
                r = asprintf(ret, "/var/lib/memacctd");
        else if ((e = getenv("XDG_STATE_HOME")) && *e == '/')
                r = asprintf(ret, "%s/memacctd", e);
        else if ((e = home_dir()))
                r = asprintf(ret, "%s/.local/state/memacctd", e);
        else
                return -ENOENT;
        return r < 0 ? -ENOMEM : 0;
}

int paths_default_config(char **ret) {
        const char *e = getenv("CONFIGURATION_DIRECTORY");
        _cleanup_free_ char *dir = NULL;
        int r;

        /* Started by systemd with ConfigurationDirectory=: its directory,
         * whatever the uid (the unit runs as its own user, not root). */
        if (e && (dir = first_dir(e)))
                r = asprintf(ret, "%s/memacctd.conf", dir);
        else if (geteuid() == 0)
                r = asprintf(ret, "/etc/memacctd/memacctd.conf");
        else if ((e = getenv("XDG_CONFIG_HOME")) && *e == '/')
                r = asprintf(ret, "%s/memacctd/memacctd.conf", e);
        else if ((e = home_dir()))
                r = asprintf(ret, "%s/.config/memacctd/memacctd.conf", e);
        else {
                *ret = NULL;
                return 0;
        }
        return r < 0 ? -ENOMEM : 0;
}
