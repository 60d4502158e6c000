/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memacctctl's options and its --help. Every option is accepted anywhere
 * on the line (getopt_long() permutes), and then checked against the
 * command: a command-specific option given to another command is a usage
 * error rather than silently ignored, so a typo never changes what a
 * command does.
 */

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "output.h"

CtlOptions arg;

/*
 * The commands, one block each: a line "  NAME ...", then its lines
 * indented further. --help prints them all, `help NAME` and `NAME --help`
 * the block of NAME (command_help()).
 */
static const char commands[] =
        "  create [-p] PATH [max=SIZE] [high=SIZE] [low=SIZE] [min=SIZE] [owner=USER]\n"
        "                                  -p: create the missing parents first\n"
        "  remove [-r [--force]] PATH      -r: the subtree, deepest first; refused where\n"
        "                                  kept charges or sessions remain (--force:\n"
        "                                  release the kept charges)\n"
        "  set PATH KEY=VALUE...           keys: max high low min (--force for max),\n"
        "                                  owner (a user name or uid); in a device\n"
        "                                  region: REGION.max=SIZE|N%, or as the kernel\n"
        "                                  writes it, dmem.max=\"REGION SIZE|N%\" (also\n"
        "                                  high low min)\n"
        "  show PATH [--reclaim-root PATH] [--exact] [-P KEY] [--region REGION]\n"
        "                                  -P KEY: that value alone (current, max,\n"
        "                                  events.max ...: the keys of --json show)\n"
        "  tree [PATH] [--region REGION]\n"
        "  charge PATH SIZE [--stat ITEM | --region REGION]\n"
        "                                  a kept charge (stays until uncharged)\n"
        "  uncharge PATH SIZE [--stat ITEM | --region REGION]\n"
        "  hold PATH SIZE [--stat ITEM | --region REGION] [--reclaimable]\n"
        "  reclaim PATH SIZE [--region REGION]   ask PATH's reclaimable sessions for SIZE\n"
        "                                  a session charge held until the command is\n"
        "                                  interrupted (SIGINT/SIGTERM), then released;\n"
        "                                  PATH auto: the mirror of our kernel cgroup\n"
        "  move PID PATH\n"
        "  client PID [--exact]\n"
        "  reset-peak PATH [--region REGION]\n"
        "  watch PATH [--region REGION|*]  print events under PATH as they happen\n"
        "  region add NAME [capacity=SIZE] | region remove NAME | region list\n"
        "                                  device memory regions (root registers them)\n"
        "  transfer FROM TO SIZE [--region REGION]\n"
        "                                  move a kept charge: TO is charged first,\n"
        "                                  then FROM released; a refusal changes nothing\n"
        "  evict-valuable LIMIT CANDIDATE [--region REGION] [--ignore-low]\n"
        "                                  may memory of CANDIDATE be evicted to make\n"
        "                                  room under LIMIT? yes, no or hit_low\n"
        "  info                            the daemon at a glance\n"
        "  sessions [PATH]                 who holds what: the sessions (at or below PATH)\n"
        "  import-cgroups [--from CGROUP] [--under PATH] [--reset-limits]\n"
        "                                  mirror the kernel's memory cgroups as groups\n"
        "  prune                           remove the mirrors of vanished kernel cgroups\n"
        "                                  (one line per group removed or kept, and why)\n"
        "  rule add [--confine] CGROUP GROUP | rule remove CGROUP | rule list\n"
        "                                  placement rules: CGROUP's processes attach to\n"
        "                                  GROUP (--confine: and act only inside it)\n"
        "  top [PATH] [-b] [-n N | -1] [-d SECONDS] [--depth N] [-s ORDER] [-r]\n"
        "      [--region REGION]\n"
        "                                  a live view of the subtree, as systemd-cgtop:\n"
        "                                  -d delay, -r raw bytes, --json with -b: one\n"
        "                                  JSON document each time (keys: m/c current,\n"
        "                                  k peak, p path, e events, h help, q quits)\n"
        "  oci-hook create|delete [--prefix PATH]\n"
        "                                  the OCI runtime hook: the state JSON on stdin;\n"
        "                                  the group PATH/<id> (default /containers)\n"
        "  cdi generate [--output FILE] [--interposer PATH] [--config PATH] [--socket PATH]\n"
        "                                  a CDI spec giving containers the CUDA\n"
        "                                  interposer: --device memacct.io/gpu=all\n"
        "                                  (default " "/etc/cdi/memacct.json; - for stdout)\n"
        "  run [--group PATH | --name NAME] [KEY=SIZE...] [REGION.KEY=SIZE...] [--region REGION]\n"
        "      [--interposer PATH] [--keep-group] -- CMD [ARG...]\n"
        "                                  CMD in a new group (/run.slice/NAME, or\n"
        "                                  /run.slice/run-PID-RANDOM), removed after it\n";

