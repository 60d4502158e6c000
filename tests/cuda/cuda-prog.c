/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cuda-prog: a CUDA driver API program for the tests, linked with -lcuda
 * as any CUDA program is (against the stand-in's libcuda.so, run with the
 * stand-in's folder on LD_LIBRARY_PATH, or with the interposer preloaded
 * in front of it). Each subcommand does one thing a test needs of a GPU
 * program and prints what happened as one line of key=value words
 * (several for the steps of vmm and the processes of fork-child and
 * exec-child), flushed at once so that a test can wait for a line while
 * the program holds memory:
 *
 *   alloc SIZE [--device N] [--hold SEC] [--via-proc-address] [--barrier FILE]
 *   info [--device N]            cuMemGetInfo: free= total=
 *   nvml-info [--device N]       the same through NVML (dlopen)
 *   loop N SIZE                  N × (alloc, free): count= ns_per_pair=
 *   pool SIZE [--trim]           stream-ordered alloc and free: reserved=
 *   vmm SIZE                     the VMM sequence, one line a step
 *   array W H D                  cuArray3DCreate (FLOAT, 1 channel), destroy
 *   fork-child SIZE, exec-child SIZE
 *   serve                        commands on stdin (cuda-prog-serve.c)
 *
 * A refusal prints "refused <CUDA error name> step=<entry point>" and
 * exits 1; a usage error exits 2. (The subcommands of the pools, VMM and
 * arrays are in cuda-prog-kinds.c.)
 */

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cuda-prog.h"
#include "nvml-abi.h"
#include "parse-size.h"

int prog_refused(CUresult r, const char *step) {
        const char *name = NULL;

        if (cuGetErrorName(r, &name) != MA_CUDA_SUCCESS || !name)
                name = "CUDA_ERROR_UNKNOWN";
        printf("refused %s step=%s\n", name, step);
        fflush(stdout);
        return 1;
}

int prog_usage(const char *why) {
        fprintf(stderr, "cuda-prog: %s\n", why);
        return 2;
}

int prog_parse_size(const char *s, size_t *ret) {
        uint64_t v;

        if (parse_size(s, &v) < 0 || v > SIZE_MAX)
                return -EINVAL;
        *ret = (size_t)v;
        return 0;
}

