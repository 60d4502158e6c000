/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cuda-prog serve: a long-lived driver API program a test drives line by
 * line on its standard input, so that many rounds (a race), holdings to
 * kill in the middle of, and limits changed while it runs cost no process
 * start each. It prints "ready pid=N" once its context is current, then
 * one line per command:
 *
 *   alloc SIZE      cuMemAlloc_v2           ok id=N | refused ...
 *   dlalloc SIZE    the same, found by dlsym() on a dlopen()ed driver, as
 *                   the CUDA runtime finds cuGetProcAddress
 *   pool SIZE       cuMemAllocAsync on the default pool  ok id=N reserved=B
 *   free ID         cuMemFree_v2 or cuMemFreeAsync       freed
 *   freeall         every allocation            freed n=K
 *   trim            cuMemPoolTrimTo(default pool, 0)     reserved=B
 *   release N       the default pool's release threshold (N or max): what a
 *                   synchronisation leaves it; max at start, as frameworks
 *                   keep their reserve                   set
 *   sync            cuStreamSynchronize                  synced reserved=B
 *   info            cuMemGetInfo_v2             free=F total=T
 *   quit
 */

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda-prog.h"

#define HELD_MAX 4096

static struct {
        CUdeviceptr ptr;
        bool pooled;
} held[HELD_MAX];

/* cuMemAlloc_v2 as a program that dlopen()s the driver finds it. */
static CUresult dlsym_alloc(CUdeviceptr *ptr, size_t bytes) {
        static ma_cuMemAlloc_v2_fn fn;

        if (!fn) {
                void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

                if (lib)
                        *(void **) &fn = dlsym(lib, "cuMemAlloc_v2");
        }
        return fn ? fn(ptr, bytes) : MA_CUDA_ERROR_NOT_FOUND;
}

static int slot_free(void) {
        for (int i = 1; i < HELD_MAX; i++)
                if (!held[i].ptr)
                        return i;
        return -1;
}

static CUresult free_one(int id) {
        CUresult r = held[id].pooled ? cuMemFreeAsync(held[id].ptr, NULL) : cuMemFree_v2(held[id].ptr);

        if (r == MA_CUDA_SUCCESS) {
                held[id].ptr = 0;
                if (held[id].pooled)
                        r = cuStreamSynchronize(NULL);
        }
        return r;
}

static void print_reserved(CUmemoryPool pool) {
        cuuint64_t reserved = 0;

        (void) cuMemPoolGetAttribute(pool, MA_CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved);
        printf(" reserved=%llu", (unsigned long long) reserved);
}

/* One command line; false on quit or end of input. */
static bool serve_line(char *line, CUmemoryPool pool) {
        char cmd[16] = "";
        char arg[64] = "";
        size_t bytes;
        CUresult r;
        int id;

        if (sscanf(line, "%15s %63s", cmd, arg) < 1 || strcmp(cmd, "quit") == 0)
                return false;
        if (strcmp(cmd, "alloc") == 0 || strcmp(cmd, "dlalloc") == 0 || strcmp(cmd, "pool") == 0) {
                id = slot_free();
                if (id < 0 || prog_parse_size(arg, &bytes) < 0) {
                        printf("usage\n");
                        return true;
                }
                held[id].pooled = cmd[0] == 'p';
                r = cmd[0] == 'p' ? cuMemAllocAsync(&held[id].ptr, bytes, NULL) :
                    cmd[0] == 'd' ? dlsym_alloc(&held[id].ptr, bytes) :
                                    cuMemAlloc_v2(&held[id].ptr, bytes);
                if (r != MA_CUDA_SUCCESS) {
                        held[id].ptr = 0;
                        (void) prog_refused(r, cmd);
                        return true;
                }
                printf("ok id=%d", id);
                if (held[id].pooled)
                        print_reserved(pool);
                printf("\n");
        } else if (strcmp(cmd, "free") == 0) {
                id = atoi(arg);
                if (id <= 0 || id >= HELD_MAX || !held[id].ptr)
                        printf("usage\n");
                else if ((r = free_one(id)) != MA_CUDA_SUCCESS)
                        (void) prog_refused(r, "free");
                else
                        printf("freed\n");
        } else if (strcmp(cmd, "freeall") == 0) {
                int n = 0;

                for (id = 1; id < HELD_MAX; id++)
                        if (held[id].ptr && free_one(id) == MA_CUDA_SUCCESS)
                                n++;
                printf("freed n=%d\n", n);
        } else if (strcmp(cmd, "trim") == 0) {
                r = cuMemPoolTrimTo(pool, 0);
                if (r != MA_CUDA_SUCCESS)
                        (void) prog_refused(r, "trim");
                else {
                        printf("trimmed");
                        print_reserved(pool);
                        printf("\n");
                }
        } else if (strcmp(cmd, "release") == 0) {
                cuuint64_t v = strcmp(arg, "max") == 0 ? UINT64_MAX : strtoull(arg, NULL, 10);

                r = cuMemPoolSetAttribute(pool, MA_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v);
                if (r != MA_CUDA_SUCCESS)
                        (void) prog_refused(r, "release");
                else
                        printf("set\n");
        } else if (strcmp(cmd, "sync") == 0) {
                r = cuStreamSynchronize(NULL);
                if (r != MA_CUDA_SUCCESS)
                        (void) prog_refused(r, "sync");
                else {
                        printf("synced");
                        print_reserved(pool);
                        printf("\n");
                }
        } else if (strcmp(cmd, "info") == 0) {
                size_t free_bytes, total;

                r = cuMemGetInfo_v2(&free_bytes, &total);
                if (r != MA_CUDA_SUCCESS)
                        (void) prog_refused(r, "info");
                else
                        printf("free=%zu total=%zu\n", free_bytes, total);
        } else
                printf("usage\n");
        return true;
}

int prog_cmd_serve(int argc, char **argv) {
        cuuint64_t keep_all = UINT64_MAX;
        CUmemoryPool pool = NULL;
        char line[128];
        CUresult r;
        int ret;

        (void) argv;
        if (argc != 1)
                return prog_usage("serve (commands on stdin)");
        ret = prog_begin(0);
        if (ret)
                return ret;
        r = cuDeviceGetDefaultMemPool(&pool, 0);
        if (r != MA_CUDA_SUCCESS)
                return prog_refused(r, "cuDeviceGetDefaultMemPool");
        r = cuMemPoolSetAttribute(pool, MA_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_all);
        if (r != MA_CUDA_SUCCESS)
                return prog_refused(r, "cuMemPoolSetAttribute");
        printf("ready pid=%d\n", (int) getpid());
        fflush(stdout);
        while (fgets(line, sizeof(line), stdin) && serve_line(line, pool))
                fflush(stdout);
        for (int id = 1; id < HELD_MAX; id++)
                if (held[id].ptr)
                        (void) free_one(id);
        return prog_end(0);
}
