/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Helpers the service's test programs share (service-test.h).
 *
 * Each test owns one core and one service for its duration. The tree is
 * made through the core, so that the commit counter and the sink start
 * empty: what they hold at the end is what the operations under test
 * did. The recording delivery encodes an event into a small buffer the
 * way a transport would, and its push decodes it back into the inbox, so
 * both halves of the EventDelivery contract are exercised.
 */

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "service-test.h"

/* ---- recorded events ---------------------------------------------------- */

unsigned test_delivery_encodes;

/* The "wire" form of an event: a fixed header, then the path with its NUL. */
typedef struct WireEvent {
        int32_t kind, event;
        uint64_t count;
        uint32_t limits;
} WireEvent;

static void log_add(EventLog *log, const EventItem *ev) {
        Recorded *r;

        if (log->n >= RECORDED_MAX || strlen(ev->path) >= RECORDED_PATH_MAX) {
                log->overflow = true;
                return;
        }
        r = &log->v[log->n++];
        *r = (Recorded) { .kind = ev->kind, .event = ev->event, .count = ev->count, .limits = ev->limits };
        strcpy(r->path, ev->path);
}

static int delivery_encode(const EventItem *ev, uint8_t **ret, size_t *ret_len) {
        size_t n = strlen(ev->path) + 1;
        WireEvent w = { .kind = ev->kind, .event = ev->event, .count = ev->count, .limits = ev->limits };
        uint8_t *buf = malloc(sizeof(w) + n);

        if (!buf)
                return -ENOMEM;
        memcpy(buf, &w, sizeof(w));
        memcpy(buf + sizeof(w), ev->path, n);
        test_delivery_encodes++;
        *ret = buf;
        *ret_len = sizeof(w) + n;
        return 0;
}

static void delivery_push(void *userdata, const uint8_t *buf, size_t len) {
        EventLog *log = userdata;
        WireEvent w;
        EventItem ev;

        if (len <= sizeof(w) || buf[len - 1] != 0) {
                log->overflow = true; /* malformed: the assertion on the log shows it */
                return;
        }
        memcpy(&w, buf, sizeof(w));
        ev = (EventItem) {
                .kind = (EventKind) w.kind,
                .event = (MemEvent) w.event,
                .count = w.count,
                .limits = w.limits,
                .path = (const char *) buf + sizeof(w),
        };
        log_add(log, &ev);
}

const EventDelivery test_delivery = {
        .encode = delivery_encode,
        .push = delivery_push,
};

static void sink_record(const EventItem *ev, void *userdata) {
        log_add(userdata, ev);
}

static bool recorded_matches(const Recorded *r, EventKind kind, int event, const char *path) {
        if (r->kind != kind)
                return false;
        if (kind == EVENT_MEMORY && event >= 0 && (int) r->event != event)
                return false;
        return !path || strcmp(r->path, path) == 0;
}

size_t event_log_count(const EventLog *log, EventKind kind, int event) {
        size_t n = 0;

        for (size_t i = 0; i < log->n; i++)
                if (recorded_matches(&log->v[i], kind, event, NULL))
                        n++;
        return n;
}

const Recorded *event_log_find(const EventLog *log, EventKind kind, int event, const char *path) {
        for (size_t i = 0; i < log->n; i++)
                if (recorded_matches(&log->v[i], kind, event, path))
                        return &log->v[i];
        return NULL;
}

/* ---- the fixture -------------------------------------------------------- */

unsigned fixture_commits(Fixture *f) {
        return (unsigned) saver_last_change(f->saver);
}

ServiceSettings fixture_settings_default(void) {
        return (ServiceSettings) {
                .max_frame = 65536,
                .charge_batch = 64 * PAGE,
                .max_sessions_per_uid = 0,
                .read_access = READ_ACCESS_ALL,
        };
}

void fixture_settings(Fixture *f, ReadAccess access, unsigned cap) {
        ServiceSettings s = fixture_settings_default();

        s.read_access = access;
        s.max_sessions_per_uid = cap;
        service_set_settings(f->svc, &s);
}

static int make_peer_delivered(Fixture *f, uid_t uid, pid_t pid, bool open_session, const EventDelivery *d,
                               EventLog *inbox, Peer **ret) {
        /* A peer events cannot be pushed to is the fixture's bus peer. */
        PeerCreds creds = {
                .transport = d ? SERVICE_TRANSPORT_SOCKET : SERVICE_TRANSPORT_BUS,
                .pid = pid, .uid = uid, .gid = uid,
        };
        Refusal rf;

        refusal_init(&rf);
        return service_peer_new(f->svc, &creds, d, inbox, open_session, ret, &rf);
}

