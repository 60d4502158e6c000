/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the files of the socket's request handling share (request.c, the
 * frame around every request and the one switch of operations;
 * request-regions.c, the operations on device memory regions): the
 * request in flight, and the handlers the switch calls. Nothing outside
 * daemon/sock/request*.c includes it.
 */

#include <stdbool.h>
#include <stddef.h>

#include "memacct.pb-c.h"
#include "sock/request.h"

/* One request in flight: its reply and what the reply points at. */
typedef struct Request {
        Service *svc;
        Peer *peer;
        Memacct__V1__Response resp;
        Refusal rf;
        /* One result per request, initialised only by the handler that
         * uses it (a GroupInfo alone is 248 bytes to clear, on every
         * charge). */
        union {
                Memacct__V1__HelloReply hr;
                Memacct__V1__GroupInfo gi;
                Memacct__V1__GroupList gl;
                Memacct__V1__ChargeReply cr;
                Memacct__V1__ReclaimReply reclaimed;
                Memacct__V1__MoveReply mr;
                Memacct__V1__AttachReply ar;
                Memacct__V1__ClientInfo ci;
                Memacct__V1__ImportReply ir;
                Memacct__V1__RuleList rl;
                Memacct__V1__SessionList sl;
                Memacct__V1__PruneReply pr;
                Memacct__V1__EvictReply er;
                struct {
                        Memacct__V1__ServerInfo si;
                        ServiceInfo info; /* the strings si points to */
                } info;
        } res;
        bool has_group; /* res.gi is filled: free its arrays */
        bool has_list;  /* res.gl is filled: free its items and their paths */
        bool has_rules; /* res.rl is filled: free its items and their strings */
        bool has_sessions; /* res.sl is filled: free its items and their strings */
        bool has_pruned; /* res.pr is filled: free its items and their strings */
        bool pruned_oom; /* a pruned group could not be listed */
        bool has_kept;     /* res.ir is filled: free its kept_limits */
        void *regions;     /* a RegionList and what it points at, in one block (request-regions.c) */
        size_t list_bytes;
        size_t list_cap; /* of a ListGroups page: the bytes its groups may take */
        char path[MEM_PATH_MAX + 1]; /* res.gi's or res.ar's path */
} Request;

/* The handlers of request-regions.c: each decodes, makes its one service call and encodes. */

/** request_on_set_reclaimable() - SetReclaimable; no result. Return: 0 or the refusal's errno. */
int request_on_set_reclaimable(Request *x, const Memacct__V1__SetReclaimable *m);

/** request_on_reclaim_done() - ReclaimDone; no result. Return: 0 or the refusal's errno. */
int request_on_reclaim_done(Request *x, const Memacct__V1__ReclaimDone *m);

/** request_on_reclaim() - Reclaim; a ReclaimReply. Return: 0, -EINPROGRESS (held) or the refusal's errno. */
int request_on_reclaim(Request *x, const Memacct__V1__Reclaim *m);

/** request_on_add_region() - AddRegion; no result. Return: 0 or the refusal's errno. */
int request_on_add_region(Request *x, const Memacct__V1__AddRegion *m);

/** request_on_remove_region() - RemoveRegion; no result. */
int request_on_remove_region(Request *x, const Memacct__V1__RemoveRegion *m);

/** request_on_list_regions() - ListRegions, answered with a RegionList in x->regions. */
int request_on_list_regions(Request *x);

/** request_on_transfer() - Transfer; no result. */
int request_on_transfer(Request *x, const Memacct__V1__Transfer *m);

/** request_on_evict_valuable() - EvictValuable, answered with an EvictReply. */
int request_on_evict_valuable(Request *x, const Memacct__V1__EvictValuable *m);
