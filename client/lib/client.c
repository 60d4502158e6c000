/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The handle: connecting, the synchronous call, errors, reconnection after a
 * daemon restart, and the charge stock's glue to the socket.
 *
 * One mutex per handle serialises everything that touches the socket; the
 * stock's fast path (client-stock.c) never takes it. A synchronous call
 * holds it from its write to its reply: replies come in request order, and
 * the replies of refills and returns sent earlier are dispatched on the way.
 *
 * Reconnection rebuilds the session the caller had: the same group, a new
 * stock page (the old one stays mapped until memacct_close(), since another
 * thread may still be reading it), the subscriptions, and a forced charge of
 * what the caller held per stat item (Stock.held: stock handed out plus
 * exact session charges). The old page's unused bytes are not replayed: the
 * old session, and what it held, died with the old daemon.
 *
 * A bus handle (client-bus.c) shares the handle and its error reporting;
 * each public call here tests m->bus once at its entry (the stocked calls:
 * once their fast path has failed, which on a bus handle it always does)
 * and hands over.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "client-internal.h"
#include "status.h"

static const char *const stat_names[STOCK_ITEMS] = {
        "anon", "file", "shmem", "kernel", "sock", "swap", "device", "other",
};

/* Error details, per thread: see memacct_last_error(). */
static __thread const memacct *err_owner;
static __thread char err_message[512];
static __thread char err_refused[1024];
static __thread bool err_has_refused;
static __thread int err_r;
static __thread bool err_connect_failed; /* the last error: a failed memacct_connect() */

const char *client_stat_name(unsigned item) {
        return item < STOCK_ITEMS ? stat_names[item] : NULL;
}

int client_error(const memacct *m, int r, const char *message, const char *refused_path) {
        err_owner = m;
        err_connect_failed = false;
        err_r = r;
        snprintf(err_message, sizeof(err_message), "%s",
                 message && *message ? message : strerror(-r));
        err_has_refused = refused_path && *refused_path;
        snprintf(err_refused, sizeof(err_refused), "%s", err_has_refused ? refused_path : "");
        return r;
}

int client_response_error(const memacct *m, const Response *resp) {
        int r;

        if (!resp->has_status || resp->status == MEMACCT__V1__STATUS__OK)
                return 0;
        r = status_to_errno((MemStatus) resp->status);
        return client_error(m, r, resp->message, resp->refused_path);
}

_public_ const char *memacct_last_error(memacct *m) {
        if (!m)
                return err_connect_failed ? err_message : NULL;
        return err_owner == m ? err_message : NULL;
}

_public_ const char *memacct_refused_path(memacct *m) {
        return m && err_owner == m && err_has_refused ? err_refused : NULL;
}

_public_ const char *memacct_stat_to_string(int item) {
        return item >= 0 ? client_stat_name((unsigned) item) : NULL;
}

_public_ int memacct_stat_from_string(const char *name) {
        if (!name || !*name)
                return MEMACCT_STAT_ANON;
        for (unsigned i = 0; i < STOCK_ITEMS; i++)
                if (strcmp(name, stat_names[i]) == 0)
                        return (int) i;
        return -EINVAL;
}

int client_wait_msec(const memacct *m) {
        /* 0 is "no timeout" to memacct_set_timeout(). */
        return m->timeout_msec > 0 ? (int) m->timeout_msec : -1;
}

typedef struct SyncSlot {
        Response *resp; /* the reply, owned by the caller once done */
        int r;          /* a transport error, when resp is NULL */
        bool done;
} SyncSlot;

static void sync_reply(const ConnPending *p, Response *resp, int r) {
        SyncSlot *slot = p->userdata;

        slot->resp = resp;
        slot->r = r;
        slot->done = true;
}

static bool sync_done(void *userdata) {
        return ((SyncSlot *) userdata)->done;
}

int client_call_locked(memacct *m, Request *req, int fd_pass, Response **ret) {
        SyncSlot slot = {};
        ConnPending p = { .done = sync_reply, .userdata = &slot };
        int r;

        r = conn_send(&m->conn, req, &p, fd_pass, client_wait_msec(m));
        if (r >= 0)
                r = conn_pump(&m->conn, client_wait_msec(m), sync_done, &slot);
        if (r < 0 && !slot.done)
                /* The slot lives on this stack: nothing may answer it later. */
                conn_break(&m->conn, r);
        if (!slot.done)
                return client_error(m, r < 0 ? r : -EIO, m->conn.proto_error, NULL);
        if (!slot.resp)
                return client_error(m, slot.r, m->conn.proto_error, NULL);
        r = client_response_error(m, slot.resp);
        if (r < 0 || !ret)
                memacct__v1__response__free_unpacked(slot.resp, NULL);
        else
                *ret = slot.resp;
        return r;
}

