/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memacctctl top: the live view (and batch mode) over top-view.c's
 * snapshots. One query per interval; keys and a new terminal size redraw
 * the last snapshot without a query.
 *
 * The terminal is driven with termios and ANSI escapes (the alternate
 * screen, a hidden cursor, home and clear-to-end): nothing here needs
 * more, and curses is not a dependency of the project.
 *
 * Invariant: whenever the terminal is changed (term_active), every way
 * out restores it first: q, -n, a failed query, SIGINT/SIGTERM/SIGHUP (a
 * flag the loop sees; a second one restores from the handler and exits,
 * should the loop be stuck in a call), SIGTSTP (restored, stopped, set up
 * again on SIGCONT), and exit() itself (atexit). The restore uses only
 * write() and tcsetattr(), which are async-signal-safe, so the handlers
 * may call it.
 */

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "macro.h"
#include "options.h"
#include "output.h"
#include "top-internal.h"
#include "top.h"


#define ENTER_SCREEN "\033[?1049h\033[?25l"
#define LEAVE_SCREEN "\033[?25h\033[?1049l"

typedef struct TopArgs {
        const char *path;
        TopView view;
        double interval_sec;
        unsigned long iterations; /* 0: until q */
        bool batch;
        bool help;  /* the key help is shown (h) */
} TopArgs;

static struct termios saved_termios;
static volatile sig_atomic_t term_active, stop_signal, got_winch, got_cont;

static void term_restore(void) {
        if (!term_active)
                return;
        term_active = 0;
        (void) !write(STDOUT_FILENO, LEAVE_SCREEN, strlen(LEAVE_SCREEN));
        (void) tcsetattr(STDIN_FILENO, TCSADRAIN, &saved_termios);
}

/* No echo, no line editing: keys arrive one by one. ISIG stays on, so
 * ^C is SIGINT and ^Z SIGTSTP, and OPOST too, so "\n" is a new line. */
static int term_setup(void) {
        struct termios t = saved_termios;

        t.c_lflag &= ~(tcflag_t) (ICANON | ECHO);
        t.c_cc[VMIN] = 1;
        t.c_cc[VTIME] = 0;
        if (tcsetattr(STDIN_FILENO, TCSADRAIN, &t) < 0)
                return -errno;
        term_active = 1;
        (void) !write(STDOUT_FILENO, ENTER_SCREEN, strlen(ENTER_SCREEN));
        return 0;
}

static void on_stop(int sig) {
        if (stop_signal) {
                /* The loop did not get to it: leave now, terminal first. */
                term_restore();
                _exit(128 + sig);
        }
        stop_signal = sig;
}

static void on_winch(int sig) {
        (void) sig;
        got_winch = 1;
}

/* ^Z: give the terminal back before stopping, as a shell expects. */
static void on_tstp(int sig) {
        int saved_errno = errno;

        (void) sig;
        term_restore();
        signal(SIGTSTP, SIG_DFL);
        raise(SIGTSTP);
        errno = saved_errno;
}

static void on_cont(int sig) {
        (void) sig;
        got_cont = 1;
}

/* Without SA_RESTART, so that a signal ends the poll() that waits. */
static void handle(int sig, void (*fn)(int)) {
        struct sigaction sa = { .sa_handler = fn };

        sigemptyset(&sa.sa_mask);
        sigaction(sig, &sa, NULL);
}

static int term_enter(void) {
        static bool registered;
        int r;

        if (tcgetattr(STDIN_FILENO, &saved_termios) < 0)
                return -errno;
        if (!registered && atexit(term_restore) != 0)
                return -ENOMEM;
        registered = true;
        handle(SIGWINCH, on_winch);
        handle(SIGTSTP, on_tstp);
        handle(SIGCONT, on_cont);
        r = term_setup();
        return r;
}

static void term_size(size_t *ret_cols, size_t *ret_lines) {
        struct winsize ws = {};

        if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) < 0 || ws.ws_col == 0 || ws.ws_row == 0)
                ws = (struct winsize) { .ws_col = 80, .ws_row = 24 };
        *ret_cols = ws.ws_col;
        *ret_lines = ws.ws_row;
}

static double now_sec(void) {
        return (double) clock_now_nsec(CLOCK_MONOTONIC) / 1e9;
}