static int make_peer(Fixture *f, uid_t uid, pid_t pid, bool open_session, EventLog *inbox, Peer **ret) {
        return make_peer_delivered(f, uid, pid, open_session, inbox ? &test_delivery : NULL, inbox, ret);
}

static int make_tree(MemCore *core) {
        static const struct {
                const char *path;
                uid_t owner;
        } tree[] = {
                { "/a", UID_ROOT },   { "/b", UID_ROOT },     { "/d", UID_DELEGATE },
                { "/d/x", UID_ROOT }, { "/d/x/y", UID_ROOT }, { "/e", UID_OTHER },
        };

        for (size_t i = 0; i < sizeof(tree) / sizeof(tree[0]); i++)
                if (group_create(core, tree[i].path, tree[i].owner) < 0)
                        return -1;
        return core_group_count(core) == TEST_TREE_GROUPS ? 0 : -1;
}

static void fixture_free(Fixture *f) {
        for (size_t i = 0; i < FIXTURE_EXTRA_MAX; i++)
                f->extra[i] = service_peer_free(f->extra[i]);
        f->root = service_peer_free(f->root);
        f->delegate = service_peer_free(f->delegate);
        f->other = service_peer_free(f->other);
        f->bus = service_peer_free(f->bus);
        f->svc = service_free(f->svc);
        f->saver = saver_free(f->saver);
        if (f->state_dir[0])
                (void) rmdir(f->state_dir);
        if (f->registered)
                core_thread_unregister(f->core);
        f->core = core_free(f->core);
        free(f);
}

int service_setup(void **state) {
        MemCoreConfig cc = MEM_CORE_CONFIG_DEFAULT;
        ServiceSettings ss = fixture_settings_default();
        Fixture *f = calloc(1, sizeof(*f));

        if (!f)
                return -1;
        cc.max_groups = TEST_MAX_GROUPS;
        cc.max_depth = TEST_MAX_DEPTH;
        if (core_new(&cc, &f->core) < 0)
                goto fail;
        f->registered = core_thread_register(f->core) >= 0;
        if (!f->registered || make_tree(f->core) < 0 || service_new(f->core, &ss, &f->svc) < 0)
                goto fail;
        /* A saver that is never started: it counts the commits, and a
         * commit never waits for a thread. */
        snprintf(f->state_dir, sizeof(f->state_dir), "/tmp/test-service-XXXXXX");
        if (!mkdtemp(f->state_dir) || saver_new(f->core, f->state_dir, false, &f->saver) < 0)
                goto fail;
        service_set_saver(f->svc, f->saver);
        events_set_sink(service_events(f->svc), sink_record, &f->sink);
        if (make_peer(f, UID_ROOT, PID_ROOT, true, &f->root_inbox, &f->root) < 0 ||
            make_peer(f, UID_DELEGATE, PID_DELEGATE, true, &f->delegate_inbox, &f->delegate) < 0 ||
            make_peer(f, UID_OTHER, PID_OTHER, true, &f->other_inbox, &f->other) < 0 ||
            make_peer(f, UID_DELEGATE, PID_BUS, false, NULL, &f->bus) < 0)
                goto fail;
        f->next_pid = PID_EXTRA;
        test_delivery_encodes = 0;
        *state = f;
        return 0;
fail:
        fixture_free(f);
        return -1;
}

int service_teardown(void **state) {
        fixture_free(*state);
        return 0;
}

/* The first free extra slot, its inbox emptied. */
static size_t extra_slot(Fixture *f) {
        for (size_t i = 0; i < FIXTURE_EXTRA_MAX; i++)
                if (!f->extra[i]) {
                        f->extra_inbox[i] = (EventLog) {};
                        return i;
                }
        fail_msg("more than %d extra peers", FIXTURE_EXTRA_MAX);
        return 0;
}

Peer *fixture_peer_with_pid(Fixture *f, uid_t uid, pid_t pid, bool open_session, bool events) {
        size_t i = extra_slot(f);

        assert_int_equal(
                make_peer(f, uid, pid, open_session, events ? &f->extra_inbox[i] : NULL, &f->extra[i]), 0);
        return f->extra[i];
}

Peer *fixture_peer_with_delivery(Fixture *f, uid_t uid, const EventDelivery *d) {
        size_t i = extra_slot(f);

        assert_int_equal(
                make_peer_delivered(f, uid, f->next_pid++, true, d, &f->extra_inbox[i], &f->extra[i]), 0);
        return f->extra[i];
}

Peer *fixture_peer_new(Fixture *f, uid_t uid, bool open_session, bool events) {
        return fixture_peer_with_pid(f, uid, f->next_pid++, open_session, events);
}