void options_help(void) {
        printf("memacctctl [--socket PATH | --bus[=ADDRESS]] [--user] [--json] COMMAND ...\n\n"
               "Drive memacctd, userspace hierarchical memory accounting.\n\n"
               "%s\n"
               "Options:\n"
               "  --socket PATH   the daemon's socket (default: $MEMACCT_SOCKET, else the\n"
               "                  system daemon's, " MEMACCT_SYSTEM_SOCKET ")\n"
               "  --bus[=ADDRESS] reach the daemon over D-Bus (org.memacct1) instead: the\n"
               "                  system bus (the user bus with --user); or ADDRESS:\n"
               "                  system, user, or a D-Bus address (unix:path=...)\n"
               "  --user          the user's own daemon, not the system's:\n"
               "                  $XDG_RUNTIME_DIR/memacctd/memacctd.sock, or the user bus\n"
               "  -f, --file FILE run the commands of FILE (- for stdin), one a line, over\n"
               "                  one connection: create, remove, set, charge, uncharge,\n"
               "                  reset-peak, move, rule, show, tree, client, info, sessions\n"
               "  --json          print JSON\n"
               "  -h, --human-readable\n"
               "                  sizes in show, tree and client as 1.5K, 20M (1024-based,\n"
               "                  rounded up, as du -h); JSON stays in bytes\n"
               "  --help          show this help (so does -h without a command)\n"
               "  --version       show the version\n\n"
               "SIZE: bytes with an optional K/M/G/T/P/E suffix (1024-based), or max.\n"
               "ITEM: anon file shmem kernel sock swap device other.\n", commands);
}

int command_help(const char *name) {
        size_t n = strlen(name);
        bool in = false, found = false;

        for (const char *line = commands; *line;) {
                const char *end = strchrnul(line, '\n');

                /* A block starts at two spaces and a name; its own lines are indented further. */
                if (line[0] == ' ' && line[1] == ' ' && line[2] != ' ')
                        in = strncmp(line + 2, name, n) == 0 && (line[2 + n] == ' ' || line + 2 + n == end);
                if (in) {
                        printf("%.*s\n", (int) (end - line), line);
                        found = true;
                }
                line = *end ? end + 1 : end;
        }
        if (!found)
                return usage_error("help: unknown command '%s'", name);
        puts("\nSIZE: bytes with an optional K/M/G/T/P/E suffix (1024-based), or max; memacctctl(1) has the rest.");
        return 0;
}

