// SPDX-License-Identifier: MIT
/*
 * npu-choreo - compile Choreo __co__ functions for the npu.
 *
 *   npu-choreo build FILE.co -o FILE.o [--header FILE.h]
 *   npu-choreo exe FILE.co -o PROG [--entry NAME]
 *   npu-choreo run FILE.co [--entry NAME] [--guest KERNEL]
 *
 * Front end (lexer.l, parser.y, sema.c), then kernel C (kernel_gen.c)
 * compiled by npu-cc -O2 -g into a code object, and host C (host_gen.c)
 * that takes that object in whole, compiled by cc against npu.h and
 * npu_choreo.h; the compilers run beside each other.
 * Its files are found relative to the executable, as npu-cc's are:
 * ../include (npu.h, npu/npu_choreo.h), npu-cc beside it, and libnpu in
 * ../lib (installed) or ../../lib (the staged build tree).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ast.h"
#include "device_code.h"
#include "diag.h"
#include "host_gen.h"
#include "kernel_gen.h"
#include "sema.h"

extern char **environ;
extern struct node *parse_result;
int yyparse(void);
void lexer_start(FILE *in);

static bool verbose, keep_temps;
static char bindir[PATH_MAX], incdir[PATH_MAX + 16], libdir[PATH_MAX + 16];
static char guest_runner[PATH_MAX + 64], guest_bin[PATH_MAX + 16];
static char tmpdir[PATH_MAX];

/* snprintf for paths: a path that does not fit is an error, not a
 * silently different path */
static void pathf(char *buf, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void pathf(char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(buf, n, fmt, ap);
	va_end(ap);
	if (len < 0 || (size_t)len >= n) {
		fprintf(stderr, "npu-choreo: path too long: %s\n", buf);
		exit(2);
	}
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: npu-choreo build FILE.co -o FILE.o [--header FILE.h]\n"
"       npu-choreo exe FILE.co -o PROG [--entry NAME]\n"
"       npu-choreo run FILE.co [--entry NAME] [--guest KERNEL]\n"
"Compile Choreo __co__ functions for the npu: each parallel-by body\n"
"becomes a kernel (npu-cc), the rest host C over libnpu.\n"
"  -o FILE          output\n"
"  --header FILE.h  build: declare the functions for C callers\n"
"  --entry NAME     exe/run: the parameterless __co__ function to run\n"
"  --guest KERNEL   run: in a guest of the source tree (tests/guest/run.sh)\n"
"  --keep-temps     keep the generated C (its directory is printed)\n"
"  -v, --verbose    print the commands run\n"
"  -h, --help       print this help and exit\n");
}

/* argv started, its pid; -1 (said why) if it could not be. */
static pid_t spawn_argv(char *const argv[])
{
	pid_t pid;
	int st, i;

	if (verbose) {
		for (i = 0; argv[i]; i++)
			fprintf(stderr, "%s%s", i ? " " : "", argv[i]);
		fputc('\n', stderr);
	}
	st = posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ);
	if (st) {
		fprintf(stderr, "npu-choreo: cannot run %s: %s\n", argv[0], strerror(st));
		return -1;
	}
	return pid;
}

