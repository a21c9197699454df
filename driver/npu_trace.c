// SPDX-License-Identifier: GPL-2.0-only
/*
 * npu_trace.c - instantiates the tracepoints of npu_trace.h.
 */
#define CREATE_TRACE_POINTS
#include "npu_trace.h"
