/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A model of HAMi-core's (libvgpu.so) accounting of device allocations,
 * for bench-cuda: a shared file of process slots, a limit check that sums
 * every slot, updates of the process's own slot, and a private list of
 * allocations. bench-cuda-hami.c says what is modelled and how.
 */

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How the limit check reads the slots. */
typedef enum HamiLock {
        HAMI_SEQLOCK,   /* each slot read under its seqlock, no lock taken */
        HAMI_SEMAPHORE, /* the sum under the file's process-shared semaphore */
} HamiLock;

/* One process's slot: one cache line, its usage counters in it. */
typedef struct HamiSlot {
        _Alignas(64) _Atomic uint64_t seqlock;
        _Atomic int32_t pid;
        _Atomic int32_t status;
        _Atomic uint64_t total;
        _Atomic uint64_t data_size;
} HamiSlot;

/* The shared file: the semaphore, the limit, and the slots. */
typedef struct HamiRegion {
        _Alignas(64) sem_t sem;
        _Atomic int32_t proc_num;
        uint64_t limit;
        HamiSlot procs[];
} HamiRegion;

typedef struct HamiEntry HamiEntry;

/* A process's own side: its mutex, its cached slot, its list. */
typedef struct HamiProc {
        HamiRegion *region;
        HamiSlot *my_slot;
        HamiLock lock;
        pthread_mutex_t mutex;
        HamiEntry *head, *tail;
        uint64_t listed;
        uint64_t fake; /* the last fake address handed out, in pages */
} HamiProc;

/* Makes the allocation of @bytes; its address into @ret_ptr. Return: 0, or < 0. */
typedef int (*HamiAllocFn)(void *userdata, uint64_t bytes, uint64_t *ret_ptr);
/* Frees @ptr. Return: 0, or < 0. */
typedef int (*HamiFreeFn)(void *userdata, uint64_t ptr);

/**
 * hami_region_new() - the shared file of @nslots slots (a memfd mapped
 * MAP_SHARED, so that processes forked after it share it), its semaphore
 * initialised process-shared, with @limit bytes per device. Slots are
 * given fake pids and a little usage each, as other processes' slots.
 * Return: the mapping, or NULL (errno set).
 */
HamiRegion *hami_region_new(unsigned nslots, uint64_t limit);

/** hami_region_free() - unmap a region of @nslots slots. Return: NULL. */
HamiRegion *hami_region_free(HamiRegion *r, unsigned nslots);

/**
 * hami_proc_init() - the calling process takes slot @slot of @r (its pid
 * written there) and readies its private side with @lock's limit check.
 * Return: 0, or -EINVAL (no such slot).
 */
int hami_proc_init(HamiProc *p, HamiRegion *r, unsigned slot, HamiLock lock);

/** hami_proc_done() - free what is still listed (without freeing it in a driver). */
void hami_proc_done(HamiProc *p);

/**
 * hami_alloc() - HAMi's allocation path for @bytes: the limit check over
 * every slot, the usage added to the process's slot, @alloc (NULL: a fake
 * address, the accounting alone), the allocation listed. One thread per
 * HamiProc at a time or several: the private mutex serialises them.
 * Return: 0; -EDQUOT past the limit; @alloc's error; -ENOMEM.
 */
int hami_alloc(HamiProc *p, uint64_t bytes, HamiAllocFn alloc, void *userdata, uint64_t *ret_ptr);

/**
 * hami_free() - HAMi's free path: @ptr found in the list and unlinked, its
 * usage taken from the process's slot, then @free_fn (NULL: none).
 * Return: 0; -ENOENT (not listed); @free_fn's error.
 */
int hami_free(HamiProc *p, uint64_t ptr, HamiFreeFn free_fn, void *userdata);

/** hami_usage() - the sum over every slot, as the limit check reads it. */
uint64_t hami_usage(HamiProc *p);
