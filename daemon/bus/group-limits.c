/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A group's limits on the bus (group-limits.h), read and written by one
 * table of their keys.
 */

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "bus/error.h"
#include "bus/group-limits.h"
#include "macro.h"

static const struct {
        const char *name;
        MemLimitMask bit;
        size_t offset;
} keys[] = {
        { "max", MEM_LIMIT_MAX, offsetof(MemLimits, max) },
        { "high", MEM_LIMIT_HIGH, offsetof(MemLimits, high) },
        { "low", MEM_LIMIT_LOW, offsetof(MemLimits, low) },
        { "min", MEM_LIMIT_MIN, offsetof(MemLimits, min) },
};

int bus_read_limits(sd_bus_message *msg, MemLimits *ret, sd_bus_error *error) {
        MemLimits l = {};
        const char *key;
        uint64_t value;
        int r;

        r = sd_bus_message_enter_container(msg, 'a', "{st}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(msg, "{st}", &key, &value)) > 0) {
                size_t i;

                for (i = 0; i < ELEMENTSOF(keys) && strcmp(key, keys[i].name) != 0; i++)
                        ;
                if (i == ELEMENTSOF(keys))
                        return bus_fail(error, -EINVAL, "unknown limit '%s' (max, high, low, min)", key);
                if (l.set & keys[i].bit)
                        return bus_fail(error, -EINVAL, "limit '%s' given twice", key);
                l.set |= keys[i].bit;
                *(uint64_t *) ((uint8_t *) &l + keys[i].offset) = value;
        }
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(msg);
        if (r < 0)
                return r;
        *ret = l;
        return 0;
}

int bus_append_limits(sd_bus_message *reply, const MemLimits *l) {
        int r = sd_bus_message_open_container(reply, 'a', "{st}");

        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(keys); i++)
                if (l->set & keys[i].bit)
                        r = sd_bus_message_append(reply, "{st}", keys[i].name,
                                                  *(const uint64_t *) ((const uint8_t *) l + keys[i].offset));
        return r < 0 ? r : sd_bus_message_close_container(reply);
}
