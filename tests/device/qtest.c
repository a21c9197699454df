// SPDX-License-Identifier: MIT
/*
 * Minimal qtest protocol client: QEMU runs with "-qtest stdio"; we write
 * text commands to its stdin and read "OK ..." / "FAIL ..." lines from its
 * stdout. Asynchronous "IRQ ..." lines are skipped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "qtest.h"

#define REPLY_TIMEOUT_MS 20000

static char *qmp_buf;
static size_t qmp_len, qmp_cap;

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static int connect_qmp(struct qt *q)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	long long end = now_ms() + 10000;
	int fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", q->qmp_path);
	while (now_ms() < end) {
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -1;
		if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			return fd;
		close(fd);
		usleep(20000);
	}
	return -1;
}

struct qt *qt_start(const char *qemu, const char *const *extra, int with_qmp)
{
	static int seq;
	int pin[2], pout[2];
	const char *argv[64];
	char qmparg[160];
	int n = 0, i;
	struct qt *q = calloc(1, sizeof(*q));

	if (!q || pipe2(pin, O_CLOEXEC) || pipe2(pout, O_CLOEXEC))
		return NULL;
	q->qmp = -1;
	argv[n++] = qemu;
	argv[n++] = "-machine";
	argv[n++] = "pc";
	argv[n++] = "-accel";
	argv[n++] = "qtest";
	argv[n++] = "-qtest";
	argv[n++] = "stdio";
	argv[n++] = "-qtest-log";
	argv[n++] = "/dev/null";
	argv[n++] = "-display";
	argv[n++] = "none";
	argv[n++] = "-nodefaults";
	argv[n++] = "-name";		/* thread names: npu-ring0, npu-cu */
	argv[n++] = "debug-threads=on";
	argv[n++] = "-nic";
	argv[n++] = "none";
	argv[n++] = "-m";
	argv[n++] = "256M";
	argv[n++] = "-L";
	argv[n++] = "/usr/share/seabios";
	argv[n++] = "-L";
	argv[n++] = "/usr/share/qemu";
	if (with_qmp) {
		snprintf(q->qmp_path, sizeof(q->qmp_path),
			 "/tmp/npu-devtest-%d-%d.qmp", (int)getpid(), seq++);
		unlink(q->qmp_path);
		snprintf(qmparg, sizeof(qmparg), "unix:%s,server=on,wait=off",
			 q->qmp_path);
		argv[n++] = "-qmp";
		argv[n++] = qmparg;
	}
	for (i = 0; extra && extra[i] && n < 62; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;

	q->pid = fork();
	if (q->pid < 0)
		return NULL;
	if (!q->pid) {
		/* a test that aborts must not leave its QEMU running */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(pin[0], 0);
		dup2(pout[1], 1);
		execv(qemu, (char *const *)argv);
		_exit(127);
	}
	close(pin[0]);
	close(pout[1]);
	q->in = pin[1];
	q->out = pout[0];
	signal(SIGPIPE, SIG_IGN);
	if (with_qmp) {
		q->qmp = connect_qmp(q);
		if (q->qmp < 0 || !qmp_cmd(q, "{\"execute\":\"qmp_capabilities\"}")) {
			q->dead = 1;
			return q;
		}
	}
	/* make sure the qtest side answers */
	if (!qt_cmd(q, "clock_step 1"))
		q->dead = 1;
	return q;
}

/* Read one line from fd into *buf (growing), with a timeout. */
static char *read_line(int fd, char **buf, size_t *len, size_t *cap,
		       int timeout_ms)
{
	long long end = now_ms() + timeout_ms;

	for (;;) {
		char *nl = *len ? memchr(*buf, '\n', *len) : NULL;
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		long long left;
		ssize_t r;

		if (nl) {
			static char *line;
			size_t l = nl - *buf;

			free(line);
			line = malloc(l + 1);
			if (!line)
				return NULL;
			memcpy(line, *buf, l);
			line[l] = 0;
			memmove(*buf, nl + 1, *len - l - 1);
			*len -= l + 1;
			return line;
		}
		left = end - now_ms();
		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			return NULL;
		if (*cap - *len < 65536) {
			*cap = *cap * 2 + 131072;
			*buf = realloc(*buf, *cap);
			if (!*buf)
				return NULL;
		}
		r = read(fd, *buf + *len, *cap - *len);
		if (r <= 0)
			return NULL;
		*len += r;
	}
}

