/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The manager's methods about kernel cgroups: ImportCgroups,
 * ImportCgroupsKeepingLimits, PruneMirrors and the placement rules
 * (org.memacct1(5)): decode, one service call, encode, as every method;
 * the changes' replies are held until saved (bus_manager_reply_send()).
 */

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "bus/error.h"
#include "bus/group-limits.h"
#include "bus/manager.h"
#include "bus/mirrors.h"
#include "bus/peer.h"
#include "macro.h"

int bus_method_import_cgroups(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusManager *m = userdata;
        const char *from, *under;
        ServiceImportCounts n;
        BusPeer *p;
        Refusal rf;
        int r;

        r = sd_bus_message_read(msg, "ss", &from, &under);
        if (r < 0)
                return r;
        r = bus_manager_caller(m, msg, &p, error);
        if (r < 0)
                return r;

        refusal_init(&rf);
        r = service_import_cgroups(m->service, p->peer, from, under, &n, &rf);
        if (r < 0)
                return bus_refusal(error, &rf);
        (void) bus_manager_flush(m);
        return bus_manager_reply_return(m, p, msg, "uuu", (uint32_t) n.created, (uint32_t) n.updated,
                            (uint32_t) n.unchanged);
}

/* What PruneMirrors collects before it replies: the removed groups go in
 * one array and the kept ones in another, and the service tells them
 * interleaved. */
typedef struct Pruned {
        char **removed;
        size_t n_removed;
        char **kept; /* group, why, group, why, ... */
        size_t n_kept;
        bool oom;
} Pruned;

static bool strv_push(char ***v, size_t *n, const char *s) {
        char **w = realloc(*v, (*n + 1) * sizeof(*w));

        if (!w)
                return false;
        *v = w;
        return (w[*n] = strdup(s)) && ++*n;
}

/* ServicePruneFn of PruneMirrors: a failed copy marks the reply to be refused. */
static void pruned_mirror(void *userdata, const char *group, const char *why) {
        Pruned *pr = userdata;

        if (!why ? !strv_push(&pr->removed, &pr->n_removed, group)
                 : !strv_push(&pr->kept, &pr->n_kept, group) || !strv_push(&pr->kept, &pr->n_kept, why))
                pr->oom = true;
}

static void pruned_done(Pruned *pr) {
        for (size_t i = 0; i < pr->n_removed; i++)
                free(pr->removed[i]);
        for (size_t i = 0; i < pr->n_kept; i++)
                free(pr->kept[i]);
        free(pr->removed);
        free(pr->kept);
}

int bus_method_prune_mirrors(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        BusManager *m = userdata;
        Pruned pr = {};
        BusPeer *p;
        Refusal rf;
        int r;

        r = bus_manager_caller(m, msg, &p, error);
        if (r < 0)
                return r;

        refusal_init(&rf);
        r = service_prune_mirrors(m->service, p->peer, pruned_mirror, &pr, &rf);
        if (r >= 0 && pr.oom)
                r = refusal_set(&rf, -ENOMEM, "pruned, but out of memory listing the groups");
        if (r < 0) {
                pruned_done(&pr);
                return bus_refusal(error, &rf);
        }
        (void) bus_manager_flush(m);
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "s");
        for (size_t i = 0; r >= 0 && i < pr.n_removed; i++)
                r = sd_bus_message_append(reply, "s", pr.removed[i]);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(ss)");
        for (size_t i = 0; r >= 0 && i + 1 < pr.n_kept; i += 2)
                r = sd_bus_message_append(reply, "(ss)", pr.kept[i], pr.kept[i + 1]);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        pruned_done(&pr);
        if (r < 0)
                return r;
        return bus_manager_reply_send(m, p, msg, reply);
}

/* ServiceKeptFn of ImportCgroupsKeepingLimits: one (sa{st}a{st}) into the open array; the first error sticks. */
typedef struct KeptReply {
        sd_bus_message *reply;
        int r;
} KeptReply;

