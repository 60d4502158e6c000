/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The interposer's ledger (ledger.h): striped open-addressing tables
 * with linear probing and backward-shift deletion (no tombstones, so a
 * table that sees a billion allocations and frees never needs cleaning).
 */

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ledger.h"

#define STRIPES 64u
#define FIRST_SLOTS 64u

typedef struct Slot {
        uint64_t key; /* 0: empty (no allocation is at 0, and handles are never 0) */
        MaEntry e;
} Slot;

typedef struct Stripe {
        pthread_mutex_t lock;
        Slot *slots;
        uint32_t cap, n; /* cap: a power of two */
} Stripe;

static Stripe stripes[_MA_KIND_MAX][STRIPES];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init(void) {
        for (unsigned k = 0; k < _MA_KIND_MAX; k++)
                for (unsigned i = 0; i < STRIPES; i++)
                        pthread_mutex_init(&stripes[k][i].lock, NULL);
}

/* A 64-bit mixer (splitmix64's finaliser): device pointers are aligned
 * and close together, their low bits alike. */
static uint64_t mix(uint64_t x) {
        x ^= x >> 30;
        x *= UINT64_C(0xbf58476d1ce4e5b9);
        x ^= x >> 27;
        x *= UINT64_C(0x94d049bb133111eb);
        return x ^ (x >> 31);
}

static Stripe *stripe_of(MaKind kind, uint64_t h) {
        (void) pthread_once(&once, init);
        return &stripes[kind][h % STRIPES];
}

/* The slot of @key in @s, or the empty slot where it would go. */
static Slot *find(Stripe *s, uint64_t key, uint64_t h) {
        uint32_t mask = s->cap - 1, i = (uint32_t) (h / STRIPES) & mask;

        while (s->slots[i].key != 0 && s->slots[i].key != key)
                i = (i + 1) & mask;
        return &s->slots[i];
}

static int grow(Stripe *s) {
        uint32_t cap = s->cap ? s->cap * 2 : FIRST_SLOTS;
        Slot *old = s->slots, *slots = calloc(cap, sizeof(*slots));
        uint32_t old_cap = s->cap;

        if (!slots)
                return -ENOMEM;
        s->slots = slots;
        s->cap = cap;
        for (uint32_t i = 0; i < old_cap; i++)
                if (old[i].key != 0)
                        *find(s, old[i].key, mix(old[i].key)) = old[i];
        free(old);
        return 0;
}

int ma_ledger_put(MaKind kind, uint64_t key, const MaEntry *e) {
        uint64_t h = mix(key);
        Stripe *s = stripe_of(kind, h);
        Slot *slot;
        int r = 0;

        if (key == 0)
                return -EINVAL;
        pthread_mutex_lock(&s->lock);
        if ((s->n + 1) * 4 > s->cap * 3)
                r = grow(s);
        if (r == 0) {
                slot = find(s, key, h);
                if (slot->key == 0)
                        s->n++;
                slot->key = key;
                slot->e = *e;
        }
        pthread_mutex_unlock(&s->lock);
        return r;
}

/* Remove @slot from @s, shifting back the entries that probed past it. */
static void remove_slot(Stripe *s, Slot *slot) {
        uint32_t mask = s->cap - 1, hole = (uint32_t) (slot - s->slots);

        for (uint32_t i = (hole + 1) & mask; s->slots[i].key != 0; i = (i + 1) & mask) {
                uint32_t home = (uint32_t) (mix(s->slots[i].key) / STRIPES) & mask;

                /* Movable into the hole unless its home lies after the hole, cyclically up to i. */
                if (((i - home) & mask) >= ((i - hole) & mask)) {
                        s->slots[hole] = s->slots[i];
                        hole = i;
                }
        }
        s->slots[hole].key = 0;
        s->n--;
}

static bool lookup(MaKind kind, uint64_t key, MaEntry *ret, bool take) {
        uint64_t h = mix(key);
        Stripe *s = stripe_of(kind, h);
        bool found = false;
        Slot *slot;

        if (key == 0)
                return false;
        pthread_mutex_lock(&s->lock);
        if (s->cap > 0) {
                slot = find(s, key, h);
                if (slot->key == key) {
                        found = true;
                        *ret = slot->e;
                        if (take)
                                remove_slot(s, slot);
                }
        }
        pthread_mutex_unlock(&s->lock);
        return found;
}

bool ma_ledger_take(MaKind kind, uint64_t key, MaEntry *ret) {
        return lookup(kind, key, ret, true);
}

bool ma_ledger_get(MaKind kind, uint64_t key, MaEntry *ret) {
        return lookup(kind, key, ret, false);
}

void ma_ledger_reset(void) {
        for (unsigned k = 0; k < _MA_KIND_MAX; k++)
                for (unsigned i = 0; i < STRIPES; i++) {
                        Stripe *s = &stripes[k][i];

                        /* The parent's lock state is copied too: start afresh. */
                        pthread_mutex_init(&s->lock, NULL);
                        if (s->slots)
                                memset(s->slots, 0, s->cap * sizeof(*s->slots));
                        s->n = 0;
                }
}

void ma_ledger_for_each(MaKind kind, MaLedgerFn fn, void *userdata) {
        for (unsigned i = 0; i < STRIPES; i++) {
                Stripe *s = stripe_of(kind, i);
                Slot *copy = NULL;
                uint32_t n = 0;

                /* Copied, then called unlocked: @fn may take and put. */
                pthread_mutex_lock(&s->lock);
                if (s->n > 0 && (copy = malloc(s->n * sizeof(*copy))))
                        for (uint32_t j = 0; j < s->cap; j++)
                                if (s->slots[j].key != 0)
                                        copy[n++] = s->slots[j];
                pthread_mutex_unlock(&s->lock);
                for (uint32_t j = 0; j < n; j++)
                        fn(copy[j].key, &copy[j].e, userdata);
                free(copy);
        }
}
