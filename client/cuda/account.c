/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The interposer's session with the daemon (account.h; docs/cuda.md,
 * "Where a process is charged, and who decides").
 *
 * Connected on the first allocation, under a mutex, and then read
 * without it: the handle and the per-device stock items are published
 * with release stores. libmemacct's handle is safe to use from several
 * threads, and its stock makes a charge the page covers one
 * compare-and-swap.
 *
 * A daemon that cannot be reached is tried again at most once a second,
 * so that a program allocating in a loop does not connect in a loop.
 */

#include <errno.h>
#include <stdlib.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "account.h"
#include "config.h"
#include "gpu-region.h"
#include "ledger.h"
#include "memacct.h"
#include "real.h"
#include "reclaim.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static memacct *_Atomic session;
static uint64_t next_try_usec; /* under lock */
/* Per device: 0 not looked up yet; > 0 its stock item; < 0 why not (-errno). */
static _Atomic int items[MA_DEVICES_MAX];

static memacct *get_session(void);
static int region_name(int device, char *buf, size_t size);

static uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

/* Connect and attach. Lock held. */
static memacct *connect_locked(void) {
        const char *group = secure_getenv("MEMACCT_GROUP");
        const MaConfig *c = ma_config();
        memacct *m;
        int r;

        r = memacct_connect_unattached(c->socket, &m);
        if (r < 0)
                return NULL;
        (void) memacct_set_reconnect(m, 3);
        /* A group the environment names is a wish: the daemon grants it
         * only where this process may go; else the process goes where its
         * kernel cgroup and the placement rules put it. */
        r = group && *group ? memacct_attach(m, group) : -ENOENT;
        if (r < 0)
                r = memacct_attach(m, "auto");
        if (r < 0) {
                memacct_close(m);
                return NULL;
        }
        return m;
}

memacct *ma_session(void) {
        return get_session();
}

int ma_region_name(int device, char *buf, size_t size) {
        return region_name(device, buf, size);
}

static memacct *get_session(void) {
        memacct *m = atomic_load_explicit(&session, memory_order_acquire);
        uint64_t now;

        if (m)
                return m;
        pthread_mutex_lock(&lock);
        m = atomic_load_explicit(&session, memory_order_relaxed);
        now = now_usec();
        if (!m && now >= next_try_usec) {
                m = connect_locked();
                if (m)
                        atomic_store_explicit(&session, m, memory_order_release);
                else
                        next_try_usec = now + 1000000u;
        }
        pthread_mutex_unlock(&lock);
        return m;
}

int ma_region_of_pci(const char *pci, char *buf, size_t size) {
        gpu_region_name(pci, buf, size);
        return 0;
}

/* The region of @device: nvidia/<its PCI bus id, lower case>/vidmem. */
static int region_name(int device, char *buf, size_t size) {
        ma_cuDeviceGetPCIBusId_fn get = MA_REAL(cuDeviceGetPCIBusId);
        char pci[32];

        if (!get || get(pci, (int) sizeof(pci), device) != MA_CUDA_SUCCESS)
                return -ENODEV;
        return ma_region_of_pci(pci, buf, size);
}

static int device_item(memacct *m, int device) {
        char name[96];
        int item = atomic_load_explicit(&items[device], memory_order_acquire);

        if (item != 0)
                return item;
        item = region_name(device, name, sizeof(name));
        if (item == 0)
                item = memacct_stock_region(m, name);
        /* Two threads may both look it up: they find the same item. */
        atomic_store_explicit(&items[device], item == 0 ? -EINVAL : item, memory_order_release);
        return item;
}

/* The administrator's answer for an allocation that cannot be charged (@why). */
static int unreachable(int why, bool *ret_charged) {
        *ret_charged = false;
        return ma_config()->allow_unreachable ? 0 : why;
}

int ma_charge(int device, uint64_t bytes, bool *ret_charged) {
        memacct *m;
        int item, r;

        *ret_charged = false;
        if (device < 0 || device >= MA_DEVICES_MAX)
                return unreachable(-ENODEV, ret_charged);
        m = get_session();
        if (!m)
                return unreachable(-ENOTCONN, ret_charged);
        item = device_item(m, device);
        if (item < 0)
                return unreachable(item, ret_charged);
        r = memacct_charge_stocked(m, bytes, item);
        if (r == 0) {
                *ret_charged = true;
                return 0;
        }
        if (r == -EDQUOT)
                return r;
        /* -ENOENT: the daemon has no such region (not probed yet). */
        return unreachable(r, ret_charged);
}

