/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memacctctl run: create a transient group, run a command with the group
 * named in its environment (libmemacct attaches a session that does not
 * attach itself to $MEMACCT_GROUP), forward the signals a shell or a
 * supervisor sends, wait, and remove the group once its last session has
 * ended.
 *
 * Invariants: the group is removed only if this run created it, and only
 * when no session remains in it (the daemon refuses to remove a group
 * with sessions, so a child's child that still charges keeps it: it is
 * left, with a note). Signals to be forwarded are blocked from before the
 * fork until the child's pid is known, so none is lost or sent to pid 0.
 * The group is created transient (but with --keep-group), so the daemon
 * removes it when this process's connection closes, a run killed with
 * SIGKILL included, once no session or child group is left in it.
 *
 * While the command runs, the connection is checked every RUN_WATCH_MSEC:
 * when the daemon restarted (or crashed), the group was restored without
 * its creator, and run reconnects with backoff and claims it back (a
 * transient create of the same path) within RUN_RECLAIM_MSEC, the grace
 * period the daemon gives it. Waiting for the command is a sigtimedwait()
 * on SIGCHLD, so its exit ends the wait at once whatever the watch does.
 */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "limit-names.h"
#include "macro.h"
#include "options.h"
#include "output.h"
#include "parse-size.h"
#include "regions.h"
#include "run-cgroup.h"
#include "run.h"

/* The signals passed on to the command, as systemd-run --scope and
 * env-style wrappers pass them. */
static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };

/* The child, written before the signals are unblocked, read by the
 * handler. */
static volatile sig_atomic_t child_pid;

static void forward(int sig, siginfo_t *si, void *ucontext) {
        int saved = errno;

        (void) ucontext;
        /* A signal from the kernel here is the terminal's (^C, ^\, a
         * hangup): it went to the whole foreground process group, the
         * child included, so passing it on would deliver it twice. */
        if (child_pid > 0 && si->si_code != SI_KERNEL)
                (void) kill((pid_t) child_pid, sig);
        errno = saved;
}

static void forwarded_sigset(sigset_t *set) {
        sigemptyset(set);
        for (size_t i = 0; i < ELEMENTSOF(forwarded); i++)
                sigaddset(set, forwarded[i]);
}

/* Leading KEY=SIZE words, as `create` takes them, and REGION.KEY=SIZE
 * words of device regions, as `set` takes them; *@ret_n is how many. */
static int parse_limits(int argc, char **argv, memacct_limits *l, RegionSettings **rs, int *ret_n) {
        int i;

        for (i = 0; i < argc; i++) {
                const char *eq = strchr(argv[i], '=');
                unsigned bit = eq ? limit_by_name(argv[i], (size_t) (eq - argv[i])) : 0;
                uint64_t v;
                int r;

                if (bit == 0) {
                        r = region_setting_parse(argv[i], rs);
                        if (r == 0)
                                break;
                        if (r != 1)
                                return r;
                        continue;
                }
                if (parse_size(eq + 1, &v) < 0)
                        return usage_error("run: invalid size in '%s'", argv[i]);
                limits_set(l, bit, v);
        }
        *ret_n = i;
        return 0;
}

/* The connection run watches: no silent reconnection by the library,
 * which would leave the group without its creator unnoticed. */
static int connect_quiet(memacct **mp) {
        int r;

        r = options_connect(mp);
        if (r >= 0)
                (void) memacct_set_reconnect(*mp, 0);
        return r;
}

static int connect_daemon(memacct **mp) {
        const char *why;
        int r;

        r = connect_quiet(mp);
        if (r >= 0)
                return 0;
        why = memacct_last_error(NULL);
        fprintf(stderr, "memacctctl: run: cannot reach memacctd%s: %s\n", arg.bus ? " on the bus" : "",
                why ? why : strerror(-r));
        return EXIT_FAILURE;
}

/* The group's path: --group as given, --name under RUN_SLICE, else a name
 * of our pid and 32 random bits (the pid alone repeats across pid
 * namespaces and after a leftover from a killed run). */
static int group_path(char *buf, size_t size) {
        uint32_t rnd = 0;
        int n;

        if (arg.group)
                n = snprintf(buf, size, "%s", arg.group);
        else if (arg.name)
                n = snprintf(buf, size, RUN_SLICE "/%s", arg.name);
        else {
                if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
                        rnd = (uint32_t) time(NULL) ^ (uint32_t) clock();
                n = snprintf(buf, size, RUN_SLICE "/run-%d-%08x", (int) getpid(), rnd);
        }
        return n < 0 || (size_t) n >= size ? -ENAMETOOLONG : 0;
}

