/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bus peers
 *
 * On the socket the kernel tells who a client is once, at accept. On the
 * bus every method call names its sender (a unique name, never reused
 * while the bus runs), and the bus daemon tells who owns that name
 * (GetConnectionCredentials: the uid and pid it read with SO_PEERCRED when
 * the peer connected). Asking costs a round trip through the bus daemon,
 * so the answer is kept per unique name, for as long as the name exists:
 * a tree of BusPeer. When the peer leaves the bus it is forgotten, its
 * session with it: a charge made without keep belongs to the peer and
 * ends with it, exactly as a socket session's charges end with the
 * connection.
 *
 * Leaving is learnt from one match for the bus daemon's NameOwnerChanged,
 * added when the connection is made (bus_peers_watch()), and filtered
 * here against the tree: not one match per peer, as sd_bus_track would
 * add. The bus daemon bounds the match rules of one connection (512 on a
 * system bus) far below the peers it lets connect (256 per uid), so a
 * match per peer let two users fill memacctd's rules with idle peers, and
 * the next peer's AddMatch failure closed the connection.
 *
 * The match is in place before any peer can call (it is added before the
 * name is requested), and the bus daemon answers GetConnectionCredentials
 * only while the name exists: a peer that leaves before that answer is
 * refused, one that leaves after it has its NameOwnerChanged queued behind
 * the answer, dispatched once the peer is in the tree. Never remembered
 * forever.
 */

#include <search.h>
#include <stdlib.h>
#include <string.h>

#include "bus/error.h"
#include "bus/manager.h"
#include "bus/park.h"
#include "bus/peer.h"
#include "bus/reclaim.h"
#include "macro.h"
#include "base/log.h"
#include "base/procid.h"
#include "base/selfstats.h"

static int peer_compare(const void *a, const void *b) {
        return strcmp(((const BusPeer *) a)->name, ((const BusPeer *) b)->name);
}

/* Free @p, which is no longer (or never was) in the tree. */
static void peer_free(BusPeer *p) {
        if (!p)
                return;
        /* Its calls that wait go unanswered: nobody is there to answer. */
        bus_park_drop(p->manager, p);
        /* Releases everything the session holds. */
        p->peer = service_peer_free(p->peer);
        free(p->name);
        free(p);
        selfstats_connections_add(SERVICE_TRANSPORT_BUS, -1);
}

/* NameOwnerChanged: a unique name that lost its owner is a peer gone. */
static int on_name_owner_changed(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusManager *m = userdata;
        const char *name, *old_owner, *new_owner;
        BusPeer key, **found, *p;

        (void) error;
        if (sd_bus_message_read(msg, "sss", &name, &old_owner, &new_owner) < 0 || name[0] != ':' ||
            new_owner[0] != '\0')
                return 0;
        key.name = (char *) name;
        found = tfind(&key, &m->peers, peer_compare);
        if (!found)
                return 0;
        p = *found;
        log_debug("Bus peer %s (pid %d, uid %u) left%s", p->name, (int) p->peer->creds.pid,
                  (unsigned) p->peer->creds.uid, p->peer->session ? ": its session ends" : "");
        (void) tdelete(p, &m->peers, peer_compare);
        peer_free(p);
        return 0;
}

int bus_peers_watch(BusManager *m) {
        return sd_bus_match_signal(m->bus, NULL, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                   "org.freedesktop.DBus", "NameOwnerChanged", on_name_owner_changed, m);
}