static int parse_int(const char *s, long min, long max, long *ret) {
        char *end;
        long v;

        errno = 0;
        v = strtol(s, &end, 10);
        if (errno || end == s || *end || v < min || v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

int prog_begin(int device) {
        CUcontext ctx;
        CUresult r;

        r = cuInit(0);
        if (r != MA_CUDA_SUCCESS)
                return prog_refused(r, "cuInit");
        r = cuDevicePrimaryCtxRetain(&ctx, device);
        if (r != MA_CUDA_SUCCESS)
                return prog_refused(r, "cuDevicePrimaryCtxRetain");
        r = cuCtxSetCurrent(ctx);
        if (r != MA_CUDA_SUCCESS)
                return prog_refused(r, "cuCtxSetCurrent");
        return 0;
}

int prog_end(int device) {
        CUresult r = cuDevicePrimaryCtxRelease_v2(device);

        return r == MA_CUDA_SUCCESS ? 0 : prog_refused(r, "cuDevicePrimaryCtxRelease_v2");
}

/* ---- alloc ---- */

struct alloc_opts {
        size_t bytes;
        long device;
        double hold_sec;
        bool via_proc_address;
        const char *barrier;
};

static void wait_for_file(const char *path) {
        const struct timespec ms = { 0, 1000 * 1000 };

        while (access(path, F_OK) < 0)
                nanosleep(&ms, NULL);
}

static void hold(double sec) {
        struct timespec t = { (time_t)sec, (long)((sec - (double)(time_t)sec) * 1e9) };

        while (nanosleep(&t, &t) < 0 && errno == EINTR)
                ;
}

/* cuMemAlloc as the CUDA runtime finds it: by base name and ABI version. */
static CUresult alloc_via_proc_address(CUdeviceptr *ptr, size_t bytes) {
        CUdriverProcAddressQueryResult status;
        ma_cuMemAlloc_v2_fn fn = NULL;
        CUresult r;

        r = cuGetProcAddress_v2("cuMemAlloc", (void **)&fn, STANDIN_DRIVER_VERSION, 0, &status);
        if (r != MA_CUDA_SUCCESS)
                return r;
        if (!fn || status != MA_CU_GET_PROC_ADDRESS_SUCCESS)
                return MA_CUDA_ERROR_NOT_FOUND;
        return fn(ptr, bytes);
}

static int do_alloc(const struct alloc_opts *o) {
        CUdeviceptr ptr;
        CUresult r;
        int ret;

        ret = prog_begin((int)o->device);
        if (ret)
                return ret;
        if (o->barrier)
                wait_for_file(o->barrier);
        r = o->via_proc_address ? alloc_via_proc_address(&ptr, o->bytes) : cuMemAlloc_v2(&ptr, o->bytes);
        if (r != MA_CUDA_SUCCESS)
                return prog_refused(r, o->via_proc_address ? "cuGetProcAddress_v2(cuMemAlloc)" : "cuMemAlloc_v2");
        /* Touched, so that the memory is really there (one byte per end). */
        ((volatile char *)(uintptr_t)ptr)[0] = 1;
        ((volatile char *)(uintptr_t)ptr)[o->bytes - 1] = 1;
        printf("allocated bytes=%zu device=%ld pid=%d\n", o->bytes, o->device, (int)getpid());
        fflush(stdout);
        if (o->hold_sec > 0)
                hold(o->hold_sec);
        r = cuMemFree_v2(ptr);
        if (r != MA_CUDA_SUCCESS)
                return prog_refused(r, "cuMemFree_v2");
        return prog_end((int)o->device);
}

static int cmd_alloc(int argc, char **argv) {
        struct alloc_opts o = { 0 };

        if (argc < 2 || prog_parse_size(argv[1], &o.bytes) < 0)
                return prog_usage("alloc SIZE [--device N] [--hold SEC] [--via-proc-address] [--barrier FILE]");
        for (int i = 2; i < argc; i++) {
                char *end;

                if (strcmp(argv[i], "--via-proc-address") == 0) {
                        o.via_proc_address = true;
                } else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
                        if (parse_int(argv[++i], 0, 1000, &o.device) < 0)
                                return prog_usage("--device: not a device number");
                } else if (strcmp(argv[i], "--hold") == 0 && i + 1 < argc) {
                        o.hold_sec = strtod(argv[++i], &end);
                        if (*end || end == argv[i] || !(o.hold_sec >= 0 && o.hold_sec < 1e9))
                                return prog_usage("--hold: not a number of seconds");
                } else if (strcmp(argv[i], "--barrier") == 0 && i + 1 < argc) {
                        o.barrier = argv[++i];
                } else {
                        return prog_usage("alloc: unknown option");
                }
        }
        return do_alloc(&o);
}

/* ---- info, nvml-info ---- */

static int device_option(int argc, char **argv, long *ret) {
        *ret = 0;
        if (argc == 1)
                return 0;
        if (argc == 3 && strcmp(argv[1], "--device") == 0 && parse_int(argv[2], 0, 1000, ret) == 0)
                return 0;
        return -EINVAL;
}

static int cmd_info(int argc, char **argv) {
        size_t free_bytes, total;
        long device;
        CUresult r;
        int ret;

        if (device_option(argc, argv, &device) < 0)
                return prog_usage("info [--device N]");
        ret = prog_begin((int)device);
        if (ret)
                return ret;
        r = cuMemGetInfo_v2(&free_bytes, &total);
        if (r != MA_CUDA_SUCCESS)
                return prog_refused(r, "cuMemGetInfo_v2");
        printf("free=%zu total=%zu\n", free_bytes, total);
        return prog_end((int)device);
}

/* NVML as a monitoring tool reaches it: dlopen() by soname, no link. */
static int cmd_nvml_info(int argc, char **argv) {
        ma_nvmlDeviceGetHandleByIndex_v2_fn get_handle;
        ma_nvmlDeviceGetMemoryInfo_fn get_memory;
        ma_nvmlShutdown_fn shutdown_nvml;
        ma_nvmlInit_v2_fn init;
        nvmlMemory_t mem;
        nvmlDevice_t dev;
        nvmlReturn_t r;
        long device;
        void *lib;

        if (device_option(argc, argv, &device) < 0)
                return prog_usage("nvml-info [--device N]");
        lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
        if (!lib) {
                printf("refused dlopen step=libnvidia-ml.so.1\n");
                return 1;
        }
        *(void **)&init = dlsym(lib, "nvmlInit_v2");
        *(void **)&get_handle = dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
        *(void **)&get_memory = dlsym(lib, "nvmlDeviceGetMemoryInfo");
        *(void **)&shutdown_nvml = dlsym(lib, "nvmlShutdown");
        if (!init || !get_handle || !get_memory || !shutdown_nvml) {
                printf("refused dlsym step=libnvidia-ml.so.1\n");
                dlclose(lib);
                return 1;
        }
        r = init();
        if (r == MA_NVML_SUCCESS)
                r = get_handle((unsigned int)device, &dev);
        if (r == MA_NVML_SUCCESS)
                r = get_memory(dev, &mem);
        if (r == MA_NVML_SUCCESS)
                printf("free=%llu total=%llu\n", mem.free, mem.total);
        else
                printf("refused NVML_ERROR_%d step=nvml\n", (int)r);
        shutdown_nvml();
        dlclose(lib);
        return r == MA_NVML_SUCCESS ? 0 : 1;
}

/* ---- loop ---- */

static int cmd_loop(int argc, char **argv) {
        uint64_t start, elapsed;
        size_t bytes;
        long n, done;
        int ret;

        if (argc != 3 || parse_int(argv[1], 1, 1000000000L, &n) < 0 || prog_parse_size(argv[2], &bytes) < 0)
                return prog_usage("loop N SIZE");
        ret = prog_begin(0);
        if (ret)
                return ret;
        start = clock_now_nsec(CLOCK_MONOTONIC);
        for (done = 0; done < n; done++) {
                CUdeviceptr ptr;
                CUresult r = cuMemAlloc_v2(&ptr, bytes);

                if (r != MA_CUDA_SUCCESS) {
                        printf("count=%ld ", done);
                        return prog_refused(r, "cuMemAlloc_v2");
                }
                r = cuMemFree_v2(ptr);
                if (r != MA_CUDA_SUCCESS) {
                        printf("count=%ld ", done);
                        return prog_refused(r, "cuMemFree_v2");
                }
        }
        elapsed = clock_now_nsec(CLOCK_MONOTONIC) - start;
        printf("count=%ld ns_per_pair=%llu\n", done, (unsigned long long)(elapsed / (uint64_t)done));
        return prog_end(0);
}

/* ---- fork-child, exec-child ---- */

/* The parent's own allocation of @bytes, held across the child's life. */
static int parent_alloc(size_t bytes, CUdeviceptr *ptr) {
        CUresult r;
        int ret;

        ret = prog_begin(0);
        if (ret)
                return ret;
        r = cuMemAlloc_v2(ptr, bytes);
        if (r != MA_CUDA_SUCCESS)
                return prog_refused(r, "cuMemAlloc_v2");
        printf("parent allocated bytes=%zu pid=%d\n", bytes, (int)getpid());
        fflush(stdout);
        return 0;
}

static int parent_finish(pid_t child, CUdeviceptr ptr) {
        int status, code;
        CUresult r;

        if (waitpid(child, &status, 0) < 0)
                return prog_usage("waitpid failed");
        code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        printf("child exited status=%d\n", code);
        r = cuMemFree_v2(ptr);
        if (r != MA_CUDA_SUCCESS)
                return prog_refused(r, "cuMemFree_v2");
        printf("parent freed\n");
        fflush(stdout);
        return code == 0 ? prog_end(0) : 1;
}

/*
 * The child of a process that used the driver: the real driver does not
 * work there; the stand-in starts over in it (standin-cuda.c), so this
 * shows what the interposer does in such a child.
 */
static int cmd_fork_child(int argc, char **argv) {
        struct alloc_opts o = { 0 };
        CUdeviceptr ptr;
        pid_t pid;
        int ret;

        if (argc != 2 || prog_parse_size(argv[1], &o.bytes) < 0)
                return prog_usage("fork-child SIZE");
        ret = parent_alloc(o.bytes, &ptr);
        if (ret)
                return ret;
        pid = fork();
        if (pid < 0)
                return prog_usage("fork failed");
        if (pid == 0) {
                printf("child pid=%d\n", (int)getpid());
                _exit(do_alloc(&o));
        }
        return parent_finish(pid, ptr);
}

static int cmd_exec_child(int argc, char **argv) {
        size_t bytes;
        CUdeviceptr ptr;
        pid_t pid;
        int ret;

        if (argc != 2 || prog_parse_size(argv[1], &bytes) < 0)
                return prog_usage("exec-child SIZE");
        ret = parent_alloc(bytes, &ptr);
        if (ret)
                return ret;
        pid = fork();
        if (pid < 0)
                return prog_usage("fork failed");
        if (pid == 0) {
                char *args[] = { (char *)"cuda-prog", (char *)"alloc", argv[1], NULL };

                execv("/proc/self/exe", args);
                _exit(127);
        }
        return parent_finish(pid, ptr);
}

int main(int argc, char **argv) {
        static const struct {
                const char *name;
                int (*fn)(int argc, char **argv);
        } cmds[] = {
                { "alloc", cmd_alloc },           { "info", cmd_info },
                { "nvml-info", cmd_nvml_info },   { "loop", cmd_loop },
                { "pool", prog_cmd_pool },        { "vmm", prog_cmd_vmm },
                { "array", prog_cmd_array },      { "fork-child", cmd_fork_child },
                { "exec-child", cmd_exec_child }, { "serve", prog_cmd_serve },
        };
        int ret;

        if (argc < 2)
                return prog_usage("a subcommand: alloc info nvml-info loop pool vmm array fork-child exec-child serve");
        for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
                if (strcmp(argv[1], cmds[i].name) == 0) {
                        ret = cmds[i].fn(argc - 1, argv + 1);
                        fflush(stdout);
                        return ret;
                }
        return prog_usage("unknown subcommand");
}