static int create_group(memacct *m, char *path, size_t size, const memacct_limits *l) {
        int r;

        if (!arg.group) {
                r = memacct_create_group(m, RUN_SLICE, NULL, MEMACCT_NO_OWNER);
                if (r < 0 && r != -EEXIST)
                        return fail(m, "run: create", RUN_SLICE, r);
        }
        /* A random name that exists already is a leftover: draw again. */
        for (int tries = 0;; tries++) {
                r = group_path(path, size);
                if (r < 0)
                        return usage_error("run: group path too long");
                /* Transient unless kept: the daemon removes it when this
                 * connection closes, even after a SIGKILL here. */
                r = (arg.keep_group ? memacct_create_group : memacct_create_transient_group)(
                        m, path, l->set ? l : NULL, MEMACCT_NO_OWNER);
                if (r != -EEXIST || arg.group || arg.name || tries >= 8)
                        break;
        }
        return r < 0 ? fail(m, "run: create", path, r) : 0;
}

#ifndef MEMACCT_INTERPOSER
#define MEMACCT_INTERPOSER "/usr/lib/memacct/libmemacct-cuda.so"
#endif

/*
 * The CUDA interposer after whatever the command preloads already: a
 * sanitizer's runtime must stay first, and another library that stands
 * in front of the driver keeps its place and reaches the driver through
 * the interposer (its RTLD_NEXT).
 */
static int preload_interposer(void) {
        const char *lib = arg.interposer ? arg.interposer : MEMACCT_INTERPOSER;
        const char *old = getenv("LD_PRELOAD");
        _cleanup_free_ char *v = NULL;

        if (access(lib, R_OK) < 0) {
                fprintf(stderr, "memacctctl: run: device memory needs the CUDA interposer, %s: %s\n", lib,
                        strerror(errno));
                return -errno;
        }
        if (asprintf(&v, "%s%s%s", old && *old ? old : "", old && *old ? " " : "", lib) < 0)
                return -ENOMEM;
        return setenv("LD_PRELOAD", v, 1) < 0 ? -errno : 0;
}

/* The environment the command inherits: the group, and the daemon as we
 * reached it (a relative socket made absolute, so that a command that
 * changes directory still finds it). */
static int set_environment(const char *path) {
        char *sock = NULL, cwd[PATH_MAX];
        int r = 0;

        if (setenv("MEMACCT_GROUP", path, 1) < 0)
                return -errno;
        if (arg.bus)
                return setenv("MEMACCT_BUS", arg.bus_address ? arg.bus_address : "system", 1) < 0 ?
                       -errno : 0;
        r = options_socket(&sock);
        if (r < 0)
                return r;
        if (sock[0] != '/' && getcwd(cwd, sizeof(cwd))) {
                char *abs = NULL;

                if (asprintf(&abs, "%s/%s", cwd, sock) < 0) {
                        free(sock);
                        return -ENOMEM;
                }
                free(sock);
                sock = abs;
        }
        r = setenv("MEMACCT_SOCKET", sock, 1) < 0 ? -errno : 0;
        free(sock);
        return r;
}

/* In the child: default dispositions, nothing blocked, then exec; on
 * failure the errno goes up @fd (close-on-exec, so a successful exec
 * sends nothing). */
static __attribute__((noreturn)) void exec_child(char **cmd, const sigset_t *old, int fd, const RunCgroup *cg) {
        int e;

        for (size_t i = 0; i < ELEMENTSOF(forwarded); i++)
                signal(forwarded[i], SIG_DFL);
        sigprocmask(SIG_SETMASK, old, NULL);
        /* Before exec: the command's first page is the cgroup's. */
        e = cg->dir[0] ? -run_cgroup_enter(cg) : 0;
        if (e == 0)
                execvp(cmd[0], cmd);
        e = e ? e : errno;
        (void) !write(fd, &e, sizeof(e));
        _exit(127);
}

/* The connection's watch while the command runs. */
typedef struct Watch {
        memacct **mp;
        const char *path;
        bool on;              /* the group is transient: it must be claimed back */
        bool lost;            /* the connection broke and is not back yet */
        bool gave_up;         /* not claimed back in time: said so, no more tries */
        uint64_t lost_at, next_try, backoff; /* ms */
} Watch;

/* Reconnect and claim the group back. Return: true when it is ours again. */
static bool watch_reclaim(Watch *w) {
        int r;

        *w->mp = memacct_close(*w->mp);
        if (connect_quiet(w->mp) < 0) {
                *w->mp = memacct_close(*w->mp);
                return false;
        }
        r = memacct_create_transient_group(*w->mp, w->path, NULL, MEMACCT_NO_OWNER);
        if (r >= 0)
                return true;
        /* EEXIST: there, but not an orphan of ours (claimed by another
         * uid's run, or made again); ENOENT: gone, it was not saved. */
        if (r != -ECONNRESET) {
                fprintf(stderr, "memacctctl: run: cannot claim %s back after the daemon restarted: %s\n",
                        w->path, strerror(-r));
                w->gave_up = true;
        }
        return false;
}