enum {
        ARG_SOCKET = 0x100,
        ARG_HELP,
        ARG_BUS,
        ARG_JSON,
        ARG_VERSION,
        ARG_FORCE,
        ARG_EXACT,
        ARG_STAT,
        ARG_RECLAIM_ROOT,
        ARG_PREFIX,
        ARG_FROM,
        ARG_UNDER,
        ARG_RESET_LIMITS,
        ARG_CONFINE,
        ARG_DEPTH,
        ARG_FILE,
        ARG_PARENTS,
        ARG_RECURSIVE,
        ARG_PROPERTY,
        ARG_GROUP,
        ARG_NAME,
        ARG_KEEP_GROUP,
        ARG_RAW,
        ARG_USER,
        ARG_REGION,
        ARG_IGNORE_LOW,
        ARG_RECLAIMABLE,
        ARG_NO_WAIT,
        ARG_OUTPUT,
        ARG_INTERPOSER,
        ARG_CONFIG,
};

static const struct option options[] = {
        { "socket", required_argument, NULL, ARG_SOCKET },
        { "bus", optional_argument, NULL, ARG_BUS },
        { "json", no_argument, NULL, ARG_JSON },
        { "help", no_argument, NULL, ARG_HELP },
        { "human-readable", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, ARG_VERSION },
        { "force", no_argument, NULL, ARG_FORCE },
        { "exact", no_argument, NULL, ARG_EXACT },
        { "reclaimable", no_argument, NULL, ARG_RECLAIMABLE },
        { "no-wait", no_argument, NULL, ARG_NO_WAIT },
        { "stat", required_argument, NULL, ARG_STAT },
        { "reclaim-root", required_argument, NULL, ARG_RECLAIM_ROOT },
        { "prefix", required_argument, NULL, ARG_PREFIX },
        { "from", required_argument, NULL, ARG_FROM },
        { "under", required_argument, NULL, ARG_UNDER },
        { "reset-limits", no_argument, NULL, ARG_RESET_LIMITS },
        { "confine", no_argument, NULL, ARG_CONFINE },
        { "parents", no_argument, NULL, 'p' },
        { "recursive", no_argument, NULL, 'r' },
        { "property", required_argument, NULL, 'P' },
        { "file", required_argument, NULL, 'f' },
        { "group", required_argument, NULL, ARG_GROUP },
        { "name", required_argument, NULL, ARG_NAME },
        { "keep-group", no_argument, NULL, ARG_KEEP_GROUP },
        { "order", required_argument, NULL, 's' },
        { "depth", required_argument, NULL, ARG_DEPTH },
        { "delay", required_argument, NULL, 'd' },
        { "interval", required_argument, NULL, 'i' },
        { "iterations", required_argument, NULL, 'n' },
        { "batch", no_argument, NULL, 'b' },
        { "raw", no_argument, NULL, ARG_RAW },
        { "user", no_argument, NULL, ARG_USER },
        { "region", required_argument, NULL, ARG_REGION },
        { "ignore-low", no_argument, NULL, ARG_IGNORE_LOW },
        { "output", required_argument, NULL, ARG_OUTPUT },
        { "interposer", required_argument, NULL, ARG_INTERPOSER },
        { "config", required_argument, NULL, ARG_CONFIG },
        {}
};

