/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Small macros shared by the daemon, the client library and the tests.
 * No policy and no transport types live here.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _likely_(x) (__builtin_expect(!!(x), 1))
#define _unlikely_(x) (__builtin_expect(!!(x), 0))
#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _always_inline_ inline __attribute__((always_inline))
#define _public_ __attribute__((visibility("default")))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

/* One x86-64 cache line; used to keep per-thread data from false sharing. */
#define CACHELINE_SIZE 64
#define _cacheline_aligned_ __attribute__((aligned(CACHELINE_SIZE)))

/* aligned_alloc() wants the size to be a multiple of the alignment. */
static inline void *cacheline_alloc(size_t size) {
        return aligned_alloc(CACHELINE_SIZE, (size + CACHELINE_SIZE - 1) & ~(size_t) (CACHELINE_SIZE - 1));
}

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* Hand over ownership of a pointer: returns it and clears the variable. */
#define TAKE_PTR(p)                            \
        ({                                     \
                __typeof__(p) _tp_ = (p);      \
                (p) = NULL;                    \
                _tp_;                          \
        })

#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)        \
        static inline void func##p(type *p) {          \
                if (*p)                                \
                        func(*p);                      \
        }

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

/* free() that clears the pointer in the same statement: p = mfree(p); */
static inline void *mfree(void *p) {
        free(p);
        return NULL;
}

/*
 * Close a descriptor left in a local when it goes out of scope (closep,
 * _cleanup_close_); a negative one is no descriptor. errno is kept: the
 * cleanup runs after the return value, and perhaps a log line's %m, were
 * taken from it. TAKE_FD() hands the descriptor on and leaves -EBADF.
 */
static inline void closep(int *fd) {
        if (*fd >= 0) {
                int saved = errno;

                (void) close(*fd);
                errno = saved;
        }
}
#define _cleanup_close_ _cleanup_(closep)

#define TAKE_FD(fd)                            \
        ({                                     \
                int _tf_ = (fd);               \
                (fd) = -EBADF;                 \
                _tf_;                          \
        })

/*
 * NAME_to_string() and NAME_from_string() of an enum TYPE whose values
 * 0..MAX-1 index NAME_table[]: one definition for every enum <-> name
 * table. Out of range is NULL; an unknown name is -EINVAL.
 */
#define DEFINE_STRING_TABLE_TO_STRING(name, type, max)                  \
        const char *name##_to_string(type i) {                          \
                if ((unsigned) i >= (unsigned) (max))                   \
                        return NULL;                                    \
                return name##_table[i];                                 \
        }

#define DEFINE_STRING_TABLE_FROM_STRING(name, type, max)                \
        type name##_from_string(const char *s) {                        \
                for (unsigned i = 0; s && i < (unsigned) (max); i++)    \
                        if (name##_table[i] && strcmp(s, name##_table[i]) == 0) \
                                return (type) i;                        \
                return (type) -EINVAL;                                  \
        }

#define DEFINE_STRING_TABLE(name, type, max)                            \
        DEFINE_STRING_TABLE_TO_STRING(name, type, max)                  \
        DEFINE_STRING_TABLE_FROM_STRING(name, type, max)
