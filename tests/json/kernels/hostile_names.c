// SPDX-License-Identifier: MIT
/*
 * Two kernels whose names a trace writer must escape: quotes, a backslash,
 * a newline, a tab and UTF-8; and a name whose 32nd byte cuts a UTF-8
 * character in the trace record (npu_trace_record.name). The descriptors
 * and entry symbols are written out by hand because NPU_KERNEL takes C
 * identifiers.
 */
#include <npu_kernel.h>

#define HOSTILE		"q\"b\\s\nl\tt\xc3\xa9\xe2\x9c\x93"
#define CUT		"cut_at_thirty_one_bytes_______\xc3\xa9_tail"

__attribute__((used, section(NPU_CODE_DESC_SECTION)))
const struct npu_code_desc hostile_desc[2] = {
	{ NPU_CODE_DESC_MAGIC, NPU_CODE_VERSION, HOSTILE, 0, 0, 0, 0, { 0 }, { 0 } },
	{ NPU_CODE_DESC_MAGIC, NPU_CODE_VERSION, CUT, 0, 0, 0, 0, { 0 }, { 0 } },
};

__attribute__((used, noinline)) void hostile_entry(void)
	__asm__(NPU_CODE_ENTRY_PREFIX HOSTILE);
__attribute__((used, noinline)) void cut_entry(void)
	__asm__(NPU_CODE_ENTRY_PREFIX CUT);

void hostile_entry(void)
{
}

void cut_entry(void)
{
}