/* --- the charge stock's transport --- */

/* The errno of a reply's status, or the transport error @r without one. */
static int reply_errno(const Response *resp, int r) {
        return resp ? status_to_errno((MemStatus) resp->status) : r;
}

static void refill_reply(const ConnPending *p, Response *resp, int r) {
        uint64_t margin = UINT64_MAX;

        if (resp && resp->result_case == MEMACCT__V1__RESPONSE__RESULT_CHARGE &&
            resp->charge->has_margin)
                margin = resp->charge->margin;
        stock_refill_done(p->userdata, (unsigned) p->index, reply_errno(resp, r), margin);
        if (resp)
                memacct__v1__response__free_unpacked(resp, NULL);
}

static void return_reply(const ConnPending *p, Response *resp, int r) {
        stock_return_done(p->userdata, (unsigned) p->index, p->bytes, reply_errno(resp, r));
        if (resp)
                memacct__v1__response__free_unpacked(resp, NULL);
}

static int stock_op_send(memacct *m, bool refill, unsigned item, uint64_t bytes) {
        Memacct__V1__Charge charge = MEMACCT__V1__CHARGE__INIT;
        Memacct__V1__Uncharge uncharge = MEMACCT__V1__UNCHARGE__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;
        ConnPending p = {
                .done = refill ? refill_reply : return_reply,
                .userdata = &m->stock,
                .index = item,
                .bytes = bytes,
        };

        if (refill) {
                charge.has_bytes = charge.has_stock = true;
                charge.bytes = bytes;
                charge.stat = (char *) client_stat_name(item);
                charge.stock = true;
                req.op_case = MEMACCT__V1__REQUEST__OP_CHARGE;
                req.charge = &charge;
        } else {
                uncharge.has_bytes = true;
                uncharge.bytes = bytes;
                uncharge.stat = (char *) client_stat_name(item);
                req.op_case = MEMACCT__V1__REQUEST__OP_UNCHARGE;
                req.uncharge = &uncharge;
        }
        return conn_send(&m->conn, &req, &p, -1, client_wait_msec(m));
}

static int stock_op_refill_send(void *userdata, unsigned item, uint64_t bytes) {
        return stock_op_send(userdata, true, item, bytes);
}

static int stock_op_return_send(void *userdata, unsigned item, uint64_t bytes) {
        return stock_op_send(userdata, false, item, bytes);
}

static int stock_op_poll(void *userdata) {
        memacct *m = userdata;
        int r;

        if (m->conn.fd < 0)
                return -ECONNRESET;
        r = conn_pump(&m->conn, 0, NULL, NULL);
        return r < 0 ? r : 0;
}

static bool refill_answered(void *userdata) {
        return !atomic_load_explicit((_Atomic bool *) userdata, memory_order_relaxed);
}

static int stock_op_wait(void *userdata, unsigned item) {
        memacct *m = userdata;
        int r;

        r = conn_pump(&m->conn, client_wait_msec(m), refill_answered,
                      &m->stock.items[item].inflight);
        return r < 0 ? r : 0;
}

static int charge_locked(memacct *m, const char *path, uint64_t bytes, unsigned item,
                         unsigned flags, bool stock, memacct_charge_result *ret) {
        Memacct__V1__Charge charge = MEMACCT__V1__CHARGE__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;
        Response *resp = NULL;
        int r;

        charge.path = (char *) path;
        charge.has_bytes = true;
        charge.bytes = bytes;
        charge.stat = (char *) client_stat_name(item);
        charge.has_keep = charge.keep = !!(flags & MEMACCT_KEEP);
        charge.has_force = charge.force = !!(flags & MEMACCT_FORCE);
        charge.has_stock = charge.stock = stock;
        req.op_case = MEMACCT__V1__REQUEST__OP_CHARGE;
        req.charge = &charge;
        r = client_call_locked(m, &req, -1, &resp);
        if (r < 0)
                return r;
        if (ret) {
                *ret = (memacct_charge_result) { .margin = MEMACCT_UNLIMITED };
                if (resp->result_case == MEMACCT__V1__RESPONSE__RESULT_CHARGE) {
                        const Memacct__V1__ChargeReply *c = resp->charge;

                        ret->over_high = c->over_high;
                        ret->throttle_usec = c->throttle_usec;
                        ret->over_max = !!c->over_max;
                        if (c->has_margin)
                                ret->margin = c->margin;
                }
        }
        memacct__v1__response__free_unpacked(resp, NULL);
        return 0;
}