EventLog *fixture_peer_inbox(Fixture *f, Peer *p) {
        if (p == f->root)
                return &f->root_inbox;
        if (p == f->delegate)
                return &f->delegate_inbox;
        if (p == f->other)
                return &f->other_inbox;
        for (size_t i = 0; i < FIXTURE_EXTRA_MAX; i++)
                if (f->extra[i] == p)
                        return p->subscriber.delivery ? &f->extra_inbox[i] : NULL;
        return NULL;
}

void fixture_peer_free(Fixture *f, Peer *p) {
        Peer **mine[] = { &f->root, &f->delegate, &f->other, &f->bus };

        for (size_t i = 0; i < FIXTURE_EXTRA_MAX; i++)
                if (f->extra[i] == p)
                        f->extra[i] = NULL;
        for (size_t i = 0; i < sizeof(mine) / sizeof(mine[0]); i++)
                if (*mine[i] == p)
                        *mine[i] = NULL;
        service_peer_free(p);
}

/* ---- the tree, through the core ------------------------------------------ */

void tree_create(Fixture *f, const char *path, uid_t owner) {
        assert_int_equal(group_create(f->core, path, owner), 0);
}

void tree_set_max(Fixture *f, const char *path, uint64_t bytes) {
        MemGroup *g = NULL;

        assert_int_equal(group_get(f->core, path, &g), 0);
        assert_true(group_set_max(g, bytes, false) >= 0);
        group_unref(g);
}

bool tree_exists(Fixture *f, const char *path) {
        MemGroup *g = NULL;

        if (group_get(f->core, path, &g) < 0)
                return false;
        group_unref(g);
        return true;
}

MemGroupInfo tree_info(Fixture *f, const char *path) {
        MemGroupInfo info;
        MemGroup *g = NULL;

        assert_int_equal(group_get(f->core, path, &g), 0);
        memset(&info, 0xa5, sizeof(info));
        group_read(f->core, g, NULL, true, &info);
        group_unref(g);
        return info;
}

uint64_t tree_usage(Fixture *f, const char *path) {
        return tree_info(f, path).current;
}

/* ---- refusals ----------------------------------------------------------- */

void assert_refused_at(int r, const Refusal *rf, int error, const char *file, int line, const char *fmt,
                       ...) {
        char want[REFUSAL_MESSAGE_MAX];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(want, sizeof(want), fmt, ap);
        va_end(ap);
        _assert_int_equal(r, error, file, line);
        _assert_int_equal(rf->error, error, file, line);
        _assert_string_equal(rf->message, want, file, line);
        if (error != -EDQUOT)
                _assert_string_equal(rf->refused_by, "", file, line);
}

void assert_not_refused_at(int r, const Refusal *rf, const char *file, int line) {
        if (r < 0)
                print_error("refused with %d: %s\n", r, rf->message);
        _assert_true(r >= 0, "r >= 0", file, line);
        _assert_int_equal(rf->error, 0, file, line);
        _assert_string_equal(rf->message, "", file, line);
}

/* ---- requests ----------------------------------------------------------- */

ServiceCharge session_bytes(const char *path, uint64_t bytes) {
        return (ServiceCharge) { .path = path, .bytes = bytes, .has_bytes = true };
}

ServiceCharge kept_bytes(const char *path, uint64_t bytes) {
        return (ServiceCharge) { .path = path, .bytes = bytes, .has_bytes = true, .keep = true };
}

MemLimits limits_max(uint64_t max) {
        return (MemLimits) { .set = MEM_LIMIT_MAX, .max = max };
}

int reads_collect(void *userdata, const char *path, const MemGroupInfo *info) {
        Reads *r = userdata;
        size_t i = r->n;

        if (r->fail_at && i + 1 == r->fail_at)
                return r->fail_with;
        if (i >= READS_MAX || strlen(path) >= RECORDED_PATH_MAX)
                return -E2BIG; /* the test's own bound: its assertions show it */
        strcpy(r->paths[i], path);
        r->had_info[i] = info != NULL;
        if (info)
                r->info[i] = *info;
        r->n++;
        return 0;
}

bool reads_has(const Reads *r, const char *path) {
        for (size_t i = 0; i < r->n; i++)
                if (strcmp(r->paths[i], path) == 0)
                        return true;
        return false;
}

/* ---- stock pages -------------------------------------------------------- */

int stock_memfd(size_t size, bool sealed) {
        int fd = memfd_create("test-stock", sealed ? MFD_ALLOW_SEALING : 0);

        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, (off_t) size), 0);
        if (sealed)
                assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), 0);
        return fd;
}