/* The exit status of a child of spawn_argv (128 + signal if killed). */
static int wait_child(pid_t pid)
{
	int st;

	if (pid < 0)
		return -1;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static int run_argv(char *const argv[])
{
	return wait_child(spawn_argv(argv));
}

/*
 * The compilers of a build run beside each other: g++ on the program's own
 * C++ main (it needs neither the kernels nor the host C), npu-cc on the
 * kernels, and cc on the host C as far as assembly (-S), which needs the
 * kernels' code object only when the assembler takes it in. Each pid is
 * -1 when none runs; cleanup stops those an error left running.
 */
static pid_t main_cc_pid = -1, kernels_cc_pid = -1, host_cc_pid = -1;
/* choreo.h being precompiled (pch_prepare) into pch_tmp */
static pid_t pch_pid = -1;
static char pch_tmp[PATH_MAX + 96];

static void find_sdk(void)
{
	char self[PATH_MAX], path[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0) {
		perror("npu-choreo: /proc/self/exe");
		exit(2);
	}
	self[n] = 0;
	pathf(bindir, sizeof(bindir), "%s", dirname(self));
	pathf(incdir, sizeof(incdir), "%s/../include", bindir);
	/* installed: PREFIX/lib; staged: build/sdk/bin -> build/lib */
	pathf(libdir, sizeof(libdir), "%s/../lib", bindir);
	pathf(path, sizeof(path), "%s/libnpu.so", libdir);
	if (access(path, R_OK))
		pathf(libdir, sizeof(libdir), "%s/../../lib", bindir);
	if (realpath(libdir, path))
		pathf(libdir, sizeof(libdir), "%s", path);
	if (realpath(incdir, path))
		pathf(incdir, sizeof(incdir), "%s", path);
}

static char *read_file(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0, cap = 0, got;

	if (!f)
		return NULL;
	do {
		if (n + 4096 + 1 > cap) {
			cap = 2 * cap + 8192;
			buf = realloc(buf, cap);
			if (!buf)
				exit(2);
		}
		got = fread(buf + n, 1, cap - n - 1, f);
		n += got;
	} while (got);
	fclose(f);
	buf[n] = 0;
	if (size)
		*size = n;
	return buf;
}

static void cleanup(void)
{
	char *argv[] = { "rm", "-rf", tmpdir, NULL };

	pid_t *running[] = { &main_cc_pid, &kernels_cc_pid, &host_cc_pid, &pch_pid };
	unsigned i;

	for (i = 0; i < sizeof(running) / sizeof(running[0]); i++) {
		if (*running[i] > 0) {	/* an error stopped the build first */
			kill(*running[i], SIGTERM);
			wait_child(*running[i]);
			*running[i] = -1;
		}
	}
	if (pch_tmp[0])
		unlink(pch_tmp);
	if (!tmpdir[0])
		return;
	if (keep_temps) {
		fprintf(stderr, "npu-choreo: generated files in %s\n", tmpdir);
		return;
	}
	run_argv(argv);
}

static FILE *open_out(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		fprintf(stderr, "npu-choreo: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	return f;
}

/* npu-cc started on the kernels, to write their code object to obj (the
 * host C takes it in whole); nothing if there are none. */
static void start_kernels(struct program *prog, char *obj, size_t obj_size)
{
	char src[PATH_MAX + 32], npucc[PATH_MAX + 16];
	FILE *f;

	pathf(obj, obj_size, "%s/kernels.npu", tmpdir);
	if (!prog->nkernels)
		return;
	pathf(src, sizeof(src), "%s/kernels.c", tmpdir);
	pathf(npucc, sizeof(npucc), "%s/npu-cc", bindir);
	f = open_out(src);
	kernel_gen(f, prog);
	if (fclose(f)) {
		perror("npu-choreo: kernels.c");
		exit(2);
	}
	{
		char *argv[] = { npucc, "-O2", "-g", src, "-o", obj, NULL };

		kernels_cc_pid = spawn_argv(argv);
		if (kernels_cc_pid < 0)
			exit(1);
	}
}

/* Wait for the compilers start_kernels and start_host_c started; 0 when
 * both succeeded, else 1 (said which failed). */
static int wait_kernels_and_host_c(const char *host_c)
{
	int kernels_rc = 0, host_rc;

	if (kernels_cc_pid != -1) {
		kernels_rc = wait_child(kernels_cc_pid);
		kernels_cc_pid = -1;
	}
	host_rc = wait_child(host_cc_pid);
	host_cc_pid = -1;
	if (kernels_rc) {
		fprintf(stderr, "npu-choreo: npu-cc failed on the generated "
			"kernels (%s/kernels.c)\n", tmpdir);
		keep_temps = true;
		return 1;
	}
	if (host_rc) {
		fprintf(stderr, "npu-choreo: cc failed on the generated host "
			"code (%s)\n", host_c);
		keep_temps = true;
		return 1;
	}
	return 0;
}

static const struct node *pick_entry(struct program *prog, const char *entry)
{
	const struct node *found = NULL;
	int i, n = 0;

	for (i = 0; i < prog->root->nkids; i++) {
		const struct node *f = prog->root->kids[i];

		if (entry && !strcmp(f->name, entry)) {
			if (f->kids[0]->nkids) {
				fprintf(stderr, "npu-choreo: '%s' has parameters: the entry "
					"must have none\n", entry);
				exit(1);
			}
			return f;
		}
		if (!f->kids[0]->nkids) {
			found = f;
			n++;
		}
	}
	if (entry) {
		fprintf(stderr, "npu-choreo: no __co__ function '%s'\n", entry);
		exit(1);
	}
	if (n == 1)
		return found;
	if (!n) {
		fprintf(stderr, "npu-choreo: no parameterless __co__ function to run "
			"(functions:");
		for (i = 0; i < prog->root->nkids; i++)
			fprintf(stderr, " %s", prog->root->kids[i]->name);
		fprintf(stderr, "%s)\n", prog->root->nkids ? "" : " none");
		exit(1);
	}
	fprintf(stderr, "npu-choreo: several parameterless __co__ functions, "
		"choose one with --entry:");
	for (i = 0; i < prog->root->nkids; i++)
		if (!prog->root->kids[i]->kids[0]->nkids)
			fprintf(stderr, " %s", prog->root->kids[i]->name);
	fputc('\n', stderr);
	exit(1);
}

/* The C++ host program of the file: its text with every __co__ function
 * blanked out (newlines kept, so lines stay the file's) */
static char *host_program_text(const char *text)
{
	char *host = strdup(text);
	long len = (long)strlen(text), i;
	int r;

	if (!host)
		exit(2);
	for (r = 0; r < n_co_ranges; r++) {
		long end = co_ranges[r].end < 0 ? len : co_ranges[r].end;

		for (i = co_ranges[r].start; i < end && i < len; i++)
			if (host[i] != '\n')
				host[i] = ' ';
	}
	device_code_blank(host);
	return host;
}

/* does the host code define `main(`? (outside comments and strings) */
static bool defines_main(const char *host)
{
	const char *p = host;

	while (*p) {
		if (p[0] == '/' && p[1] == '/') {
			p += strcspn(p, "\n");
		} else if (p[0] == '/' && p[1] == '*') {
			const char *e = strstr(p + 2, "*/");

			p = e ? e + 2 : p + strlen(p);
		} else if (*p == '"') {
			for (p++; *p && *p != '"' && *p != '\n'; p++)
				if (*p == '\\' && p[1])
					p++;
			if (*p)
				p++;
		} else if (!strncmp(p, "main", 4) &&
			   (p == host || !(isalnum((unsigned char)p[-1]) || p[-1] == '_'))) {
			const char *q = p + 4;

			while (*q == ' ' || *q == '\t')
				q++;
			if (*q == '(')
				return true;
			p += 4;
		} else {
			p++;
		}
	}
	return false;
}

/* The include guard names the header's file (NPU_CHOREO_<NAME>_H), so a
 * C file can include the headers of several .co files. */
static char *header_guard(const char *path)
{
	const char *base = strrchr(path, '/');
	char *guard, *g;

	base = base ? base + 1 : path;
	guard = malloc(strlen("NPU_CHOREO__") + strlen(base) + 1);
	if (!guard) {
		fprintf(stderr, "npu-choreo: out of memory\n");
		exit(2);
	}
	g = guard + sprintf(guard, "NPU_CHOREO_");
	for (; *base; base++)
		*g++ = isalnum((unsigned char)*base) ?
			toupper((unsigned char)*base) : '_';
	if (g[-1] != '_')
		*g++ = '_';
	*g = '\0';
	return guard;
}

static void write_header(struct program *prog, const char *path)
{
	FILE *f = open_out(path);
	char *guard = header_guard(path);
	int i;

	fprintf(f, "/* generated by npu-choreo from %s */\n"
		"#ifndef %s\n#define %s\n\n"
		"#include <stdbool.h>\n#include <npu.h>\n#include <npu/npu_choreo.h>\n\n"
		"#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n", diag_path(),
		guard, guard);
	free(guard);
	for (i = 0; i < prog->root->nkids; i++) {
		host_prototype(f, prog->root->kids[i]);
		fputs(";\n", f);
	}
	fputs("\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n", f);
	if (fclose(f)) {
		fprintf(stderr, "npu-choreo: %s: %s\n", path, strerror(errno));
		exit(2);
	}
}

/* how g++ compiles a program's own main, and choreo.h precompiled for it */
static const char *const main_cxx_flags[] = {
	"-std=c++17", "-O0", "-g", "-fPIC", "-pthread",
};
#define N_MAIN_CXX_FLAGS (sizeof(main_cxx_flags) / sizeof(main_cxx_flags[0]))

/*
 * choreo.h precompiled for g++ (most of a small host program's compile
 * time), in the user's cache: $XDG_CACHE_HOME/npu-choreo or
 * ~/.cache/npu-choreo. Its name is a hash of what makes it (the headers'
 * text, the compiler, the flags), so a changed header or compiler makes a
 * new one; g++ itself parses the header instead of a precompiled one it
 * finds stale. Made by the first build that needs it, while npu-cc runs.
 */
static char pch_header[PATH_MAX + 64];	/* -include'd; "" if none */

static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
	const unsigned char *p = data;

	while (n--)
		h = (h ^ *p++) * 0x100000001b3ull;
	return h;
}

/* the file the shell would run for name (PATH searched), or "" */
static void which(const char *name, char *out, size_t n)
{
	char *path = getenv("PATH"), *copy, *dir, *save = NULL;
	char cand[PATH_MAX];

	out[0] = 0;
	if (strchr(name, '/')) {
		if (!realpath(name, out))
			out[0] = 0;
		return;
	}
	copy = strdup(path ? path : "/usr/bin:/bin");
	for (dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		if ((size_t)snprintf(cand, sizeof(cand), "%s/%s", dir, name) <
		    sizeof(cand) && !access(cand, X_OK) && realpath(cand, out) &&
		    strlen(out) < n)
			break;
		out[0] = 0;
	}
	free(copy);
}

/* dir and its parents made as needed; false (silently) if they cannot be */
static bool mkdir_parents(char *dir)
{
	char *p;

	for (p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(dir, 0755) && errno != EEXIST) {
			*p = '/';
			return false;
		}
		*p = '/';
	}
	return !mkdir(dir, 0755) || errno == EEXIST;
}

