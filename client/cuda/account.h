/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The interposer's side of the daemon: one libmemacct session per
 * process, attached where the daemon places the process, and one device
 * region per GPU, named from its PCI bus id as NVIDIA's dmem regions are
 * ("nvidia/0000:3b:00.0/vidmem"). Charges go through the charge stock of
 * their region: an allocation the stock covers costs no round trip.
 *
 * Where the daemon cannot be reached, or does not know the device's
 * region, the administrator's configuration decides (config.h): refuse
 * the allocation, or let it through uncharged. The program's environment
 * decides nothing: the socket and the policy come from a root-owned
 * file, and $MEMACCT_GROUP is a wish the daemon grants or not.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Device ordinals the interposer tells apart; a larger one is refused. */
#define MA_DEVICES_MAX 64

/**
 * ma_charge() - charge @bytes on @device before the driver allocates.
 * *@ret_charged says whether anything was charged (false: let through
 * uncharged, by the policy). Return: 0 (allocate); -EDQUOT (a max
 * refused it); another negative errno (refused by the policy: the daemon
 * is unreachable, or the device unknown to it).
 */
int ma_charge(int device, uint64_t bytes, bool *ret_charged);

/** ma_uncharge() - give back @bytes charged on @device (the driver freed them, or failed to allocate). */
void ma_uncharge(int device, uint64_t bytes);

/**
 * ma_budget() - what the group may still use on @device, for
 * cuMemGetInfo() and NVML: *@total becomes min(@total, the tightest max
 * above the group in the device's region), *@free at most what that max
 * still admits and never more than *@total. Unchanged when the daemon
 * cannot say. Return: 0, or a negative errno (then unchanged).
 */
int ma_budget(int device, size_t *free, size_t *total);

/** ma_budget_region() - ma_budget() of the GPU whose region is @region, in NVML's units. */
int ma_budget_region(const char *region, unsigned long long *free, unsigned long long *total);

/** ma_region_of_pci() - the region of the GPU at PCI bus id @pci ("0000:3B:00.0", any case, NVML's 8-digit domain too) into @buf. */
int ma_region_of_pci(const char *pci, char *buf, size_t size);

/** ma_session() - the process's session, connected on first use; NULL when the daemon is out of reach. */
typedef struct memacct memacct;
memacct *ma_session(void);

/** ma_region_name() - the region of @device into @buf. Return: 0, -ENODEV. */
int ma_region_name(int device, char *buf, size_t size);

/** ma_account_prepare() - connect now, and set the charge stock up, if the daemon is there (cuInit). */
void ma_account_prepare(void);

/** ma_device_of_current() - the device of the calling thread's current context; -1 without one. */
int ma_device_of_current(void);

/** ma_account_atfork_child() - a forked child starts with no session, no ledger: its own, on first use. */
void ma_account_atfork_child(void);
