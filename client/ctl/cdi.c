/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `memacctctl cdi generate` (cdi.h): a CDI spec of kind memacct.io/gpu
 * whose one device, "all", gives a container the CUDA interposer:
 *
 * - the interposer, read-only, in /usr/lib/memacct/: it carries what it
 *   needs of libmemacct and depends on libc alone, so the image needs
 *   nothing (no libmemacct, libsystemd or protobuf-c) and no
 *   LD_LIBRARY_PATH, which an env edit would replace in the image's
 *   environment (CDI's edits replace a variable of the same name; CUDA
 *   images set LD_LIBRARY_PATH);
 * - LD_PRELOAD naming it;
 * - the interposer's config, read-only, at /etc/memacct/cuda.conf, and
 *   MEMACCT_CUDA_CONFIG naming it, whatever prefix the interposer was
 *   built for;
 * - the directory of the daemon's socket, read-only, at its own path: the
 *   config names the socket as the host sees it, and a restarted daemon
 *   makes its socket again in that directory, which a mount of the socket
 *   itself would not follow.
 *
 * Invariants: everything is checked before anything is written: the files
 * exist, the config is one the interposer trusts and understands, and the
 * socket the spec mounts is the one the interposer will look for (a spec
 * that mounted another would refuse every allocation in the container).
 * The spec is built with json-c, read back and validated as podman's CDI
 * library reads one (cdi-validate.c), then replaces the file atomically,
 * 0644: rootless podman reads it too.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cdi.h"
#include "cuda-config.h"
#include "file-util.h"
#include "macro.h"
#include "options.h"
#include "output.h"

#ifndef MEMACCT_CDI_INTERPOSER
#define MEMACCT_CDI_INTERPOSER "/usr/lib/memacct/libmemacct-cuda.so"
#endif
#ifndef MEMACCT_CDI_CUDA_CONFIG
#define MEMACCT_CDI_CUDA_CONFIG "/etc/memacct/cuda.conf"
#endif

/* The interposer's name in the container's CDI_CONTAINER_LIBDIR. */
#define INTERPOSER_NAME "libmemacct-cuda.so"

/* What the spec mounts, as the host sees it. */
typedef struct CdiInputs {
        char interposer[PATH_MAX];
        char config[PATH_MAX]; /* "": none, the interposer's defaults */
        char socket[PATH_MAX];
        char socket_dir[PATH_MAX];
} CdiInputs;

