/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the interposer charged for each live allocation, found in O(1) by
 * what the program frees it with: a device pointer, a VMM handle, an
 * array, a pool. A free uncharges exactly what its allocation charged,
 * whatever the program says.
 *
 * A table per kind, each split in stripes by the key's hash, each stripe
 * an open-addressing table under its own mutex that doubles when 3/4
 * full. Why not liburcu's lock-free hash table: a reader would need a
 * registered RCU flavour in every thread of every CUDA program and a
 * call_rcu thread to free what is removed; an allocation is one short
 * critical section on one stripe of 64 here, and frees of a pointer by
 * two threads at once are the program's bug either way.
 */

#include <stdbool.h>
#include <stdint.h>

typedef enum MaKind {
        MA_KIND_PTR,   /* cuMemAlloc*, cuMemAllocManaged: the device pointer */
        MA_KIND_VMM,   /* cuMemCreate: the generic allocation handle */
        MA_KIND_ARRAY, /* cuArray*Create, cuMipmappedArrayCreate: the handle */
        MA_KIND_POOL,  /* a stream-ordered pool: its reserved bytes as charged */
        _MA_KIND_MAX,
} MaKind;

/* One allocation's charge. */
typedef struct MaEntry {
        uint64_t bytes; /* charged; 0: not charged (the daemon could not be reached, and that was allowed) */
        int8_t device;  /* the device ordinal the bytes went to */
} MaEntry;

/** ma_ledger_put() - record @e under @key of @kind (an existing one is replaced). Return: 0 or -ENOMEM. */
int ma_ledger_put(MaKind kind, uint64_t key, const MaEntry *e);

/** ma_ledger_take() - remove @key of @kind into @ret. Return: true when it was there. */
bool ma_ledger_take(MaKind kind, uint64_t key, MaEntry *ret);

/** ma_ledger_get() - @key of @kind into @ret, left in place. Return: true when it is there. */
bool ma_ledger_get(MaKind kind, uint64_t key, MaEntry *ret);

/** ma_ledger_reset() - forget everything, without locking (a forked child, before any other thread exists). */
void ma_ledger_reset(void);

/* The keys of @kind, one at a time, for a walk (pools on a reclaim); @fn gets the entry's copy. */
typedef void (*MaLedgerFn)(uint64_t key, const MaEntry *e, void *userdata);
void ma_ledger_for_each(MaKind kind, MaLedgerFn fn, void *userdata);