static int stock_op_charge_exact(void *userdata, unsigned item, uint64_t bytes,
                                 uint64_t *ret_margin) {
        memacct_charge_result res;
        int r;

        r = charge_locked(userdata, NULL, bytes, item, 0, false, &res);
        if (r >= 0)
                *ret_margin = res.margin;
        return r;
}

static void stock_op_lock(void *userdata) {
        pthread_mutex_lock(&((memacct *) userdata)->lock);
}

static bool stock_op_trylock(void *userdata) {
        return pthread_mutex_trylock(&((memacct *) userdata)->lock) == 0;
}

static void stock_op_unlock(void *userdata) {
        pthread_mutex_unlock(&((memacct *) userdata)->lock);
}

static uint64_t stock_op_now_nsec(void *userdata) {
        (void) userdata;
        return client_now_nsec();
}

static const StockOps stock_ops = {
        .refill_send = stock_op_refill_send,
        .return_send = stock_op_return_send,
        .poll = stock_op_poll,
        .wait = stock_op_wait,
        .charge_exact = stock_op_charge_exact,
        .lock = stock_op_lock,
        .trylock = stock_op_trylock,
        .unlock = stock_op_unlock,
        .now_nsec = stock_op_now_nsec,
};

/*
 * A new stock page for the current connection: a sealed 4 KiB memfd, mapped
 * shared, sent with StockSetup as SCM_RIGHTS in the same sendmsg() as the
 * frame. Lock held.
 */
