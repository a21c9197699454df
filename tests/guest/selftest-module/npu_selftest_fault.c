// SPDX-License-Identifier: GPL-2.0
/*
 * A module that misbehaves on purpose, so that the guest runner's own tests
 * can check that a WARN or an Oops in the guest fails the run. Never loaded
 * by the real test suites.
 */
#include <linux/module.h>
#include <linux/bug.h>

static void *npu_selftest_null;
static char *mode = "warn";
module_param(mode, charp, 0444);
MODULE_PARM_DESC(mode, "warn: WARN() on load; oops: NULL dereference on load");

static int __init npu_selftest_fault_init(void)
{
	if (!strcmp(mode, "oops"))
		return *(int *)READ_ONCE(npu_selftest_null);
	WARN(1, "npu runner self-test: deliberate warning\n");
	return -EINVAL;
}
module_init(npu_selftest_fault_init);

MODULE_DESCRIPTION("npu guest runner self-test: deliberate kernel reports");
MODULE_LICENSE("GPL");