/* The caller's uid and pid, as the bus daemon vouched for them. */
static int peer_creds(sd_bus_message *msg, const char *sender, PeerCreds *ret, sd_bus_error *error) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        const uint64_t need = SD_BUS_CREDS_EUID | SD_BUS_CREDS_PID;
        int r;

        r = sd_bus_query_sender_creds(msg, need, &creds);
        if (r < 0)
                return bus_fail(error, -EPERM, "cannot identify the caller %s: %s", sender, strerror(-r));
        /* Filled in from /proc, not vouched for by the bus daemon: racy
         * against pid reuse, so not good enough to authorise with. */
        if (sd_bus_creds_get_augmented_mask(creds) & need)
                return bus_fail(error, -EPERM, "cannot identify the caller %s: the bus daemon did not say",
                                sender);
        /* The bus daemon vouches for no gid. */
        *ret = (PeerCreds) { .transport = SERVICE_TRANSPORT_BUS, .gid = (gid_t) -1 };
        r = sd_bus_creds_get_euid(creds, &ret->uid);
        if (r >= 0)
                r = sd_bus_creds_get_pid(creds, &ret->pid);
        if (r < 0)
                return bus_fail(error, -EPERM, "cannot identify the caller %s: %s", sender, strerror(-r));
        /*
         * Which process that pid is, stamped now, when the peer is first
         * seen. libsystemd 252 asks the bus daemon for a pid only (a pidfd,
         * SD_BUS_CREDS_PIDFD, came with 256), so nothing ties the pid to
         * the process that connected. Now is as close as we get: the peer
         * sent this very call, so it ran a moment ago; only a peer that
         * exits right after it and has its pid reused before this line is
         * taken for the process that got the pid.
         */
        if (proc_instance_of_pid(ret->pid, &ret->instance) < 0)
                ret->instance = proc_instance_gone();
        return 0;
}

static int peer_new(BusManager *m, sd_bus_message *msg, const char *sender, BusPeer **ret,
                    sd_bus_error *error) {
        PeerCreds creds;
        Refusal rf;
        BusPeer *p;
        int r;

        r = peer_creds(msg, sender, &creds, error);
        if (r < 0)
                return r;
        p = calloc(1, sizeof(*p));
        if (!p)
                return bus_fail(error, -ENOMEM, "out of memory");
        p->manager = m;
        /* A bus "connection" is a client we know by its unique name. */
        selfstats_connections_add(SERVICE_TRANSPORT_BUS, 1);
        p->name = strdup(sender);
        if (!p->name) {
                peer_free(p);
                return bus_fail(error, -ENOMEM, "out of memory");
        }
        /* Events reach bus peers as broadcast signals; what is a peer's
         * alone is a reclaim request, a signal to it (reclaim.c). Its
         * session is opened by the first operation that needs one. */
        refusal_init(&rf);
        r = service_peer_new(m->service, &creds, &bus_reclaim_delivery, p, false, &p->peer, &rf);
        if (r < 0) {
                peer_free(p);
                return bus_refusal(error, &rf);
        }
        p->peer->reclaim.wake = bus_park_wake;
        p->peer->reclaim.wake_userdata = m;
        if (!tsearch(p, &m->peers, peer_compare)) {
                peer_free(p);
                return bus_fail(error, -ENOMEM, "out of memory");
        }
        log_debug("Bus peer %s is pid %d, uid %u", sender, (int) creds.pid, (unsigned) creds.uid);
        *ret = p;
        return 0;
}

BusPeer *bus_peer_find(BusManager *m, const char *sender) {
        BusPeer key, **found;

        if (!sender)
                return NULL;
        key.name = (char *) sender;
        found = tfind(&key, &m->peers, peer_compare);
        return found ? *found : NULL;
}

int bus_peer_get(BusManager *m, sd_bus_message *msg, BusPeer **ret, sd_bus_error *error) {
        const char *sender = sd_bus_message_get_sender(msg);
        BusPeer key, **found;

        /* Only a bus daemon names senders; a direct connection has no one
         * to vouch for its peer's uid here. */
        if (!sender)
                return bus_fail(error, -EPERM, "the caller has no bus name");
        key.name = (char *) sender;
        found = tfind(&key, &m->peers, peer_compare);
        if (found) {
                *ret = *found;
                return 0;
        }
        return peer_new(m, msg, sender, ret, error);
}

static void peer_free_node(void *p) {
        peer_free(p);
}

void bus_peers_free(BusManager *m) {
        tdestroy(m->peers, peer_free_node);
        m->peers = NULL;
}