static int stock_setup_locked(memacct *m) {
        Memacct__V1__StockSetup setup = MEMACCT__V1__STOCK_SETUP__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;
        _Atomic uint64_t *page;
        void **old;
        int fd, r;

        fd = memfd_create("memacct-stock", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                return client_error(m, -errno, "memfd_create() failed", NULL);
        if (ftruncate(fd, STOCK_PAGE_SIZE) < 0 ||
            fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
                r = -errno;
                close(fd);
                return client_error(m, r, "cannot seal the stock page", NULL);
        }
        page = mmap(NULL, STOCK_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (page == MAP_FAILED) {
                r = -errno;
                close(fd);
                return client_error(m, r, "cannot map the stock page", NULL);
        }
        req.op_case = MEMACCT__V1__REQUEST__OP_STOCK_SETUP;
        req.stock_setup = &setup;
        r = client_call_locked(m, &req, fd, NULL);
        close(fd);
        if (r < 0) {
                munmap((void *) page, STOCK_PAGE_SIZE);
                return r;
        }
        if (m->page) {
                old = realloc(m->old_pages, (m->n_old_pages + 1) * sizeof(void *));
                if (!old) {
                        munmap((void *) page, STOCK_PAGE_SIZE);
                        return client_error(m, -ENOMEM, NULL, NULL);
                }
                m->old_pages = old;
                m->old_pages[m->n_old_pages++] = (void *) m->page;
        }
        m->page = page;
        stock_set_page(&m->stock, page);
        m->stock_wanted = true;
        return 0;
}

/* --- connecting --- */

static int hello_locked(memacct *m) {
        Memacct__V1__Hello hello = MEMACCT__V1__HELLO__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;
        Response *resp = NULL;
        char agent[128];
        int r;

        snprintf(agent, sizeof(agent), "libmemacct/%s (%s)", MEMACCT_VERSION,
                 program_invocation_short_name);
        hello.has_version = true;
        hello.version = MEMACCT_PROTOCOL_VERSION;
        hello.agent = agent;
        req.op_case = MEMACCT__V1__REQUEST__OP_HELLO;
        req.hello = &hello;
        r = client_call_locked(m, &req, -1, &resp);
        if (r < 0)
                return r;
        if (resp->result_case != MEMACCT__V1__RESPONSE__RESULT_HELLO) {
                memacct__v1__response__free_unpacked(resp, NULL);
                return client_error(m, -EPROTO, "no HelloReply", NULL);
        }
        if (resp->hello->has_version && resp->hello->version != MEMACCT_PROTOCOL_VERSION) {
                char msg[96];

                snprintf(msg, sizeof(msg), "server speaks protocol version %u, not %u",
                         resp->hello->version, MEMACCT_PROTOCOL_VERSION);
                memacct__v1__response__free_unpacked(resp, NULL);
                return client_error(m, -EPROTONOSUPPORT, msg, NULL);
        }
        free(m->server);
        m->server = strdup(resp->hello->server ? resp->hello->server : "");
        m->pid = (pid_t) resp->hello->pid;
        m->conn.max_frame = resp->hello->has_max_frame ? resp->hello->max_frame : 0;
        if (resp->hello->has_charge_batch && resp->hello->charge_batch > 0) {
                /* The daemon's charge-batch caps refills. Written only when it
                 * changes (a reconnect to a reconfigured daemon). */
                uint64_t b = MAX(MIN(resp->hello->charge_batch, STOCK_MAX_BATCH), STOCK_MIN_BATCH);

                if (m->stock.max_batch != b)
                        m->stock.max_batch = b;
        }
        memacct__v1__response__free_unpacked(resp, NULL);
        return m->server ? 0 : client_error(m, -ENOMEM, NULL, NULL);
}

static int attach_locked(memacct *m, const char *path) {
        Memacct__V1__Attach attach = MEMACCT__V1__ATTACH__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;

        attach.path = (char *) path;
        req.op_case = MEMACCT__V1__REQUEST__OP_ATTACH;
        req.attach = &attach;
        return client_call_locked(m, &req, -1, NULL);
}

static int subscribe_locked(memacct *m, const char *path) {
        Memacct__V1__Subscribe sub = MEMACCT__V1__SUBSCRIBE__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;

        sub.path = (char *) path;
        req.op_case = MEMACCT__V1__REQUEST__OP_SUBSCRIBE;
        req.subscribe = &sub;
        return client_call_locked(m, &req, -1, NULL);
}

/*
 * Rebuild the session on a fresh connection. Return: 0 and the replay's
 * outcome in @ret_replay_r/@ret_replayed; or the error that broke the
 * rebuild before the replay (worth another attempt if the connection broke).
 */
static int session_rebuild(memacct *m, int *ret_replay_r, uint64_t *ret_replayed) {
        uint64_t replayed = 0;
        int r, replay_r = 0;

        r = conn_open(&m->conn, m->socket_path);
        if (r < 0)
                return r;
        r = hello_locked(m);
        if (r < 0)
                return r;
        if (m->attached) {
                r = attach_locked(m, m->attached);
                if (r < 0)
                        return r;
        }
        if (m->stock_wanted) {
                r = stock_setup_locked(m);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < m->n_subscriptions; i++) {
                r = subscribe_locked(m, m->subscriptions[i]);
                if (r < 0 && m->conn.fd < 0)
                        return r;
        }
        /* What the caller held, charged again; forced, since it was admitted
         * once and the caller is using it. Without the right to force (not
         * root, not the owner) it is tried as a plain charge. */
        for (unsigned i = 0; i < STOCK_ITEMS && m->attached; i++) {
                uint64_t held = stock_held(&m->stock, i);

                if (held == 0)
                        continue;
                r = charge_locked(m, NULL, held, i, MEMACCT_FORCE, false, NULL);
                if (r == -EPERM)
                        r = charge_locked(m, NULL, held, i, 0, false, NULL);
                if (r < 0 && m->conn.fd < 0)
                        return r;
                if (r < 0) {
                        /* Not held any more: forget it, or uncharges would fail. */
                        (void) stock_note_uncharged(&m->stock, i, held);
                        if (replay_r == 0)
                                replay_r = r;
                        continue;
                }
                replayed += held;
        }
        *ret_replay_r = replay_r;
        *ret_replayed = replayed;
        return 0;
}

int client_ensure_connected(memacct *m) {
        unsigned delay_msec = 20;
        uint64_t replayed = 0;
        int r = -ECONNRESET, replay_r = 0;

        if (m->conn.fd >= 0)
                return 0;
        if (m->reconnect_attempts == 0 || m->reconnecting)
                return client_error(m, -ECONNRESET, "connection to memacctd lost", NULL);

        m->reconnecting = true;
        /* The old session is gone, and with it the bytes of its page: a
         * thread consuming from it now takes nothing the daemon counts. */
        for (unsigned i = 0; i < STOCK_ITEMS; i++)
                (void) stock_take(&m->stock, i);

        for (unsigned attempt = 0; attempt < m->reconnect_attempts; attempt++) {
                if (attempt > 0) {
                        struct timespec ts = { .tv_sec = delay_msec / 1000,
                                               .tv_nsec = (long) (delay_msec % 1000) * 1000000 };

                        nanosleep(&ts, NULL);
                        delay_msec = MIN(delay_msec * 2, 1000u);
                }
                r = session_rebuild(m, &replay_r, &replayed);
                if (r >= 0)
                        break;
                if (m->conn.fd >= 0)
                        conn_break(&m->conn, -ECONNRESET);
                /* Refused for a reason a retry will not change. */
                if (r != -ECONNRESET && r != -ECONNREFUSED && r != -ENOENT && r != -ETIMEDOUT &&
                    r != -EPROTO && r != -EAGAIN)
                        break;
        }
        m->reconnecting = false;
        if (r < 0)
                return client_error(m, r == -ENOENT || r == -ECONNREFUSED ? -ECONNRESET : r,
                                    "connection to memacctd lost and not regained", NULL);
        m->reconnects++;
        if (m->reconnect_fn)
                m->reconnect_fn(m, replay_r, replayed, m->reconnect_userdata);
        return 0;
}

int client_call(memacct *m, Request *req, bool repeatable, Response **ret) {
        int r;

        pthread_mutex_lock(&m->lock);
        r = client_ensure_connected(m);
        if (r >= 0) {
                r = client_call_locked(m, req, -1, ret);
                /* Broken meanwhile (not by a timeout: the daemon may be
                 * stuck rather than gone). */
                if (r < 0 && m->conn.fd < 0 && r != -ETIMEDOUT) {
                        int k = client_ensure_connected(m);

                        if (k < 0)
                                r = k;
                        else if (repeatable)
                                r = client_call_locked(m, req, -1, ret);
                        else
                                r = client_error(m, -ECONNRESET,
                                                 "connection lost while the request was in flight; "
                                                 "it may or may not have been applied",
                                                 NULL);
                }
        }
        pthread_mutex_unlock(&m->lock);
        return r;
}

_public_ int memacct_default_socket(char **ret) {
        const char *e;
        char *s;

        if (!ret)
                return -EINVAL;
        e = secure_getenv("MEMACCT_SOCKET");
        if (e && *e)
                s = strdup(e);
        else if (geteuid() != 0 && (e = secure_getenv("XDG_RUNTIME_DIR")) && e[0] == '/') {
                if (asprintf(&s, "%s/memacctd/memacctd.sock", e) < 0)
                        s = NULL;
        } else if (geteuid() != 0)
                /* Where an unprivileged memacctd without XDG_RUNTIME_DIR
                 * puts its socket: the current directory. */
                s = strdup("memacctd.sock");
        else
                s = strdup("/run/memacctd/memacctd.sock");
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

/* An unsolicited frame with a result. Lock held: the connection reads
 * only for a caller that holds it. */
static void on_frame(void *userdata, Response *resp) {
        memacct *m = userdata;

        if (resp->result_case == MEMACCT__V1__RESPONSE__RESULT_EVENT) {
                const Memacct__V1__Event *ev = resp->event;

                event_queue_push(&m->events, ev->path ? ev->path : "", ev->name ? ev->name : "",
                                 ev->count);
        }
        /* Someone moved our session: a replay after a reconnect must
         * re-attach there, not where we last attached. */
        if (resp->result_case == MEMACCT__V1__RESPONSE__RESULT_MOVED && resp->moved->path) {
                char *copy = strdup(resp->moved->path);

                if (copy) {
                        free(m->attached);
                        m->attached = copy;
                }
        }
        memacct__v1__response__free_unpacked(resp, NULL);
}

memacct *client_new(void) {
        memacct *m;

        /* The stock's fields are laid out by cache line: keep them so. */
        m = cacheline_alloc(sizeof(*m));
        if (!m)
                return NULL;
        memset(m, 0, sizeof(*m));
        pthread_mutex_init(&m->lock, NULL);
        conn_init(&m->conn, on_frame, m);
        m->timeout_msec = CLIENT_DEFAULT_TIMEOUT_MSEC;
        m->reconnect_attempts = CLIENT_DEFAULT_RECONNECT;
        stock_init(&m->stock, &stock_ops, m, 0);
        return m;
}

int client_bus_unsupported(const memacct *m, const char *what) {
        char msg[128];

        snprintf(msg, sizeof(msg), "%s has no D-Bus form: use the socket", what);
        return client_error(m, -EOPNOTSUPP, msg, NULL);
}

_public_ int memacct_connect(const char *path, memacct **ret) {
        memacct *m;
        int r;

        if (!ret)
                return -EINVAL;
        m = client_new();
        if (!m)
                return -ENOMEM;
        if (path)
                m->socket_path = strdup(path);
        else if (memacct_default_socket(&m->socket_path) < 0)
                m->socket_path = NULL;
        if (!m->socket_path) {
                memacct_close(m);
                return -ENOMEM;
        }

        pthread_mutex_lock(&m->lock);
        r = conn_open(&m->conn, m->socket_path);
        if (r < 0)
                r = client_error(m, r, NULL, NULL);
        else
                r = hello_locked(m);
        pthread_mutex_unlock(&m->lock);
        if (r < 0) {
                memacct_close(m);
                /* The handle is gone; its error stays readable through
                 * memacct_last_error(NULL). */
                err_owner = NULL;
                err_connect_failed = true;
                return r;
        }
        *ret = m;
        return 0;
}

_public_ memacct *memacct_close(memacct *m) {
        if (!m)
                return NULL;
        if (m->bus)
                m->bus->close(m);
        conn_done(&m->conn);
        if (m->page)
                munmap((void *) m->page, STOCK_PAGE_SIZE);
        for (size_t i = 0; i < m->n_old_pages; i++)
                munmap(m->old_pages[i], STOCK_PAGE_SIZE);
        free(m->old_pages);
        event_queue_done(&m->events);
        for (size_t i = 0; i < m->n_subscriptions; i++)
                free(m->subscriptions[i]);
        free(m->subscriptions);
        free(m->attached);
        free(m->server);
        free(m->socket_path);
        pthread_mutex_destroy(&m->lock);
        if (err_owner == m)
                err_owner = NULL;
        free(m);
        return NULL;
}

_public_ const char *memacct_server(memacct *m) {
        return m && m->server ? m->server : "";
}

_public_ pid_t memacct_peer_pid(memacct *m) {
        return m ? m->pid : 0;
}

_public_ int memacct_set_timeout(memacct *m, unsigned timeout_msec) {
        if (!m)
                return -EINVAL;
        pthread_mutex_lock(&m->lock);
        m->timeout_msec = MIN(timeout_msec, (unsigned) INT32_MAX);
        pthread_mutex_unlock(&m->lock);
        return 0;
}

_public_ int memacct_set_reconnect(memacct *m, unsigned attempts) {
        if (!m)
                return -EINVAL;
        pthread_mutex_lock(&m->lock);
        m->reconnect_attempts = attempts;
        pthread_mutex_unlock(&m->lock);
        return 0;
}

_public_ int memacct_set_reconnect_callback(memacct *m, memacct_reconnect_fn fn, void *userdata) {
        if (!m)
                return -EINVAL;
        pthread_mutex_lock(&m->lock);
        m->reconnect_fn = fn;
        m->reconnect_userdata = userdata;
        pthread_mutex_unlock(&m->lock);
        return 0;
}

_public_ unsigned memacct_reconnect_count(memacct *m) {
        unsigned n;

        if (!m)
                return 0;
        pthread_mutex_lock(&m->lock);
        n = m->reconnects;
        pthread_mutex_unlock(&m->lock);
        return n;
}

/* --- session, charges and the stock --- */

static bool no_refill_inflight(void *userdata) {
        Stock *s = userdata;

        for (unsigned i = 0; i < STOCK_ITEMS; i++)
                if (atomic_load_explicit(&s->items[i].inflight, memory_order_relaxed))
                        return false;
        return true;
}

/* drain_stock(): give the whole page back and wait for the replies. Lock held. */
static int stock_drain_locked(memacct *m) {
        int r;

        if (!m->page)
                return 0;
        r = conn_pump(&m->conn, client_wait_msec(m), no_refill_inflight, &m->stock);
        if (r < 0)
                return client_error(m, r, m->conn.proto_error, NULL);
        for (unsigned i = 0; i < STOCK_ITEMS; i++) {
                Memacct__V1__Uncharge uncharge = MEMACCT__V1__UNCHARGE__INIT;
                Request req = MEMACCT__V1__REQUEST__INIT;
                uint64_t v = stock_take(&m->stock, i);

                if (v == 0)
                        continue;
                uncharge.has_bytes = true;
                uncharge.bytes = v;
                uncharge.stat = (char *) client_stat_name(i);
                req.op_case = MEMACCT__V1__REQUEST__OP_UNCHARGE;
                req.uncharge = &uncharge;
                r = client_call_locked(m, &req, -1, NULL);
                /* -ERANGE: a drain by the daemon got there first. */
                if (r < 0 && r != -ERANGE)
                        return r;
        }
        return 0;
}

_public_ int memacct_stock_drain(memacct *m) {
        int r;

        if (!m)
                return -EINVAL;
        if (m->bus)
                return client_bus_unsupported(m, "the charge stock");
        pthread_mutex_lock(&m->lock);
        r = client_ensure_connected(m);
        if (r >= 0)
                r = stock_drain_locked(m);
        pthread_mutex_unlock(&m->lock);
        return r;
}

_public_ int memacct_stock_get(memacct *m, int item, uint64_t *ret_stocked, uint64_t *ret_batch) {
        if (!m || item < 0 || item >= STOCK_ITEMS)
                return -EINVAL;
        if (m->bus)
                return client_bus_unsupported(m, "the charge stock");
        if (!atomic_load_explicit(&m->stock.page, memory_order_acquire))
                return -ENXIO;
        if (ret_stocked)
                *ret_stocked = stock_peek(&m->stock, (unsigned) item);
        if (ret_batch) {
                pthread_mutex_lock(&m->lock);
                *ret_batch = m->stock.items[item].batch;
                pthread_mutex_unlock(&m->lock);
        }
        return 0;
}

_public_ int memacct_attach(memacct *m, const char *path) {
        char *copy;
        int r;

        if (!m || !path)
                return -EINVAL;
        if (m->bus)
                return m->bus->attach(m, path);
        copy = strdup(path);
        if (!copy)
                return -ENOMEM;
        pthread_mutex_lock(&m->lock);
        r = client_ensure_connected(m);
        if (r >= 0)
                r = stock_drain_locked(m);
        if (r >= 0) {
                r = attach_locked(m, path);
                if (r < 0 && m->conn.fd < 0 && client_ensure_connected(m) >= 0)
                        r = attach_locked(m, path);
        }
        if (r >= 0) {
                free(m->attached);
                m->attached = TAKE_PTR(copy);
        }
        pthread_mutex_unlock(&m->lock);
        free(copy);
        return r;
}

static bool is_transport_error(memacct *m, int r) {
        return r < 0 && m->conn.fd < 0 && r != -ENOMEM;
}

_public_ int memacct_charge(memacct *m, const char *path, uint64_t bytes, int item, unsigned flags,
                            memacct_charge_result *ret) {
        bool session = !path && !(flags & MEMACCT_KEEP);
        int r;

        if (!m || item < 0 || item >= STOCK_ITEMS || (flags & ~(MEMACCT_KEEP | MEMACCT_FORCE)))
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if ((flags & MEMACCT_KEEP) && !path)
                return client_error(m, -EINVAL, "a kept charge needs a path", NULL);
        if (m->bus)
                return m->bus->charge(m, path, bytes, (unsigned) item, flags, ret);

        pthread_mutex_lock(&m->lock);
        for (unsigned attempt = 0;; attempt++) {
                memacct_charge_result res;

                r = client_ensure_connected(m);
                if (r < 0)
                        break;
                r = charge_locked(m, path, bytes, (unsigned) item, flags, false, &res);
                if (r >= 0) {
                        if (session) {
                                stock_note_charged(&m->stock, (unsigned) item, bytes);
                                stock_note_margin(&m->stock, res.margin);
                        }
                        if (ret)
                                *ret = res;
                        break;
                }
                if (!is_transport_error(m, r) || r == -ETIMEDOUT || attempt > 0)
                        break;
                if (!session) {
                        /* A kept charge may have been persisted before the break. */
                        r = client_ensure_connected(m);
                        if (r >= 0)
                                r = client_error(m, -ECONNRESET,
                                                 "connection lost while the charge was in flight; "
                                                 "it may or may not have been applied",
                                                 NULL);
                        break;
                }
        }
        pthread_mutex_unlock(&m->lock);
        return r;
}

_public_ int memacct_uncharge(memacct *m, const char *path, uint64_t bytes, int item,
                              unsigned flags) {
        Memacct__V1__Uncharge uncharge = MEMACCT__V1__UNCHARGE__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;
        bool session = !path && !(flags & MEMACCT_KEEP);
        int r;

        if (!m || item < 0 || item >= STOCK_ITEMS || (flags & ~MEMACCT_KEEP))
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if ((flags & MEMACCT_KEEP) && !path)
                return client_error(m, -EINVAL, "a kept uncharge needs a path", NULL);
        if (m->bus)
                return m->bus->uncharge(m, path, bytes, (unsigned) item, flags);
        uncharge.path = (char *) path;
        uncharge.has_bytes = true;
        uncharge.bytes = bytes;
        uncharge.stat = (char *) client_stat_name((unsigned) item);
        uncharge.has_keep = uncharge.keep = !!(flags & MEMACCT_KEEP);
        req.op_case = MEMACCT__V1__REQUEST__OP_UNCHARGE;
        req.uncharge = &uncharge;

        /* A session uncharge is repeatable: after a restart the replay
         * charged it again, so releasing it again is right. */
        r = client_call(m, &req, session, NULL);
        if (r >= 0 && session)
                (void) stock_note_uncharged(&m->stock, (unsigned) item, bytes);
        return r;
}

_public_ int memacct_charge_stocked(memacct *m, uint64_t bytes, int item) {
        int r;

        if (_unlikely_(!m || item < 0 || item >= STOCK_ITEMS))
                return client_error(m, -EINVAL, "invalid argument", NULL);
        r = stock_charge(&m->stock, (unsigned) item, bytes);
        if (_likely_(r >= 0))
                return r;

        /* The slow path. A bus handle never has a page, so it always
         * arrives here, and stops. */
        if (m->bus)
                return client_bus_unsupported(m, "the charge stock");
        /* Not set up yet, or the connection broke: fix that, and try again. */
        for (unsigned attempt = 0; attempt < 2; attempt++) {
                bool retry = false;

                pthread_mutex_lock(&m->lock);
                if (!atomic_load_explicit(&m->stock.page, memory_order_relaxed)) {
                        r = client_ensure_connected(m);
                        if (r >= 0)
                                r = stock_setup_locked(m);
                        retry = r >= 0;
                } else if (r == -ENXIO)
                        retry = true; /* another thread set it up meanwhile */
                else if (is_transport_error(m, r) && r != -ETIMEDOUT) {
                        r = client_ensure_connected(m);
                        retry = r >= 0;
                }
                pthread_mutex_unlock(&m->lock);
                if (!retry)
                        break;
                r = stock_charge(&m->stock, (unsigned) item, bytes);
                if (r >= 0)
                        break;
        }
        /* The exact charge recorded its reply's error; a transport error
         * deeper down was not. */
        if (r < 0 && (err_owner != m || err_r != r))
                client_error(m, r, NULL, NULL);
        return r;
}

_public_ int memacct_uncharge_stocked(memacct *m, uint64_t bytes, int item) {
        int r;

        if (_unlikely_(!m || item < 0 || item >= STOCK_ITEMS))
                return client_error(m, -EINVAL, "invalid argument", NULL);
        r = stock_uncharge(&m->stock, (unsigned) item, bytes);
        if (_likely_(r >= 0))
                return r;
        if (m->bus)
                return client_bus_unsupported(m, "the charge stock");
        if (r == -ENXIO)
                /* Never set up: what the caller holds was charged exactly. */
                return memacct_uncharge(m, NULL, bytes, item, 0);
        if (r == -ERANGE)
                return client_error(m, r, "uncharge beyond what the session holds", NULL);
        /* The surplus return found the connection broken: the bytes are out
         * of the page and the session that held them is gone; the caller's
         * uncharge itself is done. Rebuild the session now. */
        pthread_mutex_lock(&m->lock);
        if (is_transport_error(m, r))
                r = client_ensure_connected(m);
        pthread_mutex_unlock(&m->lock);
        return r < 0 ? r : 0;
}
