/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The registry of peers and sessions, for every transport: a Peer is one
 * client connection (a socket connection, a bus peer's unique name), with
 * the identity its kernel or bus daemon vouched for, its core session
 * once it has one, its stock page and its event subscriptions. The
 * registry counts sessions, overall and per uid, and enforces the per-uid
 * cap ([limits] sessions-per-uid; root is never limited).
 *
 * A peer belongs to the transport thread that made it: it is used and
 * freed there only. The counts may be read from any thread.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "service/events.h"

typedef struct MemSession MemSession;
typedef struct Registry Registry;

/* Who a peer is, as the kernel (SO_PEERCRED) or the bus daemon said. */
typedef struct PeerCreds {
        pid_t pid;
        uid_t uid;
        gid_t gid; /* (gid_t) -1: not vouched for (the bus) */
        /* Which process had @pid (service/procid.h): the transport's
         * stamp. 0: none (in-process peers only; a transport always
         * gives one), and then the pid is all the identity there is. */
        uint64_t instance;
} PeerCreds;

typedef struct Peer {
        Registry *registry;
        PeerCreds creds;
        EventSubscriber subscriber; /* the session's userdata points here */
        MemSession *session;        /* NULL until peer_open_session() */
        void *stock_page;           /* mapped from the client; NULL: none */
        size_t stock_page_size;
        bool internal;              /* the daemon itself (service_daemon_peer()): no session */
} Peer;

/** registry_new() - an empty registry; peers' subscriptions go to @events. Return: 0, -ENOMEM. */
int registry_new(MemCore *core, Events *events, Registry **ret);

/** registry_free() - free a registry whose peers are all gone. */
Registry *registry_free(Registry *r);

/** registry_set_sessions_per_uid() - the per-uid cap for sessions opened from now on (0: none). */
void registry_set_sessions_per_uid(Registry *r, unsigned max);

/** registry_sessions_per_uid() - the cap in force (0: none); any thread. */
unsigned registry_sessions_per_uid(Registry *r);

/** registry_session_count() - sessions open now, on every transport; any thread. */
unsigned registry_session_count(Registry *r);

/**
 * registry_peer_new() - a peer, without a session yet.
 * @delivery: how events reach it (NULL: it receives none); @userdata is
 *            passed to it
 * Return: 0 or -ENOMEM.
 */
int registry_peer_new(Registry *r, const PeerCreds *creds, const EventDelivery *delivery, void *userdata,
                      Peer **ret);

/**
 * registry_peer_free() - the peer is gone: its subscriptions stop (no push
 * after this returns), its session ends and everything it holds is
 * uncharged, its stock page is unmapped. On the peer's thread, which is
 * registered with the core. Return: NULL.
 */
Peer *registry_peer_free(Peer *p);

/**
 * peer_open_session() - open @p's session if it has none (one of its
 * uid's sessions). On the peer's thread. Return: 0; -EUSERS (the uid's
 * sessions are used up); -ENOMEM.
 */
int peer_open_session(Peer *p);
