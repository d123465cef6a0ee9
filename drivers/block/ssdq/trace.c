// SPDX-License-Identifier: GPL-2.0
/*
 * ssdq trace events: their definitions, made once here (trace.h). The
 * lowest layer: every other file may emit them.
 */
#define CREATE_TRACE_POINTS
#include "trace.h"