/* pch_header set if choreo.h is precompiled for cxx; else its making
 * started (pch_pid) if a cache can be had; else nothing */
static void pch_prepare(const char *cxx, char *incflag, char *npuinc)
{
	static const char *const headers[] = {
		"npu/choreo.h", "npu.h", "npu/npu_choreo.h", "npu/npu_half.h",
	};
	char dir[PATH_MAX], path[PATH_MAX + 64], gch[PATH_MAX + 80];
	const char *cache = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	uint64_t h = 0xcbf29ce484222325ull;
	struct stat st;
	unsigned i;
	FILE *f;

	if (cache && *cache)
		pathf(dir, sizeof(dir), "%s/npu-choreo", cache);
	else if (home && *home)
		pathf(dir, sizeof(dir), "%s/.cache/npu-choreo", home);
	else
		return;
	for (i = 0; i < sizeof(headers) / sizeof(headers[0]); i++) {
		size_t n;
		char *text;

		pathf(path, sizeof(path), "%s/%s", incdir, headers[i]);
		text = read_file(path, &n);
		if (!text)
			return;
		h = fnv1a(h, text, n + 1);
		free(text);
	}
	which(cxx, path, sizeof(path));
	if (!path[0] || stat(path, &st))
		return;
	h = fnv1a(h, path, strlen(path) + 1);
	h = fnv1a(h, &st.st_mtime, sizeof(st.st_mtime));
	h = fnv1a(h, &st.st_size, sizeof(st.st_size));
	for (i = 0; i < N_MAIN_CXX_FLAGS; i++)
		h = fnv1a(h, main_cxx_flags[i], strlen(main_cxx_flags[i]) + 1);
	h = fnv1a(h, incdir, strlen(incdir) + 1);
	pathf(path, sizeof(path), "%s/choreo-%016llx.h", dir,
	      (unsigned long long)h);
	pathf(gch, sizeof(gch), "%s.gch", path);
	if (!access(gch, R_OK)) {
		pathf(pch_header, sizeof(pch_header), "%s", path);
		return;
	}
	/* no cache (a read-only home): g++ parses choreo.h, as without one */
	if (!mkdir_parents(dir))
		return;
	/* the header that is precompiled, and that g++ reads if it finds
	 * the precompiled one does not fit; renamed into place, as the
	 * precompiled one is, for builds beside this one */
	pathf(pch_tmp, sizeof(pch_tmp), "%s.%d.tmp", path, (int)getpid());
	f = fopen(pch_tmp, "w");
	if (!f)
		return;
	if (fputs("#include <npu/choreo.h>\n", f) < 0 || fclose(f) ||
	    rename(pch_tmp, path)) {
		unlink(pch_tmp);
		return;
	}
	pathf(pch_tmp, sizeof(pch_tmp), "%s.%d.tmp", gch, (int)getpid());
	if (verbose)
		fprintf(stderr, "npu-choreo: precompiling choreo.h into %s\n", gch);
	{
		char *argv[N_MAIN_CXX_FLAGS + 10];
		unsigned n = 0;

		argv[n++] = (char *)cxx;
		for (i = 0; i < N_MAIN_CXX_FLAGS; i++)
			argv[n++] = (char *)main_cxx_flags[i];
		argv[n++] = incflag;
		argv[n++] = npuinc;
		argv[n++] = "-x";
		argv[n++] = "c++-header";
		argv[n++] = path;
		argv[n++] = "-o";
		argv[n++] = pch_tmp;
		argv[n] = NULL;
		pch_pid = spawn_argv(argv);
	}
	if (pch_pid > 0)
		pathf(pch_header, sizeof(pch_header), "%s", path);
}

