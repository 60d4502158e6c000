/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A model of HAMi-core's accounting of device allocations (libvgpu.so),
 * built from its description, to be measured beside memacctd's charge
 * stock and interposer (bench-cuda.c, docs/performance.md). What it
 * models, and only that:
 *
 * - the usage lives in a file shared by every process of a container: a
 *   header (a process-shared semaphore, the slot count, the limit) and one
 *   slot per process, each a 64-byte cache line with a seqlock counter,
 *   the pid and the usage counters. Here the file is a memfd mapped
 *   MAP_SHARED before the measured processes fork, so that they share it
 *   as processes that map one file do;
 * - an allocation takes the process's private mutex, checks the limit by
 *   summing every slot's usage, adds its bytes to its own slot, makes the
 *   allocation and appends it to a private linked list;
 * - the sum reads each slot under its seqlock (HAMI_SEQLOCK, the current
 *   release: counter even and unchanged around the read, retried
 *   otherwise), or, as the 2025 release did, under the file's semaphore
 *   (HAMI_SEMAPHORE: sem_wait(), plain loads of every slot, sem_post());
 * - an update of the process's own slot, at an allocation and at a free,
 *   is a getpid() (the slot is found by it: the cached slot is checked to
 *   be in range and to hold that pid) and 4 atomic read-modify-writes:
 *   the seqlock to odd, the total, the data counter, the seqlock to even;
 * - a free takes the mutex, searches the list from its head for the
 *   address, unlinks it, takes its bytes from the slot, and frees.
 *
 * Where the release itself does more, the model does less, so that it
 * errs in HAMi's favour: the release's update calls getpid() three times
 * (its caller, the own-pid test, the slot lookup) where the model calls
 * it once; its list entry is two allocations where the model's is one;
 * its log macros and device-index mapping are left out.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench-cuda-hami.h"

_Static_assert(sizeof(HamiSlot) == 64, "a slot is one cache line");

/* Fake pids of the other processes' slots: above any pid_max. */
#define OTHER_PID_BASE 5000000
/* What each other process's slot says it holds. */
#define OTHER_USAGE (UINT64_C(1) << 20)

struct HamiEntry {
        uint64_t address;
        uint64_t length;
        HamiEntry *prev, *next;
};

static size_t region_size(unsigned nslots) {
        return sizeof(HamiRegion) + (size_t) nslots * sizeof(HamiSlot);
}

HamiRegion *hami_region_new(unsigned nslots, uint64_t limit) {
        size_t size = region_size(nslots);
        HamiRegion *r;
        int fd;

        if (nslots == 0) {
                errno = EINVAL;
                return NULL;
        }
        fd = memfd_create("bench-cuda-hami", MFD_CLOEXEC);
        if (fd < 0)
                return NULL;
        if (ftruncate(fd, (off_t) size) < 0) {
                close(fd);
                return NULL;
        }
        r = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd); /* the mapping keeps the file */
        if (r == MAP_FAILED)
                return NULL;
        if (sem_init(&r->sem, 1, 1) < 0) {
                munmap(r, size);
                return NULL;
        }
        r->limit = limit;
        for (unsigned i = 0; i < nslots; i++) {
                atomic_init(&r->procs[i].seqlock, 0);
                atomic_init(&r->procs[i].pid, (int32_t) (OTHER_PID_BASE + i));
                atomic_init(&r->procs[i].status, 1);
                atomic_init(&r->procs[i].total, OTHER_USAGE);
                atomic_init(&r->procs[i].data_size, OTHER_USAGE);
        }
        atomic_store_explicit(&r->proc_num, (int32_t) nslots, memory_order_release);
        return r;
}

HamiRegion *hami_region_free(HamiRegion *r, unsigned nslots) {
        if (r) {
                sem_destroy(&r->sem);
                munmap(r, region_size(nslots));
        }
        return NULL;
}

int hami_proc_init(HamiProc *p, HamiRegion *r, unsigned slot, HamiLock lock) {
        if (slot >= (unsigned) atomic_load_explicit(&r->proc_num, memory_order_acquire))
                return -EINVAL;
        *p = (HamiProc) { .region = r, .my_slot = &r->procs[slot], .lock = lock };
        pthread_mutex_init(&p->mutex, NULL);
        atomic_store_explicit(&r->procs[slot].total, 0, memory_order_relaxed);
        atomic_store_explicit(&r->procs[slot].data_size, 0, memory_order_relaxed);
        atomic_store_explicit(&r->procs[slot].pid, (int32_t) getpid(), memory_order_release);
        return 0;
}

void hami_proc_done(HamiProc *p) {
        while (p->head) {
                HamiEntry *e = p->head;

                p->head = e->next;
                free(e);
        }
        p->tail = NULL;
        p->listed = 0;
        pthread_mutex_destroy(&p->mutex);
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
        __asm__ __volatile__("pause" ::: "memory");
#elif defined(__aarch64__)
        __asm__ __volatile__("yield" ::: "memory");
#endif
}

