/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The manager's methods about kernel cgroups: ImportCgroups,
 * ImportCgroupsKeepingLimits, PruneMirrors and the placement rules
 * (org.memacct1(5)), each a handler of the one signature (call.h):
 * decode, ask for the caller, one service call, encode. The changes'
 * replies are held until saved (bus_call_send()).
 */

#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "bus/call.h"
#include "bus/group-limits.h"
#include "bus/manager.h"
#include "bus/mirrors.h"
#include "macro.h"

static int import_cgroups(BusCall *c) {
        const char *from, *under;
        ServiceImportCounts n;
        Peer *peer;
        int r;

        r = sd_bus_message_read(c->msg, "ss", &from, &under);
        if (r >= 0)
                r = bus_call_caller(c, &peer);
        if (r < 0)
                return r;
        r = service_import_cgroups(c->svc, peer, from, under, &n, &c->rf);
        if (r < 0)
                return bus_call_refused(c);
        (void) bus_manager_flush(c->manager);
        return bus_call_return(c, "uuu", (uint32_t) n.created, (uint32_t) n.updated, (uint32_t) n.unchanged);
}
BUS_METHOD(bus_method_import_cgroups, import_cgroups, SERVICE_OP_IMPORT_CGROUPS)

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

/* PruneMirrors' reply: the removed groups (as), then the kept ones with why (a(ss)). */
static int pruned_reply(BusCall *c, const Pruned *pr, sd_bus_message **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = bus_call_new_array(c, "s", &reply);
        for (size_t i = 0; r >= 0 && i < pr->n_removed; i++)
                r = sd_bus_message_append(reply, "s", pr->removed[i]);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(ss)");
        for (size_t i = 0; r >= 0 && i + 1 < pr->n_kept; i += 2)
                r = sd_bus_message_append(reply, "(ss)", pr->kept[i], pr->kept[i + 1]);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(reply);
        return 0;
}

static int prune_mirrors(BusCall *c) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Pruned pr = {};
        Peer *peer;
        int r;

        r = bus_call_caller(c, &peer);
        if (r < 0)
                return r;
        r = service_prune_mirrors(c->svc, peer, pruned_mirror, &pr, &c->rf);
        if (r >= 0 && pr.oom)
                r = refusal_set(&c->rf, -ENOMEM, "pruned, but out of memory listing the groups");
        if (r < 0) {
                pruned_done(&pr);
                return bus_call_refused(c);
        }
        (void) bus_manager_flush(c->manager);
        r = pruned_reply(c, &pr, &reply);
        pruned_done(&pr);
        return r < 0 ? r : bus_call_send(c, reply);
}
BUS_METHOD(bus_method_prune_mirrors, prune_mirrors, SERVICE_OP_PRUNE_MIRRORS)

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

static int import_cgroups_keeping_limits(BusCall *c) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *from, *under;
        ServiceImportCounts n;
        KeptReply k = {};
        int reset, r;
        Peer *peer;

        r = sd_bus_message_read(c->msg, "ssb", &from, &under, &reset);
        if (r >= 0)
                r = bus_call_caller(c, &peer);
        /* The kept groups come during the import: the array is filled then, the counts after it. */
        if (r >= 0)
                r = bus_call_new_array(c, "(sa{st}a{st})", &reply);
        if (r < 0)
                return r;
        k.reply = reply;
        r = service_import_cgroups_with(c->svc, peer, from, under, reset ? SERVICE_IMPORT_RESET_LIMITS : 0,
                                        kept_append, &k, &n, &c->rf);
        if (r < 0)
                return bus_call_refused(c);
        (void) bus_manager_flush(c->manager);
        r = k.r < 0 ? k.r : sd_bus_message_close_container(reply);
        if (r >= 0)
                r = sd_bus_message_append(reply, "uuuuu", (uint32_t) n.created, (uint32_t) n.updated,
                                          (uint32_t) n.unchanged, (uint32_t) n.kept, (uint32_t) n.kernel_owned);
        return r < 0 ? r : bus_call_send(c, reply);
}
BUS_METHOD(bus_method_import_cgroups_keeping_limits, import_cgroups_keeping_limits, SERVICE_OP_IMPORT_CGROUPS)

/* ---- placement rules ---- */

/* AddPlacementRule(ss) and AddPlacementRuleWithFlags(sst): flags as SERVICE_RULE_* (1: confine). */
static int placement_rule_add(BusCall *c, bool with_flags) {
        const char *cgroup, *group;
        uint64_t flags = 0;
        Peer *peer;
        int r;

        r = with_flags ? sd_bus_message_read(c->msg, "sst", &cgroup, &group, &flags)
                       : sd_bus_message_read(c->msg, "ss", &cgroup, &group);
        if (r >= 0)
                r = bus_call_caller(c, &peer);
        if (r < 0)
                return r;
        if (flags > UINT_MAX)
                flags = UINT_MAX; /* unknown bits: refused as such */
        r = service_add_rule(c->svc, peer, cgroup, group, (unsigned) flags, &c->rf);
        if (r < 0)
                return bus_call_refused(c);
        return bus_call_return(c, NULL);
}

static int add_placement_rule(BusCall *c) {
        return placement_rule_add(c, false);
}
BUS_METHOD(bus_method_add_placement_rule, add_placement_rule, SERVICE_OP_ADD_RULE)

static int add_placement_rule_with_flags(BusCall *c) {
        return placement_rule_add(c, true);
}
BUS_METHOD(bus_method_add_placement_rule_with_flags, add_placement_rule_with_flags, SERVICE_OP_ADD_RULE)

static int remove_placement_rule(BusCall *c) {
        return bus_call_path(c, service_remove_rule);
}
BUS_METHOD(bus_method_remove_placement_rule, remove_placement_rule, SERVICE_OP_REMOVE_RULE)

/* ServiceRuleFn of ListPlacementRules: one (cgroup, group) pair; explicit rules only. */
static int listed_rule(void *userdata, const char *cgroup, const char *group, bool mirror, unsigned flags) {
        (void) mirror, (void) flags; /* false: listed without the mirrors; flags: ListPlacementRulesWithFlags */
        return sd_bus_message_append(userdata, "(ss)", cgroup, group);
}

/* ServiceRuleFn of ListAllPlacementRules: one (cgroup, group, mirror). */
static int listed_any_rule(void *userdata, const char *cgroup, const char *group, bool mirror, unsigned flags) {
        (void) flags;
        return sd_bus_message_append(userdata, "(ssb)", cgroup, group, (int) mirror);
}

/* The reply of either list, @with_mirrors as service_list_rules(). */
static int rules_list(BusCall *c, bool with_mirrors) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Peer *peer;
        int r;

        r = bus_call_caller(c, &peer);
        if (r >= 0)
                r = bus_call_new_array(c, with_mirrors ? "(ssb)" : "(ss)", &reply);
        if (r < 0)
                return r;
        r = service_list_rules(c->svc, peer, with_mirrors, with_mirrors ? listed_any_rule : listed_rule, reply,
                               &c->rf);
        if (r < 0)
                return bus_call_refused(c);
        return bus_array_send(reply);
}

static int list_placement_rules(BusCall *c) {
        return rules_list(c, false);
}
BUS_METHOD(bus_method_list_placement_rules, list_placement_rules, SERVICE_OP_LIST_RULES)

static int list_all_placement_rules(BusCall *c) {
        return rules_list(c, true);
}
BUS_METHOD(bus_method_list_all_placement_rules, list_all_placement_rules, SERVICE_OP_LIST_RULES)