static int parse_args(int argc, char **argv, TopArgs *a) {
        char *end;

        *a = (TopArgs) {
                .path = argc > 1 ? argv[1] : "/",
                .view = { .order = TOP_ORDER_CURRENT, .max_depth = -1, .raw = arg.raw },
                .interval_sec = 1.0,
                .batch = arg.batch,
        };
        if (arg.top_order) {
                a->view.order = top_order_from_string(arg.top_order);
                if (a->view.order < 0)
                        return usage_error("top: unknown order '%s' (current peak path events)",
                                           arg.top_order);
        }
        if (arg.top_depth) {
                long d;

                errno = 0;
                d = strtol(arg.top_depth, &end, 10);
                if (errno != 0 || end == arg.top_depth || *end || d < 0 || d > 1000)
                        return usage_error("top: invalid depth '%s'", arg.top_depth);
                a->view.max_depth = (int) d;
        }
        if (arg.top_interval) {
                errno = 0;
                a->interval_sec = strtod(arg.top_interval, &end);
                if (errno != 0 || end == arg.top_interval || *end || !isfinite(a->interval_sec) ||
                    a->interval_sec < 0.01 || a->interval_sec > 86400)
                        return usage_error("top: invalid interval '%s' (seconds, 0.01 to 86400)",
                                           arg.top_interval);
        }
        if (arg.top_iterations) {
                errno = 0;
                a->iterations = strtoul(arg.top_iterations, &end, 10);
                if (errno != 0 || end == arg.top_iterations || *end || a->iterations == 0 ||
                    arg.top_iterations[0] == '-')
                        return usage_error("top: invalid number of iterations '%s'",
                                           arg.top_iterations);
        }
        /* Without a terminal on both ends there is nothing to draw on or
         * read keys from: batch mode, as systemd-cgtop does. */
        if (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO))
                a->batch = true;
        return 0;
}

static int fetch(memacct *m, const TopArgs *a, TopSnapshot *s) {
        TopSnapshot next;
        int r;

        r = top_snapshot_fetch(m, a->path, arg.region, &next);
        if (r < 0) {
                top_snapshot_done(&next);
                return r;
        }
        top_snapshot_sort(&next, a->view.order);
        top_snapshot_done(s);
        *s = next;
        return 0;
}

/*
 * --json top -b: one JSON document a line each time, {"time": seconds
 * since the epoch, "groups": [as --json show prints each, in the order
 * and to the depth of the table]}, as a script reads a stream.
 */
static int print_snapshot_json(const TopSnapshot *s, const TopView *v) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object();
        json_object *groups = json_object_new_array();

        if (!o || !groups) {
                json_object_put(groups);
                return -ENOMEM;
        }
        json_object_object_add(o, "time", json_object_new_int64((int64_t) time(NULL)));
        json_object_object_add(o, "groups", groups);
        for (size_t i = 0; i < s->n_rows; i++) {
                const TopRow *row = &s->rows[s->shown[i]];
                json_object *g;

                if (v->max_depth >= 0 && row->depth > v->max_depth)
                        continue;
                g = json_group(row->g);
                if (!g || json_object_array_add(groups, g) < 0) {
                        json_object_put(g);
                        return -ENOMEM;
                }
        }
        puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        return 0;
}

static int run_batch(memacct *m, TopArgs *a) {
        TopSnapshot s = {};
        int r = 0;

        a->view.eol = "\n";
        for (unsigned long i = 0; !stop_signal && (a->iterations == 0 || i < a->iterations); i++) {
                struct timespec ts;

                if (i > 0) {
                        ts.tv_sec = (time_t) a->interval_sec;
                        ts.tv_nsec = (long) ((a->interval_sec - (double) ts.tv_sec) * 1e9);
                        while (nanosleep(&ts, &ts) < 0 && errno == EINTR && !stop_signal)
                                ;
                        if (stop_signal)
                                break;
                        if (!arg.json)
                                putchar('\n');
                }
                r = fetch(m, a, &s);
                if (r < 0)
                        break;
                if (arg.json)
                        r = print_snapshot_json(&s, &a->view);
                else
                        top_print_table(stdout, &s, &a->view);
                if (r < 0 || fflush(stdout) != 0)
                        break;
        }
        top_snapshot_done(&s);
        return r < 0 ? fail(m, "top", a->path, r) : 0;
}

static void draw(const TopSnapshot *s, TopArgs *a) {
        size_t cols, lines;
        char title[512], path[256];
        int n;

        term_size(&cols, &lines);
        a->view.width = cols;
        /* Title, blank, header and rows each end in a new line: one line
         * is left for the cursor, so that the screen never scrolls. */
        a->view.height = lines > 4 ? lines - 4 : 1;
        a->view.eol = "\033[K\n";
        n = snprintf(title, sizeof(title),
                     "memacctctl top: %s  groups: %zu  order: %s  interval: %gs%s",
                     top_ellipsize(path, sizeof(path), a->path, 60),
                     top_snapshot_count(s, a->view.max_depth), top_order_to_string(a->view.order),
                     a->interval_sec, a->view.raw ? "  raw" : "");
        if (n > 0 && (size_t) n > cols)
                title[cols] = 0;
        printf("\033[H%s\033[K\n\033[K\n", title);
        if (a->help) {
                fputs("Order: m or c current, k peak, p path, e events.\033[K\n"
                      "r: raw bytes or K/M/G.  +/-: the delay twice or half as long.  space: refresh now.\033[K\n"
                      "h or ?: this help on and off.  q: quit.\033[K\n", stdout);
                fputs("\033[J", stdout);
                fflush(stdout);
                return;
        }
        top_print_table(stdout, s, &a->view);
        fputs("\033[J", stdout);
        fflush(stdout);
}

