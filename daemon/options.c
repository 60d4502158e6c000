/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The command line (options.h). A value is checked here as far as it can
 * be without the configuration file: a --metrics address must parse, a
 * --bus must name a bus, a --socket must fit sun_path.
 */

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "options.h"
#include "base/config.h"
#include "base/log.h"

static void help(void) {
        printf("Usage: memacctd [OPTIONS]\n\n"
               "Hierarchical memory accounting in userspace, served over a Unix socket.\n\n"
               "  -h --help             Show this help\n"
               "     --version          Show the version\n"
               "     --socket PATH      Listen on PATH (default: $RUNTIME_DIRECTORY/memacctd.sock;\n"
               "                        root: /run/memacctd/memacctd.sock; otherwise\n"
               "                        $XDG_RUNTIME_DIR/memacctd/memacctd.sock or ./memacctd.sock)\n"
               "     --workers N        Worker threads (default: one per CPU)\n"
               "     --config FILE      Read FILE (default: /etc/memacctd/memacctd.conf for root,\n"
               "                        else $XDG_CONFIG_HOME/memacctd/memacctd.conf, if present)\n"
               "     --state-dir DIR    Keep the saved state in DIR (default: $STATE_DIRECTORY;\n"
               "                        root: /var/lib/memacctd; otherwise\n"
               "                        $XDG_STATE_HOME/memacctd or ~/.local/state/memacctd)\n"
               "     --bus BUS          Serve org.memacct1 on BUS: system, user, none, or a D-Bus\n"
               "                        address (default: system when root under systemd,\n"
               "                        else none)\n"
               "     --metrics ADDRESS  Serve Prometheus metrics over HTTP on ADDRESS:PORT\n"
               "                        (e.g. 127.0.0.1:9464) or unix:PATH; '' for none\n"
               "     --check-config [FILE]\n"
               "                        Read FILE (default: --config, else the default file)\n"
               "                        as a start would, print what is wrong as FILE:LINE:\n"
               "                        and exit 1, or say it is good and exit 0\n"
               "     --bus-introspect PATH\n"
               "                        Print the introspection XML of object PATH ('list':\n"
               "                        the paths) and exit\n"
               "  -v --verbose          Log more (repeat for debug messages)\n\n"
               "Command-line options override the configuration file. SIGHUP reloads the file.\n"
               "Exit status: 0 after SIGTERM/SIGINT, 1 on errors, 2 on usage errors.\n");
}

static int parse_unsigned_arg(const char *s, unsigned max, unsigned *ret) {
        unsigned long v;
        char *end;

        if (!*s || *s < '0' || *s > '9')
                return -EINVAL;
        errno = 0;
        v = strtoul(s, &end, 10);
        if (errno != 0 || *end || v > max)
                return -ERANGE;
        *ret = (unsigned) v;
        return 0;
}

/* The option table's switch, one case per option. */
int options_parse(int argc, char *argv[], Args *args) {
        enum {
                ARG_VERSION = 0x100,
                ARG_SOCKET,
                ARG_WORKERS,
                ARG_CONFIG,
                ARG_STATE_DIR,
                ARG_BUS,
                ARG_BUS_INTROSPECT,
                ARG_METRICS,
                ARG_CHECK_CONFIG,
        };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "socket", required_argument, NULL, ARG_SOCKET },
                { "workers", required_argument, NULL, ARG_WORKERS },
                { "config", required_argument, NULL, ARG_CONFIG },
                { "state-dir", required_argument, NULL, ARG_STATE_DIR },
                { "verbose", no_argument, NULL, 'v' },
                { "bus", required_argument, NULL, ARG_BUS },
                { "bus-introspect", required_argument, NULL, ARG_BUS_INTROSPECT },
                { "metrics", required_argument, NULL, ARG_METRICS },
                { "check-config", no_argument, NULL, ARG_CHECK_CONFIG },
                {}
        };
        int c;

        while ((c = getopt_long(argc, argv, "hv", options, NULL)) >= 0) {
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("memacctd %s\n", MEMACCT_VERSION);
                        return 0;
                case ARG_SOCKET:
                        if (!*optarg || strlen(optarg) >= sizeof(((struct sockaddr_un *) NULL)->sun_path))
                                return log_error_errno(EINVAL, "--socket: empty or longer than %zu bytes",
                                                       sizeof(((struct sockaddr_un *) NULL)->sun_path) - 1);
                        args->socket_path = optarg;
                        break;
                case ARG_WORKERS:
                        if (parse_unsigned_arg(optarg, OPTIONS_WORKERS_MAX, &args->workers) < 0 || args->workers == 0)
                                return log_error_errno(EINVAL, "--workers: expected 1..%u, got '%s'", OPTIONS_WORKERS_MAX,
                                                       optarg);
                        break;
                case ARG_CONFIG:
                        args->config_path = optarg;
                        break;
                case ARG_STATE_DIR:
                        if (!*optarg)
                                return log_error_errno(EINVAL, "--state-dir: empty");
                        args->state_dir = optarg;
                        break;
                case ARG_BUS:
                        /* A D-Bus address always has a "transport:" prefix. */
                        if (strcmp(optarg, "system") != 0 && strcmp(optarg, "user") != 0 &&
                            strcmp(optarg, "none") != 0 && !strchr(optarg, ':'))
                                return log_error_errno(EINVAL, "--bus: expected system, user, none or a "
                                                       "D-Bus address (unix:path=...), got '%s'", optarg);
                        args->bus = optarg;
                        break;
                case ARG_BUS_INTROSPECT:
                        args->bus_introspect = optarg;
                        break;
                case ARG_METRICS:
                        if (*optarg && config_listen_parse(optarg, NULL) < 0)
                                return log_error_errno(EINVAL, "--metrics: expected ADDRESS:PORT (numeric, "
                                                       "IPv6 in brackets), unix:/PATH or '', got '%s'",
                                                       optarg);
                        args->metrics = optarg;
                        break;
                case ARG_CHECK_CONFIG:
                        args->check_config = true;
                        break;
                case 'v':
                        args->verbose++;
                        break;
                case '?':
                        return -EINVAL;
                default:
                        return log_error_errno(EINVAL, "Unhandled option %d", c);
                }
        }
        /* The one argument there is: --check-config's file. */
        if (args->check_config && optind < argc)
                args->check_file = argv[optind++];
        if (optind < argc)
                return log_error_errno(EINVAL, "Unexpected argument '%s'", argv[optind]);
        return 1;
}

/* The first directory of a systemd "$RUNTIME_DIRECTORY"-style list. */