/* a precompiled choreo.h being made: done, and in its place (atomically:
 * builds beside this one may use it at once); without it, g++ parses
 * the header */
static void pch_finish(void)
{
	char gch[PATH_MAX + 80];

	if (pch_pid <= 0)
		return;
	if (wait_child(pch_pid)) {
		unlink(pch_tmp);
	} else {
		pathf(gch, sizeof(gch), "%s.gch", pch_header);
		if (rename(pch_tmp, gch))
			unlink(pch_tmp);
	}
	pch_pid = -1;
	pch_tmp[0] = 0;
}

/* g++ on a program's own main, as start_host_main wrote it */
static char main_cc_path[PATH_MAX + 32], main_o_path[PATH_MAX + 32];
static char main_incflag[PATH_MAX + 32], main_npuinc[PATH_MAX + 64];

static void spawn_main_cc(void)
{
	char *cxx = getenv("CXX") ? getenv("CXX") : "g++";
	char *argv[N_MAIN_CXX_FLAGS + 12];
	unsigned n = 0, i;

	argv[n++] = cxx;
	for (i = 0; i < N_MAIN_CXX_FLAGS; i++)
		argv[n++] = (char *)main_cxx_flags[i];
	if (pch_header[0]) {
		argv[n++] = "-include";
		argv[n++] = pch_header;
	}
	argv[n++] = main_incflag;
	argv[n++] = main_npuinc;
	argv[n++] = "-c";
	argv[n++] = main_cc_path;
	argv[n++] = "-o";
	argv[n++] = main_o_path;
	argv[n] = NULL;
	main_cc_pid = spawn_argv(argv);
}

