/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The journal's MESSAGE_ID of each kind of audit and refusal message
 * (log_struct()). Each has an entry in data/catalog/memacctd.catalog,
 * which `journalctl -x` shows beside it; tests/unit/check-catalog.py fails
 * the build's tests when the two lists differ. An ID never changes
 * meaning: a new kind of message gets a new one.
 */

#define MESSAGE_GROUP_CREATED "2e1e4c54106c4fca92b822ed447dbd14"
#define MESSAGE_GROUP_REMOVED "f154c19aca004ac790b88b4fae8fce6c"
#define MESSAGE_LIMITS_SET "bbf8a2eafc394740adab50b558cbd0a6"
#define MESSAGE_OWNER_SET "22c02d6214104a9c8f78f49c2d3444d7"
#define MESSAGE_CGROUPS_IMPORTED "d3e2f972ec114b13922483dee5015a09"
#define MESSAGE_MIRRORS_PRUNED "3f326bc3f6c048f19868ac76de442f61"
#define MESSAGE_RULE_ADDED "aa5e9e57da934d0d87acb13d832a8c2f"
#define MESSAGE_RULE_REMOVED "ea08eb11347045e69e8d16ae41f522c9"
#define MESSAGE_KEPT_CHARGED "149e0ab01e7549a7b5f4e5e7893ac5df"
#define MESSAGE_KEPT_RELEASED "85e60da67b1b45ba9a298122700055ba"
#define MESSAGE_REFUSED_AT_MAX "da5615a841c54bd685e4a96d364c3850"
#define MESSAGE_OUT_OF_MEMORY "2a96dbe9a3664aaabc99cc14c97eec0f"
#define MESSAGE_REGION_CHANGED "74ecd370b1974e20a27f9a706633ace2"
#define MESSAGE_KEPT_TRANSFERRED "9616a74e09f74e0f8176be4752ce36de"
