/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Default locations (see paths.c). Each returns 0 and a new string in
 * *ret, or -ENOMEM. */

/** paths_default_socket() - $RUNTIME_DIRECTORY, /run/memacctd as root,
 * $XDG_RUNTIME_DIR/memacctd, else ./memacctd.sock. */
int paths_default_socket(char **ret);

/** paths_default_state_dir() - $STATE_DIRECTORY, /var/lib/memacctd as
 * root, $XDG_STATE_HOME/memacctd or ~/.local/state/memacctd; -ENOENT when
 * there is no home directory. */
int paths_default_state_dir(char **ret);

/** paths_default_config() - memacctd.conf in $CONFIGURATION_DIRECTORY
 * (a service's), else /etc/memacctd/memacctd.conf as root, else under
 * $XDG_CONFIG_HOME or ~/.config; *ret NULL when there is no home. */
int paths_default_config(char **ret);