static void kept_append(void *userdata, const char *group, unsigned kept, const MemLimits *ours,
                        const MemLimits *kernel) {
        KeptReply *k = userdata;

        (void) kept; /* ours->set names them */
        if (k->r < 0)
                return;
        k->r = sd_bus_message_open_container(k->reply, 'r', "sa{st}a{st}");
        if (k->r >= 0)
                k->r = sd_bus_message_append(k->reply, "s", group);
        if (k->r >= 0)
                k->r = bus_append_limits(k->reply, ours);
        if (k->r >= 0)
                k->r = bus_append_limits(k->reply, kernel);
        if (k->r >= 0)
                k->r = sd_bus_message_close_container(k->reply);
}

int bus_method_import_cgroups_keeping_limits(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        BusManager *m = userdata;
        const char *from, *under;
        ServiceImportCounts n;
        KeptReply k = {};
        BusPeer *p;
        Refusal rf;
        int reset, r;

        r = sd_bus_message_read(msg, "ssb", &from, &under, &reset);
        if (r < 0)
                return r;
        r = bus_manager_caller(m, msg, &p, error);
        if (r < 0)
                return r;

        /* The kept groups come during the import: the array is filled then, the counts go before it. */
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        k.reply = reply;
        k.r = sd_bus_message_open_container(reply, 'a', "(sa{st}a{st})");
        if (k.r < 0)
                return k.r;
        refusal_init(&rf);
        r = service_import_cgroups_with(m->service, p->peer, from, under, reset ? SERVICE_IMPORT_RESET_LIMITS : 0,
                                        kept_append, &k, &n, &rf);
        if (r < 0)
                return bus_refusal(error, &rf);
        (void) bus_manager_flush(m);
        if (k.r < 0)
                return k.r;
        r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = sd_bus_message_append(reply, "uuuuu", (uint32_t) n.created, (uint32_t) n.updated,
                                          (uint32_t) n.unchanged, (uint32_t) n.kept, (uint32_t) n.kernel_owned);
        if (r < 0)
                return r;
        return bus_manager_reply_send(m, p, msg, reply);
}

/* ---- placement rules ---- */

int bus_method_add_placement_rule(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusManager *m = userdata;
        const char *cgroup, *group;
        BusPeer *p;
        Refusal rf;
        int r;

        r = sd_bus_message_read(msg, "ss", &cgroup, &group);
        if (r < 0)
                return r;
        r = bus_manager_caller(m, msg, &p, error);
        if (r < 0)
                return r;

        refusal_init(&rf);
        r = service_add_rule(m->service, p->peer, cgroup, group, &rf);
        if (r < 0)
                return bus_refusal(error, &rf);
        return bus_manager_reply_return(m, p, msg, NULL);
}

int bus_method_remove_placement_rule(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return bus_manager_path_call(userdata, msg, service_remove_rule, error);
}

/* ServiceRuleFn of ListPlacementRules: one (cgroup, group) pair; explicit rules only. */
static int listed_rule(void *userdata, const char *cgroup, const char *group, bool mirror) {
        (void) mirror; /* false: listed without the mirrors */
        return sd_bus_message_append(userdata, "(ss)", cgroup, group);
}

/* ServiceRuleFn of ListAllPlacementRules: one (cgroup, group, mirror). */
static int listed_any_rule(void *userdata, const char *cgroup, const char *group, bool mirror) {
        return sd_bus_message_append(userdata, "(ssb)", cgroup, group, (int) mirror);
}

/* The reply of either list, @with_mirrors as service_list_rules(). */
static int list_rules(sd_bus_message *msg, BusManager *m, bool with_mirrors, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *sig = with_mirrors ? "(ssb)" : "(ss)";
        BusPeer *p;
        Refusal rf;
        int r;

        r = bus_manager_caller(m, msg, &p, error);
        if (r < 0)
                return r;

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', sig);
        if (r < 0)
                return r;
        refusal_init(&rf);
        r = service_list_rules(m->service, p->peer, with_mirrors, with_mirrors ? listed_any_rule : listed_rule,
                               reply, &rf);
        if (r < 0)
                return bus_refusal(error, &rf);
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

int bus_method_list_placement_rules(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return list_rules(msg, userdata, false, error);
}

int bus_method_list_all_placement_rules(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return list_rules(msg, userdata, true, error);
}
