/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Refusals: the words of every failure a client can see. A message is
 * at most REFUSAL_MESSAGE_MAX bytes, cut there (a path is at most 4096
 * bytes, so a message naming one may be cut; the refusing group is
 * carried whole in refused_by).
 */

#include <stdio.h>
#include <string.h>

#include "base/refusal.h"
#include "core/model.h"

int refusal_set(Refusal *rf, int r, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(rf->message, sizeof(rf->message), fmt, ap);
        va_end(ap);
        rf->error = r;
        return r;
}

const char *refusal_errno_text(int r) {
        switch (r) {
        case -ENOENT: return "no such group";
        case -EEXIST: return "group exists";
        case -EBUSY: return "group is in use";
        case -EDQUOT: return "limit exceeded";
        case -ERANGE: return "more than is held";
        case -ENOSPC: return "group limit reached";
        case -EMLINK: return "too deep";
        case -ENOTCONN: return "session not attached to a group";
        case -EOVERFLOW: return "size too large";
        case -EPERM: return "permission denied";
        case -ESRCH: return "no such client";
        default: return strerror(-r);
        }
}

int refusal_path(Refusal *rf, int r, const char *path) {
        MemPathError why = MEM_PATH_OK;

        if ((r == -EINVAL || r == -ENAMETOOLONG || r == -EMLINK) &&
            (mem_path_check(path, UINT32_MAX, &why) < 0 || why != MEM_PATH_OK))
                return refusal_set(rf, r, "%s: %s", path ? path : "(none)", mem_path_error_to_string(why));
        return refusal_set(rf, r, "%s: %s", path ? path : "(none)", refusal_errno_text(r));
}

int refusal_denied(Refusal *rf, const char *path) {
        return refusal_set(rf, -EPERM, "%s: permission denied", path);
}

int refusal_region_limit(Refusal *rf, const char *path, const char *by, const char *region, bool capacity) {
        snprintf(rf->refused_by, sizeof(rf->refused_by), "%s", by ? by : "");
        if (capacity)
                return refusal_set(rf, -EDQUOT, "%s: region %s is at its capacity", path, region);
        return refusal_set(rf, -EDQUOT, "%s: limit exceeded (max of %s in region %s)", path, by ? by : "?", region);
}

int refusal_limit(Refusal *rf, const char *path, const char *by) {
        snprintf(rf->refused_by, sizeof(rf->refused_by), "%s", by ? by : "");
        return refusal_set(rf, -EDQUOT, "%s: limit exceeded (max of %s)", path, by ? by : "?");
}
