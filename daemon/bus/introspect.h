/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdio.h>

/**
 * bus_introspect() - --bus-introspect: print the introspection XML of
 * @object_path ("list": the object paths there are) to @out, from the
 * vtables, over an in-process peer-to-peer connection. No service needed.
 * Return: 0 or a negative errno (logged).
 */
int bus_introspect(const char *object_path, FILE *out);