static int failf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int failf(const char *fmt, ...) {
        va_list ap;

        fputs("memacctctl: cdi generate: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        return EXIT_FAILURE;
}

/*
 * @path made absolute into @ret, its directory resolved but not its name:
 * a library's name may be a link to the file of the day, and a spec naming
 * the file it points to now would break at the next upgrade. It must be
 * (or point to) a regular file. Return: 0 or the exit status, said.
 */
static int regular_file(const char *what, const char *path, char *ret) {
        _cleanup_free_ char *dir = strdup(path);
        char real[PATH_MAX], *slash;
        const char *name = path;
        struct stat st;

        if (!dir)
                return failf("out of memory");
        slash = strrchr(dir, '/');
        if (slash) {
                name = path + (slash - dir) + 1;
                *slash = '\0';
        }
        if (!*name)
                return failf("%s %s: not a file name", what, path);
        if (!realpath(slash ? (*dir ? dir : "/") : ".", real))
                return failf("%s %s: %s", what, path, strerror(errno));
        if (snprintf(ret, PATH_MAX, "%s/%s", strcmp(real, "/") == 0 ? "" : real, name) >= PATH_MAX)
                return failf("%s %s: path too long", what, path);
        if (stat(ret, &st) < 0)
                return failf("%s %s: %s", what, path, strerror(errno));
        if (!S_ISREG(st.st_mode))
                return failf("%s %s: not a regular file", what, path);
        return 0;
}

/*
 * The config: --config, else the installed path if there is a file. It
 * must be one the interposer trusts (root's, writable by root alone) and
 * understands, or the container would run on the defaults.
 * Return: 0 or the exit status, said.
 */
static int read_config(CdiInputs *in, CudaConfig *ret) {
        const char *path = arg.config ? arg.config : MEMACCT_CDI_CUDA_CONFIG;
        int r;

        if (!arg.config && access(path, F_OK) < 0 && errno == ENOENT)
                return 0; /* no config: the interposer's defaults */
        r = regular_file("config", path, in->config);
        if (r != 0)
                return r;
        /* The interposer's own rule and grammar (common/cuda-config.h). */
        if (!cuda_config_trusted(in->config))
                return failf("config %s: not root's alone: the interposer would ignore it", path);
        r = cuda_config_parse(in->config, ret);
        if (r < 0)
                return failf("config %s: cannot read it", path);
        if (r > 0)
                return failf("config %s, line %d: the interposer would not understand it "
                             "(libmemacct-cuda(8), FILES)", path, r);
        return 0;
}

/*
 * The socket the interposer looks for: the config's, else the system
 * socket; --socket must agree, since the spec mounts its directory.
 * Return: 0 or the exit status, said.
 */
static int pick_socket(CdiInputs *in, const CudaConfig *c) {
        const char *want = c->socket[0] ? c->socket : MEMACCT_SYSTEM_SOCKET;
        char *slash;

        if (arg.socket && arg.socket[0] != '/')
                return usage_error("cdi generate: --socket '%s': not an absolute path", arg.socket);
        if (arg.socket && strcmp(arg.socket, want) != 0) {
                if (in->config[0])
                        return failf("--socket %s: the interposer's config %s names %s: the "
                                     "container would look there", arg.socket, in->config, want);
                return failf("--socket %s: without a config the interposer looks for %s: write "
                             "'socket = %s' under [interposer] in a config (--config)",
                             arg.socket, want, arg.socket);
        }
        if (strlen(want) >= sizeof(in->socket))
                return failf("socket %s: path too long", want);
        snprintf(in->socket, sizeof(in->socket), "%s", want);
        snprintf(in->socket_dir, sizeof(in->socket_dir), "%s", want);
        slash = strrchr(in->socket_dir, '/');
        if (slash == in->socket_dir)
                return failf("socket %s: in /, which the spec cannot mount into a container", want);
        *slash = '\0';
        return 0;
}

static int resolve_inputs(CdiInputs *in) {
        CudaConfig c = {};
        int r;

        r = regular_file("interposer", arg.interposer ? arg.interposer : MEMACCT_CDI_INTERPOSER,
                         in->interposer);
        if (r != 0)
                return r;
        r = read_config(in, &c);
        if (r != 0)
                return r;
        r = pick_socket(in, &c);
        if (r != 0)
                return r;
        if (access(in->socket_dir, F_OK) < 0)
                /* Not wrong at install time: containers start once it is there. */
                fprintf(stderr, "memacctctl: cdi generate: note: %s does not exist yet: a container "
                                "with the device starts only once memacctd has made it\n",
                        in->socket_dir);
        return 0;
}

/* One read-only bind mount; NULL on out of memory. */
static json_object *mount_new(const char *host, const char *container) {
        json_object *o = json_object_new_object(), *opts = json_object_new_array();

        if (!o || !opts) {
                json_object_put(o);
                json_object_put(opts);
                return NULL;
        }
        json_object_object_add(o, "hostPath", json_object_new_string(host));
        json_object_object_add(o, "containerPath", json_object_new_string(container));
        /* nosuid, nodev: nothing in these wants either. */
        json_object_array_add(opts, json_object_new_string("ro"));
        json_object_array_add(opts, json_object_new_string("nosuid"));
        json_object_array_add(opts, json_object_new_string("nodev"));
        json_object_array_add(opts, json_object_new_string("bind"));
        json_object_object_add(o, "options", opts);
        json_object_object_add(o, "type", json_object_new_string("bind"));
        return o;
}

static json_object *spec_new(const CdiInputs *in) {
        _cleanup_(json_object_putp) json_object *spec = json_object_new_object();
        json_object *devices = json_object_new_array(), *dev = json_object_new_object(),
                    *edits = json_object_new_object(), *env = json_object_new_array(),
                    *mounts = json_object_new_array();

        if (!spec || !devices || !dev || !edits || !env || !mounts) {
                json_object_put(devices);
                json_object_put(dev);
                json_object_put(edits);
                json_object_put(env);
                json_object_put(mounts);
                return NULL;
        }
        json_object_object_add(spec, "cdiVersion", json_object_new_string(CDI_VERSION));
        json_object_object_add(spec, "kind", json_object_new_string(CDI_KIND));
        json_object_object_add(spec, "devices", devices);
        json_object_array_add(devices, dev);
        json_object_object_add(dev, "name", json_object_new_string(CDI_DEVICE));
        json_object_object_add(dev, "containerEdits", edits);
        json_object_object_add(edits, "env", env);
        json_object_object_add(edits, "mounts", mounts);

        json_object_array_add(env, json_object_new_string("LD_PRELOAD=" CDI_CONTAINER_LIBDIR "/" INTERPOSER_NAME));
        if (in->config[0])
                json_object_array_add(env, json_object_new_string("MEMACCT_CUDA_CONFIG=" CDI_CONTAINER_CONFIG));
        json_object_array_add(mounts, mount_new(in->interposer, CDI_CONTAINER_LIBDIR "/" INTERPOSER_NAME));
        if (in->config[0])
                json_object_array_add(mounts, mount_new(in->config, CDI_CONTAINER_CONFIG));
        json_object_array_add(mounts, mount_new(in->socket_dir, in->socket_dir));
        /* An allocation failed above leaves a NULL in an array: all or nothing. */
        for (size_t i = 0; i < json_object_array_length(mounts); i++)
                if (!json_object_array_get_idx(mounts, i))
                        return NULL;
        return TAKE_PTR(spec);
}

/* @text to @path, atomically, 0644. Return: 0 or the exit status, said. */
static int write_spec(const char *path, const char *text) {
        _cleanup_free_ char *dir = strdup(path), *tmp = NULL;
        _cleanup_close_ int dfd = -1;
        const char *name;
        AtomicStep step;
        char *slash;
        int r;

        if (!dir)
                return failf("out of memory");
        slash = strrchr(dir, '/');
        if (!slash) {
                free(dir);
                dir = strdup(".");
                name = path;
        } else {
                name = path + (slash - dir) + 1;
                *slash = '\0';
                if (slash == dir)
                        strcpy(dir, "/");
        }
        if (!dir || asprintf(&tmp, ".#%s.tmp", name) < 0)
                return failf("out of memory");
        /* /etc/cdi is not there before the first spec. */
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return failf("%s: cannot make its directory %s: %s", path, dir, strerror(errno));
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return failf("%s: cannot open its directory %s: %s", path, dir, strerror(errno));
        r = write_tmp_file_at(dfd, tmp, -1, text, strlen(text), fsync_fd, &step);
        if (r == 0 && fchmodat(dfd, tmp, 0644, 0) < 0) {
                r = -errno;
                (void) unlinkat(dfd, tmp, 0);
        }
        if (r == 0)
                r = rename_tmp_file_at(dfd, tmp, name, fsync_fd, &step);
        if (r < 0)
                return failf("%s: cannot write it: %s", path, strerror(-r));
        return 0;
}

int cdi_main(int argc, char **argv) {
        _cleanup_(json_object_putp) json_object *spec = NULL;
        const char *output = arg.output ? arg.output : CDI_DEFAULT_OUTPUT, *text;
        CdiInputs in = {};
        char err[512];
        int r;

        if (argc < 2)
                return usage_error("cdi: missing action (generate)");
        if (strcmp(argv[1], "generate") != 0)
                return usage_error("cdi: unknown action '%s' (generate)", argv[1]);
        if (argc > 2)
                return usage_error("cdi generate: too many arguments");
        /* The interposer reaches the system's daemon over its socket alone. */
        if (arg.bus || arg.user)
                return usage_error("cdi generate: --bus and --user do not apply (the interposer "
                                   "uses the socket its config names)");
        if (!*output)
                return usage_error("cdi generate: --output: empty path");
        r = resolve_inputs(&in);
        if (r != 0)
                return r;
        spec = spec_new(&in);
        if (!spec)
                return failf("out of memory");
        text = json_object_to_json_string_ext(spec, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                            JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!text)
                return failf("out of memory");
        /* What podman will read, read back: a bug here must not reach it. */
        r = cdi_spec_validate(text, strlen(text), err, sizeof(err));
        if (r == -ENOMEM)
                return failf("out of memory");
        if (r < 0)
                return failf("the spec made is not valid (a bug): %s", err);
        if (strcmp(output, "-") == 0) {
                if (puts(text) == EOF || fflush(stdout) != 0)
                        return failf("cannot write to stdout: %s", strerror(errno));
                return 0;
        }
        r = write_spec(output, text);
        if (r != 0)
                return r;
        printf("cdi generate: wrote %s: --device " CDI_KIND "=" CDI_DEVICE "\n", output);
        return 0;
}
