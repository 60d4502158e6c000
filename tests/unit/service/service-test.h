/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the service's test programs share: a small core with a service on
 * it and a tree with owners, peers of several uids as the transports make
 * them, a recording EventDelivery (the socket's role) and a recording
 * sink (the bus's role), a count of durable commits, and assertions for
 * refusals and recorded events.
 *
 * Everything runs on the test's main thread, which is registered with
 * the core: the callbacks below record and never call cmocka (they run
 * under the fan-out's lock), the test asserts on what they recorded.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/core.h"
#include "core/group.h"
#include "state/saver.h"
#include "service/service.h"

#define KIB ((uint64_t) 1 << 10)
#define MIB ((uint64_t) 1 << 20)
#define PAGE ((uint64_t) 4096)

/* The core every test gets: small bounds, so that they are reachable. */
#define TEST_MAX_GROUPS 64
#define TEST_MAX_DEPTH 4

/*
 * The tree every test starts from, made through the core (no commit, no
 * event): / (root), /a and /b (root's), /d delegated to UID_DELEGATE with
 * /d/x and /d/x/y below it (root's, delegated through /d), /e delegated
 * to UID_OTHER. UID_STRANGER owns nothing.
 */
#define TEST_TREE_GROUPS 7 /* the root included */

enum {
        UID_ROOT = 0,
        UID_DELEGATE = 1000,
        UID_OTHER = 2000,
        UID_STRANGER = 3000,
};

/* Distinct pids: the core keys clients by pid. */
enum {
        PID_ROOT = 1,
        PID_DELEGATE = 2,
        PID_OTHER = 3,
        PID_BUS = 4,
        PID_STRANGER = 5,
        PID_EXTRA = 100, /* fixture_peer_new() callers count up from here */
};

/* ---- recorded events ---------------------------------------------------- */

#define RECORDED_MAX 128
#define RECORDED_PATH_MAX 128

typedef struct Recorded {
        EventKind kind;
        MemEvent event;
        uint64_t count;
        unsigned limits;
        char path[RECORDED_PATH_MAX];
} Recorded;

/* What one receiver was given, in order. */
typedef struct EventLog {
        Recorded v[RECORDED_MAX];
        size_t n;
        bool overflow; /* more than RECORDED_MAX, or a path too long to keep */
} EventLog;

/* Delivers to the EventLog a subscriber's userdata points to. */
extern const EventDelivery test_delivery;
/* How often test_delivery's encode ran: once per event and delivery. */
extern unsigned test_delivery_encodes;

/** event_log_count() - the events of @kind in @log (EVENT_MEMORY: of @event only, -1: any). */
size_t event_log_count(const EventLog *log, EventKind kind, int event);

/**
 * event_log_find() - the first event of @kind (EVENT_MEMORY: and @event,
 * -1: any) about @path (NULL: any) in @log, or NULL.
 */
const Recorded *event_log_find(const EventLog *log, EventKind kind, int event, const char *path);

/* ---- the fixture -------------------------------------------------------- */

#define FIXTURE_EXTRA_MAX 16

typedef struct Fixture {
        MemCore *core;
        Service *svc;
        Peer *root;     /* UID_ROOT, session open, receives events */
        Peer *delegate; /* UID_DELEGATE, session open, receives events */
        Peer *other;    /* UID_OTHER, session open, receives events */
        Peer *bus;      /* UID_DELEGATE, as the bus makes them: lazy session, no delivery */
        EventLog root_inbox, delegate_inbox, other_inbox;
        EventLog sink; /* what the broadcasting transport was told */
        Saver *saver;
        char state_dir[64];
        Peer *extra[FIXTURE_EXTRA_MAX];
        EventLog extra_inbox[FIXTURE_EXTRA_MAX];
        pid_t next_pid;
        bool registered;
} Fixture;

/**
 * service_setup() - cmocka setup: a core (TEST_MAX_GROUPS, TEST_MAX_DEPTH)
 * with the test tree, the calling thread registered, a service (reads
 * open to all, no session cap), the commit counter and the sink
 * installed, and the four peers. Nothing is committed or recorded yet.
 * Return: 0, -1 when any of it fails.
 */
int service_setup(void **state);

/** service_teardown() - free every peer still there, the service and the core. */
int service_teardown(void **state);

#define SERVICE_TEST(f) cmocka_unit_test_setup_teardown(f, service_setup, service_teardown)

/**
 * fixture_peer_new() - one more peer of @uid with the next free pid, with
 * an inbox of its own when @events. Freed by the teardown unless
 * fixture_peer_free() is called first. Fails the test when refused.
 */
Peer *fixture_peer_new(Fixture *f, uid_t uid, bool open_session, bool events);

/** fixture_peer_with_pid() - fixture_peer_new() with pid @pid (another session of a process). */
Peer *fixture_peer_with_pid(Fixture *f, uid_t uid, pid_t pid, bool open_session, bool events);

/**
 * fixture_peer_with_delivery() - a peer of @uid with a session, whose
 * events go through @d (its push gets the peer's inbox as userdata).
 */
Peer *fixture_peer_with_delivery(Fixture *f, uid_t uid, const EventDelivery *d);

/** fixture_peer_inbox() - the inbox of a fixture peer (NULL: it receives no events). */
EventLog *fixture_peer_inbox(Fixture *f, Peer *p);

/** fixture_peer_free() - free @p (a fixture peer or one of its four) now. */
void fixture_peer_free(Fixture *f, Peer *p);

/** fixture_settings() - new settings: @access, per-uid cap @cap, the rest as set up. */
void fixture_settings(Fixture *f, ReadAccess access, unsigned cap);

/** fixture_settings_default() - the settings service_setup() installed. */
ServiceSettings fixture_settings_default(void);

/* Saver changes committed so far (the saver is never started). */
unsigned fixture_commits(Fixture *f);

/* ---- the tree, through the core ------------------------------------------ */

/** tree_create() - create @path owned by @owner through the core, no service involved. */
void tree_create(Fixture *f, const char *path, uid_t owner);

/** tree_set_max() - set @path's max through the core. */
void tree_set_max(Fixture *f, const char *path, uint64_t bytes);

/** tree_exists() - is there a group at @path now? */
bool tree_exists(Fixture *f, const char *path);

/** tree_info() - an exact read of @path, which must exist. */
MemGroupInfo tree_info(Fixture *f, const char *path);

/** tree_usage() - @path's current usage, exact. */
uint64_t tree_usage(Fixture *f, const char *path);

/* ---- refusals ----------------------------------------------------------- */

void assert_refused_at(int r, const Refusal *rf, int error, const char *file, int line, const char *fmt, ...)
        __attribute__((format(printf, 6, 7)));

/*
 * The call returned @error, and @rf carries the same errno and exactly the
 * printf-formatted words: what both transports send.
 */
#define assert_refused(r, rf, error, ...)                                                                    \
        assert_refused_at((r), (rf), (error), __FILE__, __LINE__, __VA_ARGS__)

/** assert_not_refused() - the call returned >= 0 and @rf is still empty. */
#define assert_not_refused(r, rf) assert_not_refused_at((r), (rf), __FILE__, __LINE__)
void assert_not_refused_at(int r, const Refusal *rf, const char *file, int line);

/* ---- requests ----------------------------------------------------------- */

/** session_bytes() - a session charge of @bytes anon to @path (NULL: the attached group). */
ServiceCharge session_bytes(const char *path, uint64_t bytes);

/** kept_bytes() - a kept charge of @bytes anon on @path. */
ServiceCharge kept_bytes(const char *path, uint64_t bytes);

/** limits_max() - a MemLimits setting max only. */
MemLimits limits_max(uint64_t max);

/* What a read (ServiceGroupFn) was given. */
#define READS_MAX 32
typedef struct Reads {
        char paths[READS_MAX][RECORDED_PATH_MAX];
        MemGroupInfo info[READS_MAX];
        bool had_info[READS_MAX];
        size_t n;
        int fail_with; /* returned from the call numbered fail_at (0: never) */
        size_t fail_at;
} Reads;

/** reads_collect() - a ServiceGroupFn recording into the Reads @userdata. */
int reads_collect(void *userdata, const char *path, const MemGroupInfo *info);

/** reads_has() - was @path among the groups read? */
bool reads_has(const Reads *r, const char *path);

/* ---- stock pages -------------------------------------------------------- */

/**
 * stock_memfd() - a memfd of @size bytes, sealed against shrink, grow and
 * seal when @sealed. The caller closes it.
 */
int stock_memfd(size_t size, bool sealed);
