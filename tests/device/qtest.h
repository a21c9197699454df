/* SPDX-License-Identifier: MIT */
/*
 * Minimal client for QEMU's qtest protocol (and a little QMP), used by the
 * npu device tests.
 */
#ifndef NPU_TEST_QTEST_H
#define NPU_TEST_QTEST_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct qt {
	pid_t pid;
	int in;			/* commands to QEMU */
	int out;		/* replies from QEMU */
	int qmp;		/* QMP socket, -1 if none */
	char *buf;		/* reply buffer */
	size_t len, cap;
	int dead;		/* QEMU stopped answering */
	int reaped;		/* QEMU exited, status in exit_status */
	int exit_status;	/* waitpid() status once reaped */
	char qmp_path[108];
};

/* Start QEMU with the given extra arguments (NULL terminated array). */
struct qt *qt_start(const char *qemu, const char *const *extra, int with_qmp);
/* Quit QEMU; returns 0 if it exited normally (not by a signal). */
int qt_quit(struct qt *q);
int qt_alive(struct qt *q);
/*
 * Wait up to timeout_ms for QEMU to exit by itself (e.g. a failed incoming
 * migration); its exit code, or -1 if it still runs or died by a signal.
 * qt_quit() then only releases q.
 */
int qt_wait_exit(struct qt *q, int timeout_ms);

/* Send a command, return the reply line (without "OK"), NULL on failure. */
const char *qt_cmd(struct qt *q, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Send several commands (one per line of text, each ending in a newline) in
 * one write, so QEMU runs them back to back without releasing its global
 * lock in between; wait up to timeout_ms for all replies. Returns the
 * number of OK replies; QEMU is marked dead if it does not answer.
 */
int qt_batch(struct qt *q, const char *text, int timeout_ms);
/* The same, storing the values of the replies that carry one (readl...),
 * in order, into vals[0..nvals). */
int qt_batch_vals(struct qt *q, const char *text, uint64_t *vals, int nvals,
		  int timeout_ms);

void qt_outl(struct qt *q, uint16_t port, uint32_t v);
void qt_outw(struct qt *q, uint16_t port, uint16_t v);
uint32_t qt_inl(struct qt *q, uint16_t port);
void qt_writel(struct qt *q, uint64_t addr, uint32_t v);
void qt_writeq(struct qt *q, uint64_t addr, uint64_t v);
uint32_t qt_readl(struct qt *q, uint64_t addr);
uint64_t qt_readq(struct qt *q, uint64_t addr);
void qt_memwrite(struct qt *q, uint64_t addr, const void *data, size_t len);
void qt_memread(struct qt *q, uint64_t addr, void *data, size_t len);
void qt_memset(struct qt *q, uint64_t addr, uint8_t v, size_t len);

/* QMP: send a command (JSON text), return the reply (with "return" or
 * "error"), skipping events; NULL on failure. The result is valid until the
 * next call. */
const char *qmp_cmd(struct qt *q, const char *json);
/* Wait for an event whose text contains name; 0 on success. */
int qmp_wait_event(struct qt *q, const char *name, int timeout_ms);

#endif