/* The option table's switch, one case per option (a documented table). */
int options_parse(int argc, char **argv, int *ret_first) {
        int c;

        /* Our own messages, in our words: a leading ':' in the option string
         * tells a missing argument (':') from an unknown option ('?'). */
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":hs:d:i:n:bprP:1f:", options, NULL)) >= 0) {
                switch (c) {
                case ARG_SOCKET:
                        arg.socket = optarg;
                        break;
                case ARG_BUS:
                        arg.bus = true;
                        arg.bus_address = optarg;
                        if (arg.bus_address && !*arg.bus_address)
                                return usage_error("--bus=: empty address");
                        break;
                case ARG_JSON:
                        arg.json = true;
                        break;
                case 'h':
                        arg.human = true;
                        break;
                case ARG_HELP:
                        arg.help = true;
                        break;
                case ARG_VERSION:
                        printf("memacctctl %s\n", MEMACCT_VERSION);
                        return 0;
                case ARG_FORCE:
                        arg.force = true;
                        break;
                case ARG_EXACT:
                        arg.exact = true;
                        break;
                case ARG_RECLAIMABLE:
                        arg.reclaimable = true;
                        break;
                case ARG_NO_WAIT:
                        arg.no_wait = true;
                        break;
                case ARG_STAT:
                        arg.stat = optarg;
                        break;
                case ARG_RECLAIM_ROOT:
                        arg.reclaim_root = optarg;
                        break;
                case ARG_PREFIX:
                        arg.prefix = optarg;
                        break;
                case ARG_FROM:
                        arg.from = optarg;
                        break;
                case ARG_UNDER:
                        arg.under = optarg;
                        break;
                case ARG_RESET_LIMITS:
                        arg.reset_limits = true;
                        break;
                case ARG_CONFINE:
                        arg.confine = true;
                        break;
                case 'p':
                        arg.parents = true;
                        break;
                case 'r':
                        arg.recursive = true;
                        break;
                case 'P':
                        arg.property = optarg;
                        break;
                case 'f':
                        arg.file = optarg;
                        break;
                case ARG_GROUP:
                        arg.group = optarg;
                        break;
                case ARG_NAME:
                        arg.name = optarg;
                        break;
                case ARG_KEEP_GROUP:
                        arg.keep_group = true;
                        break;
                case 's':
                        arg.top_order = optarg;
                        break;
                /* top as systemd-cgtop: -d is the delay, --depth the levels. */
                case ARG_DEPTH:
                        arg.top_depth = optarg;
                        break;
                case 'd':
                case 'i':
                        arg.top_interval = optarg;
                        break;
                case '1':
                        arg.top_iterations = "1";
                        break;
                case 'n':
                        arg.top_iterations = optarg;
                        break;
                case 'b':
                        arg.batch = true;
                        break;
                case ARG_RAW:
                        arg.raw = true;
                        break;
                case ARG_USER:
                        arg.user = true;
                        break;
                case ARG_REGION:
                        arg.region = optarg;
                        break;
                case ARG_IGNORE_LOW:
                        arg.ignore_low = true;
                        break;
                case ARG_OUTPUT:
                        arg.output = optarg;
                        break;
                case ARG_INTERPOSER:
                        arg.interposer = optarg;
                        break;
                case ARG_CONFIG:
                        arg.config = optarg;
                        break;
                case ':':
                        /* optind is past the option, whether "--stat" or "-x". */
                        return usage_error("option '%s' requires an argument", argv[optind - 1]);
                default:
                        return usage_error("invalid option '%s'", argv[optind - 1]);
                }
        }
        /* --help with a command is that command's help, as systemctl CMD --help. */
        if (arg.help)
                return optind < argc ? command_help(argv[optind]) : (options_help(), 0);
        /* -h was help before it was --human-readable: alone it still is. */
        if (arg.human && optind >= argc) {
                options_help();
                return 0;
        }
        if (arg.socket && arg.bus)
                return usage_error("--socket and --bus exclude each other");
        /* --user says which daemon; --socket and --bus=ADDRESS say where
         * already: both at once is a contradiction, not a preference. */
        if (arg.user && arg.socket)
                return usage_error("--user and --socket exclude each other");
        if (arg.user && arg.bus_address)
                return usage_error("--user and --bus=ADDRESS exclude each other");
        if (arg.user && arg.bus)
                arg.bus_address = "user";
        *ret_first = optind;
        return -1;
}

static bool verb_in(const char *verb, const char *const *list) {
        for (; *list; list++)
                if (strcmp(verb, *list) == 0)
                        return true;
        return false;
}