/*
 * A file with its own C++ main: the host program (its text without the
 * __co__ functions, after include/choreo.h and one C++ function per __co__
 * function) written and its compile by g++ started (main_cc_pid), or, if
 * choreo.h is being precompiled first, started by link_program.
 */
static void start_host_main(const struct program *prog, const char *host_text,
			    char *incflag)
{
	char *cxx = getenv("CXX") ? getenv("CXX") : "g++";
	const char *p;
	FILE *f;

	pathf(main_cc_path, sizeof(main_cc_path), "%s/main.cc", tmpdir);
	pathf(main_o_path, sizeof(main_o_path), "%s/main.o", tmpdir);
	pathf(main_incflag, sizeof(main_incflag), "%s", incflag);
	/* `#include "choreo.h"` of the program finds ours */
	pathf(main_npuinc, sizeof(main_npuinc), "%s/npu", incflag);
	f = open_out(main_cc_path);
	fputs("#include <npu/choreo.h>\n\n", f);
	host_cxx_wrappers(f, prog);
	fputs("#line 1 \"", f);
	for (p = diag_path(); *p; p++)
		fprintf(f, *p == '"' || *p == '\\' ? "\\%c" : "%c", *p);
	fputs("\"\n", f);
	fputs(host_text, f);
	if (fclose(f)) {
		perror("npu-choreo: main.cc");
		exit(2);
	}
	pch_prepare(cxx, main_incflag, main_npuinc);
	if (pch_pid <= 0)
		spawn_main_cc();
}

/* cc started on the generated host C as far as assembly (host_s): the
 * host code calls libnpu, so -O1 does; -O2 cost a big program a second */
static void start_host_c(const char *host_c, const char *host_s, char *incflag)
{
	char *cc = getenv("CC") ? getenv("CC") : "cc";
	char *argv[] = { cc, "-std=c11", "-O1", "-g", "-fPIC", "-pthread", incflag,
			 "-S", (char *)host_c, "-o", (char *)host_s, NULL };

	host_cc_pid = spawn_argv(argv);
}

