/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reclaim over D-Bus (memacct-reclaim.h on a bus handle): SetReclaimable,
 * ReclaimDone and Reclaim, and the ReclaimRequest signal the daemon sends
 * to the one peer it asks, served as the socket serves its frame.
 *
 * A request is a signal with a destination: the bus delivers it to us
 * whatever our match rules say, and so it would any peer's signal of the
 * same name sent to us. sd-bus cannot tell a well-known sender from
 * another peer locally (it lets every unique sender through a match on a
 * well-known name), so a request counts only when its sender is the
 * daemon's unique name, as the reply to our last SetReclaimable gave it:
 * nobody else can make the callback give memory back.
 *
 * The match is dispatched by whichever call runs sd_bus_process() with
 * the lock held (memacct_process(), memacct_next_event(), a group list);
 * it only queues the request on the handle (client_reclaim_ask_queue()).
 * memacct_process() and memacct_next_event() serve the queue without the
 * lock (client_reclaim_serve()), each callback then ReclaimDone, as on the
 * socket. A call of this handle that waits for a round (a charge held at a
 * max, a Reclaim, a max set below usage) holds the lock as a socket call
 * does; the daemon serves none of this peer's calls meanwhile, its
 * ReclaimDone included, so serving sooner would gain nothing.
 *
 * memacct_fd() is an epoll descriptor of the bus fd and an eventfd,
 * notify_fd: any call of the handle may read a request off the bus fd
 * into sd-bus's queue, where an event loop's poll() cannot see it, so
 * every call kicks notify_fd on its way out while anything waits there
 * (bus_unlock()), and memacct_process() empties it before it looks.
 * Invariant: poll_fd and notify_fd are both open or both -1, opened under
 * the lock by the first memacct_fd(), closed by memacct_close().
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "client-bus-conn.h"
#include "client-bus-reclaim.h"
#include "client-deadline.h"
#include "client-error.h"
#include "client-reclaim.h"
#include "client-regions.h"
#include "macro.h"

/* The region argument: "" is memory on the bus, as NULL or "memory" is here. */
static const char *region_arg(const char *region) {
        return client_region_is_memory(region) ? "" : region;
}

/* ReclaimRequest (t id, s region, t bytes). Inside sd_bus_process(): lock held. */
static int on_request(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        memacct *m = userdata;
        const char *sender = sd_bus_message_get_sender(msg), *region;
        const char *daemon = m->bus_conn->reclaim_sender;
        uint64_t id, bytes;

        (void) ret_error;
        if (!sender || !daemon || strcmp(sender, daemon) != 0)
                return 0; /* not the daemon's: see the top of the file */
        if (sd_bus_message_read(msg, "tst", &id, &region, &bytes) < 0)
                return 0; /* not ours to judge: ignore it */
        client_reclaim_ask_queue(m, id, region, bytes);
        return 0;
}

/* The daemon's unique name, from @reply to SetReclaimable. Lock held. */
static int note_sender_locked(memacct *m, sd_bus_message *reply) {
        BusConn *c = m->bus_conn;
        const char *sender = sd_bus_message_get_sender(reply);
        char *copy;

        if (!sender || (c->reclaim_sender && strcmp(c->reclaim_sender, sender) == 0))
                return 0;
        copy = strdup(sender);
        if (!copy)
                return client_error(m, -ENOMEM, NULL, NULL);
        free(c->reclaim_sender);
        c->reclaim_sender = copy;
        return 0;
}

int bus_set_reclaimable(memacct *m, const char *region, int item, memacct_reclaim_fn fn, void *userdata) {
        BusConn *c = m->bus_conn;
        sd_bus_message *reply = NULL;
        int r = 0;

        bus_lock(m);
        /* The match first: a request the daemon sends as soon as it took
         * the declaration is then ours. */
        if (fn && !c->reclaim_match) {
                r = sd_bus_match_signal(c->bus, &c->reclaim_match, BUS_NAME, BUS_PATH, BUS_MANAGER,
                                        "ReclaimRequest", on_request, m);
                if (r < 0)
                        r = bus_fail(m, NULL, r);
        }
        if (r >= 0)
                r = bus_manager_call_locked(m, "SetReclaimable", &reply, "ssb",
                                            item < 0 ? region_arg(region) : "",
                                            item < 0 ? "" : memacct_stat_to_string(item), (int) !!fn);
        if (r >= 0)
                r = note_sender_locked(m, reply);
        if (r >= 0)
                r = client_reclaim_note_locked(m, region, item, fn, userdata);
        sd_bus_message_unref(reply);
        bus_unlock(m);
        return r;
}

