// SPDX-License-Identifier: MIT
/* Runs forms.co's work() on a stream of its own. */
#include <stdio.h>
#include "forms.h"
int main(void)
{
	npu_stream_t s;
	npu_status_t st = npu_stream_create(&s, 0, 0);

	if (!st)
		st = work(s);
	if (!st)
		st = npu_device_synchronize();
	printf("status %s\n", npu_status_name(st));
	return st != 0;
}