bool options_allowed(const char *verb) {
        if (arg.force && strcmp(verb, "set") != 0 && !(arg.recursive && strcmp(verb, "remove") == 0))
                return usage_error("--force: only for set and remove -r"), false;
        if (arg.stat && strcmp(verb, "charge") != 0 && strcmp(verb, "uncharge") != 0 &&
            strcmp(verb, "hold") != 0)
                return usage_error("--stat: only for charge, uncharge and hold"), false;
        if (arg.reclaimable && strcmp(verb, "hold") != 0)
                return usage_error("--reclaimable: only for hold"), false;
        if (arg.no_wait && strcmp(verb, "charge") != 0 && strcmp(verb, "set") != 0)
                return usage_error("--no-wait: only for charge and set"), false;
        if (arg.exact && strcmp(verb, "show") != 0 && strcmp(verb, "client") != 0 &&
            strcmp(verb, "tree") != 0)
                return usage_error("--exact: only for show, tree and client"), false;
        if (arg.reclaim_root && strcmp(verb, "show") != 0 && strcmp(verb, "tree") != 0)
                return usage_error("--reclaim-root: only for show and tree"), false;
        if (arg.human && strcmp(verb, "show") != 0 && strcmp(verb, "tree") != 0 &&
            strcmp(verb, "client") != 0)
                return usage_error("-h: only for show, tree and client"), false;
        if (arg.prefix && strcmp(verb, "oci-hook") != 0)
                return usage_error("--prefix: only for oci-hook"), false;
        if ((arg.output || arg.config) && strcmp(verb, "cdi") != 0)
                return usage_error("--output and --config: only for cdi generate"), false;
        if (arg.interposer && strcmp(verb, "cdi") != 0 && strcmp(verb, "run") != 0)
                return usage_error("--interposer: only for cdi generate and run"), false;
        if ((arg.from || arg.under || arg.reset_limits) && strcmp(verb, "import-cgroups") != 0)
                return usage_error("--from, --under and --reset-limits: only for import-cgroups"), false;
        if (arg.parents && strcmp(verb, "create") != 0)
                return usage_error("-p: only for create"), false;
        /* -r is --recursive for remove, --raw for top (as systemd-cgtop's -r). */
        if (arg.recursive && strcmp(verb, "top") == 0) {
                arg.recursive = false;
                arg.raw = true;
        }
        if (arg.recursive && strcmp(verb, "remove") != 0)
                return usage_error("-r: only for remove and top"), false;
        if (arg.property && strcmp(verb, "show") != 0)
                return usage_error("-P: only for show"), false;
        if (arg.confine && strcmp(verb, "rule") != 0)
                return usage_error("--confine: only for rule add"), false;
        if ((arg.group || arg.name || arg.keep_group) && strcmp(verb, "run") != 0)
                return usage_error("--group, --name and --keep-group: only for run"), false;
        if (arg.region && !verb_in(verb, (const char *const[]) { "charge", "uncharge", "hold", "reset-peak", "show",
                                                                  "tree", "top", "watch", "transfer",
                                                                  "evict-valuable", "reclaim", "run", NULL }))
                return usage_error("--region: only for charge, uncharge, hold, reset-peak, show, tree, top, "
                                   "watch, transfer, evict-valuable, reclaim and run"), false;
        if (arg.region && arg.stat)
                return usage_error("--stat and --region exclude each other: stat items are memory's"), false;
        if (arg.ignore_low && strcmp(verb, "evict-valuable") != 0)
                return usage_error("--ignore-low: only for evict-valuable"), false;
        if ((arg.top_order || arg.top_depth || arg.top_interval || arg.top_iterations ||
             arg.batch || arg.raw) && strcmp(verb, "top") != 0)
                return usage_error("-s, -d, -i, -n, -b and --raw: only for top"), false;
        return true;
}

int options_connect(memacct **ret) {
        if (arg.bus)
                return memacct_connect_bus(arg.bus_address, ret);
        if (arg.user)
                return memacct_connect_user(ret);
        return memacct_connect(arg.socket, ret);
}

int options_socket(char **ret) {
        if (arg.user)
                return memacct_user_socket(ret);
        if (arg.socket) {
                *ret = strdup(arg.socket);
                return *ret ? 0 : -ENOMEM;
        }
        return memacct_default_socket(ret);
}