int bus_reclaim_done(memacct *m, uint64_t id, bool cannot) {
        int r;

        bus_lock(m);
        r = bus_manager_call_locked(m, "ReclaimDone", NULL, "tb", id, (int) cannot);
        bus_unlock(m);
        return r;
}

/* Open poll_fd and notify_fd (see the top of the file). Lock held. Return: poll_fd, or a recorded error. */
static int poll_fd_open_locked(memacct *m) {
        BusConn *c = m->bus_conn;
        struct epoll_event ev = { .events = EPOLLIN };
        int bus_fd, notify_fd, poll_fd, r;

        bus_fd = sd_bus_get_fd(c->bus);
        if (bus_fd < 0)
                return bus_fail(m, NULL, bus_fd);
        notify_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (notify_fd < 0)
                return client_error(m, -errno, "cannot make memacct_fd()'s eventfd", NULL);
        poll_fd = epoll_create1(EPOLL_CLOEXEC);
        if (poll_fd < 0) {
                r = -errno;
                close(notify_fd);
                return client_error(m, r, "cannot make memacct_fd()'s epoll", NULL);
        }
        ev.data.fd = bus_fd;
        r = epoll_ctl(poll_fd, EPOLL_CTL_ADD, bus_fd, &ev);
        if (r >= 0) {
                ev.data.fd = notify_fd;
                r = epoll_ctl(poll_fd, EPOLL_CTL_ADD, notify_fd, &ev);
        }
        if (r < 0) {
                r = -errno;
                close(poll_fd);
                close(notify_fd);
                return client_error(m, r, "cannot make memacct_fd()'s epoll", NULL);
        }
        c->notify_fd = notify_fd;
        c->poll_fd = poll_fd;
        return poll_fd;
}

int bus_fd(memacct *m) {
        BusConn *c = m->bus_conn;
        int r;

        bus_lock(m);
        r = c->poll_fd >= 0 ? c->poll_fd : poll_fd_open_locked(m);
        /* (Unlocking kicks notify_fd if something waits already.) */
        bus_unlock(m);
        return r;
}

/* Dispatch everything sd-bus has read or can read now. Lock held. Return: 0, or a recorded error. */
static int dispatch_locked(memacct *m) {
        int r;

        while ((r = sd_bus_process(m->bus_conn->bus, NULL)) > 0)
                ;
        return r < 0 ? bus_fail(m, NULL, r) : 0;
}

int bus_process(memacct *m, int timeout_msec) {
        BusConn *c = m->bus_conn;
        uint64_t deadline = client_deadline_nsec(timeout_msec);
        int r;

        bus_lock(m);
        for (;;) {
                int left;

                /* What notify_fd said is looked at now. */
                if (c->notify_fd >= 0) {
                        eventfd_t v;

                        (void) eventfd_read(c->notify_fd, &v);
                }
                r = dispatch_locked(m);
                if (r < 0)
                        break;
                if (m->n_reclaim_q > 0) {
                        /* Served without the lock: the callbacks use the handle. */
                        bus_unlock(m);
                        r = client_reclaim_serve(m);
                        if (r != 0)
                                return r;
                        /* Another thread served them: wait on. */
                        bus_lock(m);
                        continue;
                }
                left = client_deadline_left_msec(deadline);
                if (left == 0) {
                        r = 0;
                        break;
                }
                r = bus_sleep_locked(m, left);
                if (r < 0)
                        break;
        }
        bus_unlock(m);
        return r;
}

int bus_reclaim(memacct *m, const char *path, const char *region, uint64_t bytes, uint64_t *ret_released) {
        sd_bus_message *reply = NULL;
        uint64_t released = 0;
        int r;

        bus_lock(m);
        /* The reply comes once the round ended: up to the daemon's deadline. */
        r = bus_manager_call_locked(m, "Reclaim", &reply, "sst", path, region_arg(region), bytes);
        if (r >= 0 && sd_bus_message_read(reply, "t", &released) < 0)
                r = client_error(m, -EBADMSG, "malformed Reclaim reply", NULL);
        sd_bus_message_unref(reply);
        bus_unlock(m);
        if (r >= 0 && ret_released)
                *ret_released = released;
        return r;
}

void bus_reclaim_close(BusConn *c) {
        c->reclaim_match = sd_bus_slot_unref(c->reclaim_match);
        c->reclaim_sender = mfree(c->reclaim_sender);
        if (c->poll_fd >= 0)
                close(c->poll_fd);
        if (c->notify_fd >= 0)
                close(c->notify_fd);
        c->poll_fd = c->notify_fd = -1;
}
