/* SPDX-License-Identifier: MIT */
/* Shared by the device tests' kernels: the entry point goes first. */
#ifndef NPU_TEST_KERNEL_H
#define NPU_TEST_KERNEL_H

#include "npu_kernel.h"

#define KERNEL __attribute__((section(".text.entry"), used))

#endif