const char *qt_cmd(struct qt *q, const char *fmt, ...)
{
	char *cmd;
	va_list ap;
	int n;

	if (q->dead)
		return NULL;
	va_start(ap, fmt);
	n = vasprintf(&cmd, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	cmd = realloc(cmd, n + 2);
	cmd[n] = '\n';
	for (ssize_t off = 0; off < n + 1;) {
		ssize_t w = write(q->in, cmd + off, n + 1 - off);

		if (w <= 0) {
			free(cmd);
			q->dead = 1;
			return NULL;
		}
		off += w;
	}
	free(cmd);
	for (;;) {
		char *line = read_line(q->out, &q->buf, &q->len, &q->cap,
				       REPLY_TIMEOUT_MS);

		if (!line) {
			q->dead = 1;
			return NULL;
		}
		if (!strncmp(line, "IRQ", 3))
			continue;
		if (!strncmp(line, "OK", 2))
			return line[2] == ' ' ? line + 3 : line + 2;
		fprintf(stderr, "# qtest: %s\n", line);
		return NULL;
	}
}

int qt_batch(struct qt *q, const char *text, int timeout_ms)
{
	return qt_batch_vals(q, text, NULL, 0, timeout_ms);
}

int qt_batch_vals(struct qt *q, const char *text, uint64_t *vals, int nvals,
		  int timeout_ms)
{
	size_t n = strlen(text);
	int lines = 0, good = 0, nv = 0;
	long long end = now_ms() + timeout_ms;

	if (q->dead)
		return 0;
	for (size_t i = 0; i < n; i++)
		lines += text[i] == '\n';
	for (size_t off = 0; off < n;) {
		ssize_t w = write(q->in, text + off, n - off);

		if (w <= 0) {
			q->dead = 1;
			return 0;
		}
		off += w;
	}
	while (lines) {
		long long left = end - now_ms();
		char *line = left > 0 ? read_line(q->out, &q->buf, &q->len,
						  &q->cap, (int)left) : NULL;

		if (!line) {
			q->dead = 1;
			return good;
		}
		if (!strncmp(line, "IRQ", 3))
			continue;
		good += !strncmp(line, "OK", 2);
		if (!strncmp(line, "OK 0x", 5) && nv < nvals)
			vals[nv++] = strtoull(line + 3, NULL, 16);
		lines--;
	}
	return good;
}

void qt_outl(struct qt *q, uint16_t port, uint32_t v)
{
	qt_cmd(q, "outl 0x%x 0x%x", port, v);
}

void qt_outw(struct qt *q, uint16_t port, uint16_t v)
{
	qt_cmd(q, "outw 0x%x 0x%x", port, v);
}

static uint64_t num(const char *r)
{
	return r ? strtoull(r, NULL, 0) : ~0ull;
}

uint32_t qt_inl(struct qt *q, uint16_t port)
{
	return num(qt_cmd(q, "inl 0x%x", port));
}

void qt_writel(struct qt *q, uint64_t addr, uint32_t v)
{
	qt_cmd(q, "writel 0x%llx 0x%x", (unsigned long long)addr, v);
}

void qt_writeq(struct qt *q, uint64_t addr, uint64_t v)
{
	qt_cmd(q, "writeq 0x%llx 0x%llx", (unsigned long long)addr,
	       (unsigned long long)v);
}

uint32_t qt_readl(struct qt *q, uint64_t addr)
{
	return num(qt_cmd(q, "readl 0x%llx", (unsigned long long)addr));
}

uint64_t qt_readq(struct qt *q, uint64_t addr)
{
	return num(qt_cmd(q, "readq 0x%llx", (unsigned long long)addr));
}

static const char b64[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *b64_encode(const uint8_t *p, size_t len)
{
	char *out = malloc(len / 3 * 4 + 8), *o = out;
	size_t i;

	for (i = 0; i + 2 < len; i += 3) {
		uint32_t v = p[i] << 16 | p[i + 1] << 8 | p[i + 2];

		*o++ = b64[v >> 18];
		*o++ = b64[(v >> 12) & 63];
		*o++ = b64[(v >> 6) & 63];
		*o++ = b64[v & 63];
	}
	if (len - i == 1) {
		uint32_t v = p[i] << 16;

		*o++ = b64[v >> 18];
		*o++ = b64[(v >> 12) & 63];
		*o++ = '=';
		*o++ = '=';
	} else if (len - i == 2) {
		uint32_t v = p[i] << 16 | p[i + 1] << 8;

		*o++ = b64[v >> 18];
		*o++ = b64[(v >> 12) & 63];
		*o++ = b64[(v >> 6) & 63];
		*o++ = '=';
	}
	*o = 0;
	return out;
}

static size_t b64_decode(const char *s, uint8_t *out, size_t max)
{
	uint32_t v = 0;
	int bits = 0;
	size_t n = 0;

	for (; *s && *s != ' '; s++) {
		const char *c = strchr(b64, *s);

		if (*s == '=' || !c)
			break;
		v = v << 6 | (uint32_t)(c - b64);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (n < max)
				out[n] = v >> bits;
			n++;
		}
	}
	return n;
}

#define MEM_CHUNK 65536

void qt_memwrite(struct qt *q, uint64_t addr, const void *data, size_t len)
{
	const uint8_t *p = data;

	while (len) {
		size_t n = len < MEM_CHUNK ? len : MEM_CHUNK;
		char *enc = b64_encode(p, n);

		qt_cmd(q, "b64write 0x%llx 0x%zx %s", (unsigned long long)addr,
		       n, enc);
		free(enc);
		addr += n;
		p += n;
		len -= n;
	}
}

void qt_memread(struct qt *q, uint64_t addr, void *data, size_t len)
{
	uint8_t *p = data;

	while (len) {
		size_t n = len < MEM_CHUNK ? len : MEM_CHUNK;
		const char *r = qt_cmd(q, "b64read 0x%llx 0x%zx",
				       (unsigned long long)addr, n);

		if (!r || b64_decode(r, p, n) != n)
			memset(p, 0xee, n);
		addr += n;
		p += n;
		len -= n;
	}
}

void qt_memset(struct qt *q, uint64_t addr, uint8_t v, size_t len)
{
	qt_cmd(q, "memset 0x%llx 0x%zx 0x%x", (unsigned long long)addr, len, v);
}

int qt_alive(struct qt *q)
{
	return !q->dead && qt_cmd(q, "clock_step 1") != NULL;
}

int qt_wait_exit(struct qt *q, int timeout_ms)
{
	long long end = now_ms() + timeout_ms;

	while (!q->reaped) {
		if (waitpid(q->pid, &q->exit_status, WNOHANG) == q->pid) {
			q->reaped = 1;
			q->dead = 1;
			break;
		}
		if (now_ms() >= end)
			return -1;
		usleep(10000);
	}
	return WIFEXITED(q->exit_status) ? WEXITSTATUS(q->exit_status) : -1;
}

int qt_quit(struct qt *q)
{
	int status = 0, ok = 0;
	long long end;

	if (!q)
		return -1;
	if (q->reaped) {
		status = q->exit_status;
		if (q->qmp >= 0) {
			close(q->qmp);
			unlink(q->qmp_path);
		}
		close(q->in);
		ok = WIFEXITED(status) ? 0 : -1;
		goto out;
	}
	if (q->qmp >= 0) {
		qmp_cmd(q, "{\"execute\":\"quit\"}");
		close(q->qmp);
		unlink(q->qmp_path);
	}
	if (q->qmp < 0)
		kill(q->pid, SIGTERM);	/* QEMU exits cleanly on SIGTERM */
	usleep(1000);
	close(q->in);
	end = now_ms() + 10000;
	while (now_ms() < end) {
		pid_t r = waitpid(q->pid, &status, WNOHANG);

		if (r == q->pid) {
			ok = WIFEXITED(status) ? 0 : -1;
			goto out;
		}
		usleep(10000);
	}
	kill(q->pid, SIGKILL);
	waitpid(q->pid, &status, 0);
	ok = -1;
out:
	close(q->out);
	free(q->buf);
	free(q);
	return ok;
}

static int qmp_send(struct qt *q, const char *json)
{
	size_t n = strlen(json);

	if (q->qmp < 0 || write(q->qmp, json, n) != (ssize_t)n ||
	    write(q->qmp, "\n", 1) != 1)
		return -1;
	return 0;
}

const char *qmp_cmd(struct qt *q, const char *json)
{
	if (qmp_send(q, json))
		return NULL;
	for (;;) {
		char *line = read_line(q->qmp, &qmp_buf, &qmp_len, &qmp_cap,
				       REPLY_TIMEOUT_MS);

		if (!line)
			return NULL;
		if (strstr(line, "\"return\"") || strstr(line, "\"error\"")) {
			static char *copy;

			free(copy);
			copy = strdup(line);
			return copy;
		}
	}
}

int qmp_wait_event(struct qt *q, const char *name, int timeout_ms)
{
	long long end = now_ms() + timeout_ms;

	while (now_ms() < end) {
		char *line = read_line(q->qmp, &qmp_buf, &qmp_len, &qmp_cap,
				       (int)(end - now_ms()));

		if (!line)
			return -1;
		if (strstr(line, "\"event\"") && strstr(line, name))
			return 0;
	}
	return -1;
}