/* A key: Return: 1 to redraw, 2 to query now, -1 to quit, 0 nothing. */
static int key(char c, TopArgs *a, TopSnapshot *s) {
        static const struct {
                char key;
                TopOrder order;
        } order_keys[] = {
                { 'c', TOP_ORDER_CURRENT },
                { 'm', TOP_ORDER_CURRENT }, /* systemd-cgtop's "memory" */
                { 'k', TOP_ORDER_PEAK },
                { 'p', TOP_ORDER_PATH },
                { 'e', TOP_ORDER_EVENTS },
        };

        for (size_t i = 0; i < ELEMENTSOF(order_keys); i++)
                if (c == order_keys[i].key) {
                        a->view.order = order_keys[i].order;
                        top_snapshot_sort(s, a->view.order);
                        return 1;
                }
        switch (c) {
        case 'h':
        case '?':
                a->help = !a->help;
                return 1;
        case 'q':
        case 'Q':
                return -1;
        case 'r':
                a->view.raw = !a->view.raw;
                return 1;
        case '+':
                a->interval_sec = MIN(a->interval_sec * 2, 86400);
                return 1;
        case '-':
                a->interval_sec = MAX(a->interval_sec / 2, 0.01);
                return 1;
        case ' ':
                return 2;
        default:
                return 0;
        }
}

/* Keys waiting on the terminal. Return: as key(), the strongest. */
static int read_keys(TopArgs *a, TopSnapshot *s) {
        char buf[32];
        ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
        int action = 0;

        if (n == 0)
                return -1; /* the terminal went away */
        for (ssize_t i = 0; i < n && action >= 0; i++) {
                int k = key(buf[i], a, s);

                action = k < 0 ? k : MAX(action, k);
        }
        return action;
}

static int run_live(memacct *m, TopArgs *a) {
        TopSnapshot s = {};
        unsigned long shown = 0;
        double next;
        int r;

        r = fetch(m, a, &s);
        if (r < 0)
                return fail(m, "top", a->path, r);
        r = term_enter();
        if (r < 0) {
                top_snapshot_done(&s);
                fprintf(stderr, "memacctctl: top: cannot set up the terminal: %s\n", strerror(-r));
                return EXIT_FAILURE;
        }
        draw(&s, a);
        shown = 1;
        next = now_sec() + a->interval_sec;
        while (!stop_signal) {
                struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
                double wait = next - now_sec();
                int action = 0;

                if (got_cont) {
                        got_cont = 0;
                        handle(SIGTSTP, on_tstp);
                        if (!term_active && term_setup() < 0)
                                break;
                        action = 1;
                } else if (got_winch) {
                        got_winch = 0;
                        action = 1;
                } else if (wait > 0) {
                        int k = poll(&p, 1, (int) (wait * 1000) + 1);

                        if (k < 0 && errno != EINTR)
                                break;
                        if (k > 0)
                                action = p.revents & POLLIN ? read_keys(a, &s) : -1;
                }
                if (action < 0)
                        break;
                if (action == 2 || now_sec() >= next) {
                        if (a->iterations > 0 && shown >= a->iterations)
                                break;
                        r = fetch(m, a, &s);
                        if (r < 0)
                                break;
                        shown++;
                        next = now_sec() + a->interval_sec;
                        action = 1;
                }
                if (action == 1)
                        draw(&s, a);
        }
        term_restore();
        top_snapshot_done(&s);
        return r < 0 ? fail(m, "top", a->path, r) : 0;
}

int top_main(memacct **mp, int argc, char **argv, int (*connect)(memacct **ret)) {
        TopArgs a;
        int r;

        r = parse_args(argc, argv, &a);
        if (r != 0)
                return r;
        handle(SIGINT, on_stop);
        handle(SIGTERM, on_stop);
        handle(SIGHUP, on_stop);
        r = connect(mp);
        if (r != 0)
                return r;
        return a.batch ? run_batch(*mp, &a) : run_live(*mp, &a);
}
