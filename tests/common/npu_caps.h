/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * npu_caps.h - drop one capability from the calling process, for tests of
 * what the driver allows without it (kselftests and library tests).
 */
#ifndef NPU_CAPS_H
#define NPU_CAPS_H

#include <errno.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Drop @cap from the effective set: 0 or a negative errno. */
static inline int npu_drop_cap(int cap)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &h, d))
		return -errno;
	d[CAP_TO_INDEX(cap)].effective &= ~CAP_TO_MASK(cap);
	return syscall(SYS_capset, &h, d) ? -errno : 0;
}

#endif