static void watch_tick(Watch *w) {
        memacct_group_info *info = NULL;
        uint64_t now = clock_now_msec(CLOCK_MONOTONIC);
        int r;

        if (!w->on || w->gave_up)
                return;
        if (!w->lost) {
                r = memacct_get_group(*w->mp, w->path, NULL, 0, &info);
                info = memacct_group_info_free(info);
                if (r != -ECONNRESET)
                        return;
                w->lost = true;
                w->lost_at = w->next_try = now;
                w->backoff = 100;
        }
        if (now >= w->next_try) {
                if (watch_reclaim(w)) {
                        w->lost = false;
                        return;
                }
                w->next_try = now + w->backoff;
                w->backoff = MIN(w->backoff * 2, (uint64_t) 1000);
        }
        if (!w->gave_up && now >= w->lost_at + RUN_RECLAIM_MSEC) {
                fprintf(stderr, "memacctctl: run: lost memacctd and could not claim %s back within %d s; "
                        "still waiting for the command\n", w->path, RUN_RECLAIM_MSEC / 1000);
                w->gave_up = true;
        }
}

/* Wait for @pid, watching the connection meanwhile. SIGCHLD is blocked
 * (since before the fork): sigtimedwait() returns as soon as it comes, and
 * a forwarded signal's handler interrupts it only to loop. */
static int wait_child(pid_t pid, int *ret_status, Watch *w) {
        const struct timespec tick = { .tv_sec = RUN_WATCH_MSEC / 1000,
                                       .tv_nsec = (RUN_WATCH_MSEC % 1000) * 1000000L };
        sigset_t chld;
        uint64_t next = clock_now_msec(CLOCK_MONOTONIC) + RUN_WATCH_MSEC;

        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        for (;;) {
                pid_t r = waitpid(pid, ret_status, WNOHANG);

                if (r == pid)
                        return 0;
                if (r < 0 && errno != EINTR)
                        return -errno;
                if (sigtimedwait(&chld, NULL, &tick) < 0 && errno == EAGAIN && clock_now_msec(CLOCK_MONOTONIC) >= next) {
                        watch_tick(w);
                        next = clock_now_msec(CLOCK_MONOTONIC) + RUN_WATCH_MSEC;
                }
        }
}


/* Start @cmd and wait for it. Return: its exit status as a shell gives
 * it, or 126/127 when it could not be executed, or < 0. */
static int spawn_and_wait(char **cmd, Watch *w, const RunCgroup *cg) {
        struct sigaction sa = { .sa_sigaction = forward, .sa_flags = SA_SIGINFO | SA_RESTART };
        sigset_t set, old, chld;
        int pipefd[2], status, e = 0, r;
        ssize_t n;
        pid_t pid;

        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return -errno;
        forwarded_sigset(&set);
        sa.sa_mask = set;
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        sigprocmask(SIG_BLOCK, &set, &old);
        /* Blocked until the wait is over, for wait_child(). */
        sigprocmask(SIG_BLOCK, &chld, NULL);
        for (size_t i = 0; i < ELEMENTSOF(forwarded); i++)
                sigaction(forwarded[i], &sa, NULL);
        fflush(NULL);
        pid = fork();
        if (pid < 0) {
                e = errno;
                sigprocmask(SIG_SETMASK, &old, NULL);
                close(pipefd[0]);
                close(pipefd[1]);
                return -e;
        }
        if (pid == 0) {
                close(pipefd[0]);
                exec_child(cmd, &old, pipefd[1], cg);
        }
        child_pid = pid;
        sigprocmask(SIG_UNBLOCK, &set, NULL);
        close(pipefd[1]);
        do
                n = read(pipefd[0], &e, sizeof(e));
        while (n < 0 && errno == EINTR);
        close(pipefd[0]);
        r = wait_child(pid, &status, w);
        child_pid = 0;
        sigprocmask(SIG_SETMASK, &old, NULL);
        if (r < 0)
                return r;
        if (n == (ssize_t) sizeof(e)) {
                fprintf(stderr, "memacctctl: run: %s: %s\n", cmd[0], strerror(e));
                return e == ENOENT ? 127 : 126;
        }
        if (WIFSIGNALED(status))
                return 128 + WTERMSIG(status);
        return WEXITSTATUS(status);
}

/* Remove @path once its last session has ended, waiting up to
 * RUN_REMOVE_WAIT_MSEC: a session ends when the daemon sees its client's
 * connection close, a little after the client exited. */