void ma_uncharge(int device, uint64_t bytes) {
        memacct *m = atomic_load_explicit(&session, memory_order_acquire);
        int item;

        if (!m || bytes == 0 || device < 0 || device >= MA_DEVICES_MAX)
                return;
        item = atomic_load_explicit(&items[device], memory_order_acquire);
        if (item > 0)
                (void) memacct_uncharge_stocked(m, bytes, item);
}

/* The region's figures of @path into @ret; false when it has none there. */
static bool region_of(memacct *m, const char *path, const char *region, uint64_t *max, uint64_t *current) {
        memacct_group_info *info = NULL;
        bool found = false;

        if (memacct_get_group(m, path, NULL, 0, &info) < 0)
                return false;
        for (size_t i = 0; i < info->n_regions; i++)
                if (strcmp(info->regions[i].name, region) == 0) {
                        *max = info->regions[i].max;
                        *current = info->regions[i].current;
                        found = true;
                }
        memacct_group_info_free(info);
        return found;
}

/* The tightest max over the attached group in @region, and what it still admits. */
static int limits_of(const char *region, uint64_t *ret_limit, uint64_t *ret_room) {
        char path[MEMACCT_PATH_MAX + 1];
        uint64_t limit = UINT64_MAX, room = UINT64_MAX;
        memacct *m = get_session();
        int r;

        if (!m)
                return -ENOTCONN;
        r = memacct_attached_group(m, path, sizeof(path));
        if (r < 0)
                return r;
        /* The group and every ancestor: the tightest max, and what it admits. */
        for (;;) {
                uint64_t max = MEMACCT_UNLIMITED, current = 0;

                if (region_of(m, path, region, &max, &current) && max != MEMACCT_UNLIMITED) {
                        limit = max < limit ? max : limit;
                        room = current >= max ? 0 : (max - current < room ? max - current : room);
                }
                if (strcmp(path, "/") == 0)
                        break;
                char *slash = strrchr(path, '/');
                if (slash == path)
                        slash[1] = '\0';
                else
                        *slash = '\0';
        }
        *ret_limit = limit;
        *ret_room = room;
        return 0;
}

int ma_budget_region(const char *region, unsigned long long *free, unsigned long long *total) {
        uint64_t limit, room;
        int r = limits_of(region, &limit, &room);

        if (r < 0)
                return r;
        if (limit < *total)
                *total = limit;
        if (room < *free)
                *free = room;
        if (*free > *total)
                *free = *total;
        return 0;
}

int ma_budget(int device, size_t *free, size_t *total) {
        unsigned long long f = *free, t = *total;
        char region[96];
        int r;

        if (device < 0 || device >= MA_DEVICES_MAX)
                return -ENODEV;
        r = region_name(device, region, sizeof(region));
        if (r >= 0)
                r = ma_budget_region(region, &f, &t);
        if (r < 0)
                return r;
        *free = (size_t) f;
        *total = (size_t) t;
        return 0;
}

void ma_account_prepare(void) {
        memacct *m = get_session();

        if (m)
                (void) memacct_stock_prepare(m);
}

int ma_device_of_current(void) {
        ma_cuCtxGetDevice_fn get = MA_REAL(cuCtxGetDevice);
        CUdevice dev;

        return get && get(&dev) == MA_CUDA_SUCCESS ? (int) dev : -1;
}

void ma_account_atfork_child(void) {
        memacct *m = atomic_load_explicit(&session, memory_order_relaxed);
        int fd;

        /* The parent's connection is the parent's: its session must end
         * when the parent does, so the child keeps no copy of its socket.
         * The handle itself is left as it is (freeing it would write to
         * that socket, and to the stock page the daemon shares with the
         * parent); the child makes its own on its first allocation. */
        if (m && (fd = memacct_fd(m)) >= 0)
                (void) close(fd);
        atomic_store_explicit(&session, NULL, memory_order_relaxed);
        pthread_mutex_init(&lock, NULL);
        next_try_usec = 0;
        for (int i = 0; i < MA_DEVICES_MAX; i++)
                atomic_store_explicit(&items[i], 0, memory_order_relaxed);
        ma_ledger_reset();
        ma_reclaim_atfork_child();
}

/* A forked child gets a session of its own (ma_account_atfork_child()). */
static void __attribute__((constructor)) account_init(void) {
        (void) pthread_atfork(NULL, NULL, ma_account_atfork_child);
}
