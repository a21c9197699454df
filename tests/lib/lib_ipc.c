/* SPDX-License-Identifier: MIT */
/*
 * lib_ipc: sharing pinned memory between processes through a dma-buf fd
 * (npu_mem_export_fd / npu_mem_import_fd). A second process (fork + exec)
 * imports the buffer, checks the parent's data through the device, and
 * writes new data into it with a device copy; the parent sees it.
 */
#include "tap.h"

#include <fcntl.h>
#include <sys/wait.h>

#define SIZE (256 * 1024)
#define N (SIZE / 4)

static int child(int fd)
{
	uint32_t *p, *back = malloc(SIZE);
	size_t size;
	void *d;
	int i;

	if (npu_mem_import_fd(fd, (void **)&p, &size) || size < SIZE)
		return 10;
	if (npu_malloc(&d, SIZE))
		return 11;
	/* the parent's pattern, read by the device from the shared pages */
	if (npu_memcpy(d, p, SIZE, NPU_MEMCPY_HOST_TO_DEVICE) ||
	    npu_memcpy(back, d, SIZE, NPU_MEMCPY_DEVICE_TO_HOST))
		return 12;
	for (i = 0; i < N; i++)
		if (back[i] != (uint32_t)i * 7u)
			return 13;
	/* the device writes a new pattern into the shared pages */
	if (npu_memset(d, 0x5a, SIZE) ||
	    npu_memcpy(p, d, SIZE, NPU_MEMCPY_DEVICE_TO_HOST))
		return 14;
	if (npu_host_free(p) || npu_free(d))
		return 15;
	free(back);
	return 0;
}

int main(int argc, char **argv)
{
	uint32_t *h, *again;
	void *d, *reg;
	size_t size;
	int fd, fd2, i, ok, status, before;
	pid_t pid;

	if (argc == 3 && !strcmp(argv[1], "--child"))
		return child(atoi(argv[2]));
	tap_need_device();
	MUST(npu_host_alloc((void **)&h, SIZE, 0));
	for (i = 0; i < N; i++)
		h[i] = (uint32_t)i * 7u;
	before = count_fds();
	ST(npu_mem_export_fd(h, &fd), NPU_SUCCESS, "export pinned memory as dma-buf");
	pid = fork();
	if (pid == 0) {
		char arg[16];

		snprintf(arg, sizeof(arg), "%d", fd);
		fcntl(fd, F_SETFD, 0);
		execl("/proc/self/exe", "lib_ipc", "--child", arg, (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "another process imported it, read it and wrote it through the "
	       "device (exit %d)", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	for (i = 0, ok = 1; i < N; i++)
		ok &= h[i] == 0x5a5a5a5au;
	tap_ok(ok, "the parent sees the other process's device write");
	ST(npu_mem_import_fd(fd, (void **)&again, &size), NPU_ERROR_ALREADY_MAPPED,
	   "importing our own buffer again is refused");
	close(fd);
	tap_ok(count_fds() == before, "no fd leaked");
	/* what cannot be shared */
	MUST(npu_malloc(&d, 4096));
	ST(npu_mem_export_fd(d, &fd2), NPU_ERROR_NOT_SUPPORTED,
	   "device memory is not exportable (driver)");
	reg = aligned_alloc(4096, 8192);
	MUST(npu_host_register(reg, 8192, 0));
	ST(npu_mem_export_fd(reg, &fd2), NPU_ERROR_NOT_SUPPORTED,
	   "registered memory is not exportable (driver)");
	ST(npu_mem_export_fd(h + 1, &fd2), NPU_ERROR_INVALID_POINTER,
	   "interior pointer");
	ST(npu_mem_import_fd(0, (void **)&again, &size), NPU_ERROR_INVALID_VALUE,
	   "importing a non-dma-buf fd");
	MUST(npu_host_unregister(reg));
	free(reg);
	MUST(npu_free(d));
	MUST(npu_host_free(h));
	return tap_done();
}