/* One slot's total under its seqlock: an even counter unchanged around the read. */
static uint64_t slot_read_seqlock(HamiSlot *s) {
        uint64_t seq1, seq2, v;

        do {
                seq1 = atomic_load_explicit(&s->seqlock, memory_order_acquire);
                while (seq1 & 1) {
                        cpu_relax();
                        seq1 = atomic_load_explicit(&s->seqlock, memory_order_acquire);
                }
                v = atomic_load_explicit(&s->total, memory_order_acquire);
                atomic_thread_fence(memory_order_acquire);
                seq2 = atomic_load_explicit(&s->seqlock, memory_order_acquire);
        } while (seq1 != seq2);
        return v;
}

uint64_t hami_usage(HamiProc *p) {
        HamiRegion *r = p->region;
        int32_t n = atomic_load_explicit(&r->proc_num, memory_order_acquire);
        uint64_t sum = 0;

        if (p->lock == HAMI_SEQLOCK) {
                for (int32_t i = 0; i < n; i++)
                        sum += slot_read_seqlock(&r->procs[i]);
                return sum;
        }
        while (sem_wait(&r->sem) < 0 && errno == EINTR)
                ;
        /* Under the semaphore the slots are read as plain counters; relaxed
         * loads are what a plain load of an aligned word compiles to, and
         * the semaphore orders them against the updates it covers. */
        for (int32_t i = 0; i < n; i++)
                sum += atomic_load_explicit(&r->procs[i].total, memory_order_relaxed);
        sem_post(&r->sem);
        return sum;
}

/* The process's own slot, found by its pid: the cached one, checked. */
static HamiSlot *own_slot(HamiProc *p) {
        HamiRegion *r = p->region;
        int32_t pid = (int32_t) getpid();
        int32_t n = atomic_load_explicit(&r->proc_num, memory_order_acquire);
        HamiSlot *s = p->my_slot;

        if (s >= &r->procs[0] && s < &r->procs[n] && atomic_load_explicit(&s->pid, memory_order_acquire) == pid)
                return s;
        for (int32_t i = 0; i < n; i++)
                if (atomic_load_explicit(&r->procs[i].pid, memory_order_acquire) == pid)
                        return &r->procs[i];
        return NULL;
}

/* @delta bytes (two's complement for a free) into the own slot: 4 atomic updates. */
static void slot_update(HamiProc *p, uint64_t delta) {
        HamiSlot *s = own_slot(p);

        if (!s)
                return;
        atomic_fetch_add_explicit(&s->seqlock, 1, memory_order_release);
        atomic_fetch_add_explicit(&s->total, delta, memory_order_release);
        atomic_fetch_add_explicit(&s->data_size, delta, memory_order_release);
        atomic_fetch_add_explicit(&s->seqlock, 1, memory_order_release);
}

/* The fake address of an allocation the model makes no driver call for: a new one each time. */
static uint64_t fake_address(HamiProc *p) {
        return UINT64_C(0x7f0000000000) + ++p->fake * 4096u;
}

int hami_alloc(HamiProc *p, uint64_t bytes, HamiAllocFn alloc, void *userdata, uint64_t *ret_ptr) {
        HamiEntry *e;
        uint64_t ptr;
        int r = 0;

        pthread_mutex_lock(&p->mutex);
        if (hami_usage(p) + bytes > p->region->limit) {
                r = -EDQUOT;
                goto out;
        }
        slot_update(p, bytes);
        e = malloc(sizeof(*e));
        if (!e) {
                r = -ENOMEM;
                goto undo;
        }
        if (alloc)
                r = alloc(userdata, bytes, &ptr);
        else
                ptr = fake_address(p);
        if (r < 0) {
                free(e);
                goto undo;
        }
        *e = (HamiEntry) { .address = ptr, .length = bytes, .prev = p->tail };
        if (p->tail)
                p->tail->next = e;
        else
                p->head = e;
        p->tail = e;
        p->listed++;
        *ret_ptr = ptr;
        goto out;
undo:
        slot_update(p, -bytes);
out:
        pthread_mutex_unlock(&p->mutex);
        return r;
}

int hami_free(HamiProc *p, uint64_t ptr, HamiFreeFn free_fn, void *userdata) {
        HamiEntry *e;

        pthread_mutex_lock(&p->mutex);
        for (e = p->head; e && e->address != ptr; e = e->next)
                ;
        if (!e) {
                pthread_mutex_unlock(&p->mutex);
                return -ENOENT;
        }
        if (e->prev)
                e->prev->next = e->next;
        else
                p->head = e->next;
        if (e->next)
                e->next->prev = e->prev;
        else
                p->tail = e->prev;
        p->listed--;
        slot_update(p, -e->length);
        pthread_mutex_unlock(&p->mutex);
        free(e);
        /* The driver's free outside the mutex, as the release does. */
        return free_fn ? free_fn(userdata, ptr) : 0;
}