static void remove_when_idle(memacct *m, const char *path) {
        const struct timespec step = { .tv_nsec = 50 * 1000 * 1000 };
        int r;

        for (int waited = 0;; waited += 50) {
                r = memacct_remove_group(m, path);
                if (r != -EBUSY || waited >= RUN_REMOVE_WAIT_MSEC)
                        break;
                nanosleep(&step, NULL);
        }
        if (r == -EBUSY)
                fprintf(stderr, "memacctctl: run: leaving %s: it still has sessions or groups "
                        "(the daemon removes it once they are gone)\n", path);
        else if (r < 0 && r != -ENOENT)
                (void) fail(m, "run: remove", path, r);
}

/* Does the daemon know device region @name? */
static bool region_known(memacct *m, const char *name) {
        memacct_regions *list = NULL;
        bool found = false;

        if (memacct_list_regions(m, &list) < 0)
                return false;
        for (size_t i = 0; i < memacct_regions_size(list); i++)
                found |= strcmp(memacct_regions_get(list, i)->name, name) == 0;
        memacct_regions_free(list);
        return found;
}

/*
 * Everything between the group and the command: the device regions'
 * limits, the kernel memory cgroup the group mirrors (host memory), the
 * CUDA interposer for device memory. Return: 0, or the exit status.
 */
static int prepare(memacct *m, const char *path, const memacct_limits *l, const RegionSettings *rs,
                   RunCgroup *cg) {
        char why[512] = "";
        int r;

        if (rs && region_settings_apply(m, path, rs) != 0)
                return EXIT_FAILURE;
        if (arg.region && !region_known(m, arg.region)) {
                fprintf(stderr, "memacctctl: run: --region %s: no such region (memacctctl region list)\n", arg.region);
                return EXIT_FAILURE;
        }
        r = run_cgroup_create(cg, path, l, why, sizeof(why));
        if (r < 0 && l->set) {
                fprintf(stderr, "memacctctl: run: max=, high=, low= and min= are the kernel's to enforce, and %s: "
                        "refused\n", why);
                return EXIT_FAILURE;
        }
        if (r < 0)
                fprintf(stderr, "memacctctl: run: host memory is not accounted: %s\n", why);
        else {
                if (cg->note[0])
                        fprintf(stderr, "memacctctl: run: %s\n", cg->note);
                /* The group mirrors the cgroup: the kernel's usage in show and
                 * top, and "auto" attaches of its processes land there. */
                r = memacct_import_cgroups(m, path, "/", NULL);
                if (r < 0)
                        fprintf(stderr, "memacctctl: run: %s does not mirror %s (%s): its kernel usage is not "
                                "shown\n", path, cg->dir, memacct_last_error(m) ? memacct_last_error(m) : strerror(-r));
        }
        if ((rs || arg.region) && preload_interposer() < 0)
                return EXIT_FAILURE;
        return 0;
}

int run_main(memacct **mp, int argc, char **argv) {
        _cleanup_(region_settings_freep) RegionSettings *rs = NULL;
        RunCgroup cg = {};
        char path[4096];
        memacct_limits l = {};
        int r, n = 0, status;

        if (arg.group && arg.name)
                return usage_error("run: --group and --name exclude each other");
        if (arg.name && (!*arg.name || strchr(arg.name, '/')))
                return usage_error("run: --name takes one group name, without '/'");
        r = parse_limits(argc - 1, argv + 1, &l, &rs, &n);
        if (r != 0)
                return r;
        if (1 + n >= argc)
                return usage_error("run: missing command");
        /* getopt_long() moves the "--" that ended the options to just
         * before the command's words. Without one, it would have taken
         * the command's own options as ours. */
        if (strcmp(argv[-1], "--") != 0)
                return usage_error("run: write -- before the command");

        if (connect_daemon(mp) != 0)
                return EXIT_FAILURE;
        r = create_group(*mp, path, sizeof(path), &l);
        if (r != 0)
                return r;
        r = prepare(*mp, path, &l, rs, &cg);
        Watch w = { .mp = mp, .path = path, .on = !arg.keep_group };
        if (r != 0)
                status = -ECANCELED;
        else {
                r = set_environment(path);
                status = r < 0 ? r : spawn_and_wait(argv + 1 + n, &w, &cg);
                if (status < 0)
                        fprintf(stderr, "memacctctl: run: cannot start %s: %s\n", argv[1 + n], strerror(-status));
        }
        /* A kept group keeps its kernel cgroup too: the daemon prunes the
         * mirror of a cgroup that is gone ([cgroup] prune). */
        if (arg.keep_group) {
                fprintf(stderr, "memacctctl: run: kept %s%s%s\n", path, cg.dir[0] ? " and " : "", cg.dir);
                return status < 0 ? EXIT_FAILURE : status;
        }
        run_cgroup_remove(&cg);
        if (!*mp && connect_quiet(mp) < 0)
                fprintf(stderr, "memacctctl: run: cannot reach memacctd to remove %s\n", path);
        else
                remove_when_idle(*mp, path);
        return status < 0 ? EXIT_FAILURE : status;
}