/* The host code assembled (host_s, with the kernels' code object) and, with
 * the host program's own main if it has one (start_host_main), made into
 * PROG (exe, run) or into one relocatable object (build). */
static int link_program(const char *host_s, char *libflag, char *rpath,
			const char *out, bool host_main, bool relocatable)
{
	char host_o[PATH_MAX + 32], main_o[PATH_MAX + 32];
	char *cc = getenv("CC") ? getenv("CC") : "cc";
	char *cxx = getenv("CXX") ? getenv("CXX") : "g++";
	char *as_argv[] = { cc, "-c", (char *)host_s, "-o", host_o, NULL };
	char *ld_argv[] = { "ld", "-r", host_o, main_o, "-o", (char *)out, NULL };
	/* libstdc++ linked in: the program needs only what a C program of
	 * npu-choreo needs (a guest's root has no C++) */
	char *cxx_exe_argv[] = { cxx, "-g", "-pthread", main_o, host_o, "-o",
				 (char *)out, libflag, rpath, "-lnpu", "-lm",
				 "-static-libstdc++", "-static-libgcc", NULL };
	char *c_exe_argv[] = { cc, "-pthread", host_o, "-o", (char *)out, libflag,
			       rpath, "-lnpu", "-lm", NULL };
	int rc;

	pathf(host_o, sizeof(host_o), "%s/host.o", tmpdir);
	pathf(main_o, sizeof(main_o), "%s/main.o", tmpdir);
	if (relocatable && !host_main)	/* the object is the host code's */
		pathf(host_o, sizeof(host_o), "%s", out);
	if (run_argv(as_argv)) {
		fprintf(stderr, "npu-choreo: cc failed on the generated host "
			"code (%s)\n", host_s);
		keep_temps = true;
		return 1;
	}
	if (host_main) {
		if (pch_pid > 0) {
			pch_finish();
			spawn_main_cc();
		}
		rc = wait_child(main_cc_pid);
		main_cc_pid = -1;
		if (rc) {
			fprintf(stderr, "npu-choreo: %s failed on the host program\n",
				cxx);
			return 1;
		}
	} else if (relocatable) {
		return 0;
	}
	if (run_argv(relocatable ? ld_argv : host_main ? cxx_exe_argv : c_exe_argv)) {
		fprintf(stderr, "npu-choreo: %s failed\n",
			relocatable ? "ld -r" : host_main ? cxx : cc);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd, *file = NULL, *out = NULL, *header = NULL;
	const char *entry = NULL, *guest = NULL;
	static const struct option longopts[] = {
		{ "header", required_argument, NULL, 'H' },
		{ "entry", required_argument, NULL, 'e' },
		{ "guest", required_argument, NULL, 'g' },
		{ "keep-temps", no_argument, NULL, 'k' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct program prog = { 0 };
	const struct node *main_fn = NULL;
	char host_c[PATH_MAX + 32], prog_path[PATH_MAX + 64], incflag[PATH_MAX + 32];
	char libflag[PATH_MAX + 32], rpath[PATH_MAX + 32];
	char image[PATH_MAX + 32], host_s[PATH_MAX + 32];
	char *text, *host_text;
	bool host_main;
	FILE *in, *f;
	int i;

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	cmd = argv[1];
	if (strcmp(cmd, "build") && strcmp(cmd, "exe") && strcmp(cmd, "run")) {
		fprintf(stderr, "npu-choreo: unknown command '%s'\n", cmd);
		usage(stderr);
		return 2;
	}
	/* the options after the command (getopt sees "build" as argv[0]) */
	while ((i = getopt_long(argc - 1, argv + 1, "o:vh", longopts, NULL)) != -1) {
		switch (i) {
		case 'o': out = optarg; break;
		case 'H': header = optarg; break;
		case 'e': entry = optarg; break;
		case 'g': guest = optarg; break;
		case 'k': keep_temps = true; break;
		case 'v': verbose = true; break;
		case 'h':
			usage(stdout);
			return 0;
		default:	/* getopt has said what was wrong */
			fprintf(stderr, "Try 'npu-choreo --help' for more information.\n");
			return 2;
		}
	}
	if (optind + 1 < argc)
		file = argv[optind + 1];
	if (optind + 2 < argc) {
		fprintf(stderr, "npu-choreo: one input file only\n");
		return 2;
	}
	if (!file) {
		fprintf(stderr, "npu-choreo: no input file\n");
		return 2;
	}
	if (strcmp(cmd, "run") && !out) {
		fprintf(stderr, "npu-choreo: %s needs -o\n", cmd);
		return 2;
	}
	if ((header && strcmp(cmd, "build")) || (guest && strcmp(cmd, "run")) ||
	    (entry && !strcmp(cmd, "build"))) {
		fprintf(stderr, "npu-choreo: option not valid for '%s'\n", cmd);
		return 2;
	}
	text = read_file(file, NULL);
	in = fopen(file, "r");
	if (!text || !in) {
		fprintf(stderr, "npu-choreo: %s: %s\n", file, strerror(errno));
		return 1;
	}
	diag_set_source(file, text);
	lexer_start(in);
	if (yyparse())
		return 1;
	fclose(in);
	prog.root = parse_result;
	device_code_scan(text);
	sema_program(&prog);
	host_text = host_program_text(text);
	host_main = defines_main(host_text);
	if (host_main && entry) {
		fprintf(stderr, "npu-choreo: %s has its own main: --entry does not "
			"apply\n", file);
		return 2;
	}
	if (strcmp(cmd, "build") && !host_main)
		main_fn = pick_entry(&prog, entry);
	if (header)
		write_header(&prog, header);

	find_sdk();
	/* the guest runner is part of the source tree: say so before compiling */
	pathf(guest_runner, sizeof(guest_runner), "%s/../../../tests/guest/run.sh",
	      bindir);
	if (guest && access(guest_runner, R_OK)) {
		fprintf(stderr, "npu-choreo: run --guest needs the npu source tree "
			"(its tests/guest/run.sh); this npu-choreo is installed "
			"in %s. Use the npu-choreo of a built checkout "
			"(build/sdk/bin/npu-choreo), or 'npu-choreo run' on a machine "
			"with an npu device\n", bindir);
		return 2;
	}
	pathf(tmpdir, sizeof(tmpdir), "%s/npu-choreo-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("npu-choreo: temporary directory");
		return 2;
	}
	atexit(cleanup);
	pathf(incflag, sizeof(incflag), "-I%s", incdir);
	pathf(libflag, sizeof(libflag), "-L%s", libdir);
	pathf(rpath, sizeof(rpath), "-Wl,-rpath,%s", libdir);
	if (host_main)
		start_host_main(&prog, host_text, incflag);
	start_kernels(&prog, image, sizeof(image));
	pathf(host_c, sizeof(host_c), "%s/host.c", tmpdir);
	pathf(host_s, sizeof(host_s), "%s/host.s", tmpdir);
	f = open_out(host_c);
	host_gen(f, &prog, image);
	if (main_fn)
		host_gen_main(f, main_fn);
	if (fclose(f)) {
		perror("npu-choreo: host.c");
		return 2;
	}
	start_host_c(host_c, host_s, incflag);
	if (wait_kernels_and_host_c(host_c))
		return 1;
	if (!strcmp(cmd, "run")) {
		if (guest) {
			/* a folder of its own, copied into the guest's /npu/bin */
			char base[PATH_MAX], *dot;

			pathf(base, sizeof(base), "%s", file);
			dot = strrchr(basename(base), '.');
			if (dot)
				*dot = 0;
			pathf(guest_bin, sizeof(guest_bin), "%s/guest-bin", tmpdir);
			if (mkdir(guest_bin, 0755)) {
				perror("npu-choreo: guest-bin");
				return 2;
			}
			pathf(prog_path, sizeof(prog_path), "%s/%s", guest_bin,
			      basename(base));
		} else {
			pathf(prog_path, sizeof(prog_path), "%s/prog", tmpdir);
		}
		out = prog_path;
	}
	if (link_program(host_s, libflag, rpath, out, host_main,
			 !strcmp(cmd, "build")))
		return 1;
	if (strcmp(cmd, "run"))
		return 0;
	if (guest) {
		char cmdline[PATH_MAX + 64];
		char *argv_run[] = { "bash", guest_runner, "--kernel", (char *)guest,
				     "--extra-bin", guest_bin, "--cmd", cmdline, NULL };

		pathf(cmdline, sizeof(cmdline), "/npu/bin/%s", basename(prog_path));
		return run_argv(argv_run);
	}
	{
		char *argv_run[] = { prog_path, NULL };

		return run_argv(argv_run);
	}
}
