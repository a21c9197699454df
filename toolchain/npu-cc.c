// SPDX-License-Identifier: MIT
/*
 * npu-cc - compile kernel C files into an npu code object (npu_code.h).
 *
 * A driver over Debian's clang and ld.lld, nothing of its own: each .c is
 * compiled for the compute units (RV64G, double-float ABI, no compressed
 * instructions, position independent) against the installed npu_kernel.h
 * and Debian's picolibc (the C library and libm), then everything is
 * linked with the npu runtime, picolibc and libgcc by the npu linker
 * script into a position-independent ELF the library loads.
 *
 *   npu-cc [options] file.c|file.o ... [-o out.npu]
 *
 * Its files are found relative to the executable: ../include/npu (the
 * device headers) and ../lib/npu (libnpu-rt.a, npu-module.ld), as installed
 * by `make install` and as staged in the build tree.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <glob.h>
#include <limits.h>
#include <libgen.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/*
 * Debian's picolibc-riscv64-unknown-elf. Its multilibs have no rv64imafd:
 * rv64imafdc has compressed instructions the units do not decode, so the
 * kernels' C library is the rv64iafd one (multiply and divide through
 * libgcc's __muldi3 and kin; the kernels' own code uses M). "release" is
 * built for speed, the default for size.
 */
#define PICOLIBC	"/usr/lib/picolibc/riscv64-unknown-elf"
#define PICOLIBC_INC	PICOLIBC "/include/release"
#define PICOLIBC_LIBC	PICOLIBC "/lib/release/rv64iafd/lp64d/libc.a"
#ifndef NPU_KLIBC_ID		/* set by toolchain/Makefile */
#define NPU_KLIBC_ID ""
#endif
#define LIBGCC_GLOB	"/usr/lib/gcc/riscv64-unknown-elf/*/rv64iafd/lp64d/libgcc.a"

#define MAX_ARGS	512

struct argv {
	char *v[MAX_ARGS];
	int n;
};

static bool verbose;

static void add(struct argv *a, const char *s)
{
	if (a->n >= MAX_ARGS - 1) {
		fprintf(stderr, "npu-cc: too many arguments\n");
		exit(2);
	}
	a->v[a->n++] = strdup(s);
	a->v[a->n] = NULL;
}

/* Run a; its stderr into the file err if not NULL. */
static int run_to(struct argv *a, const char *err)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int st, i;

	if (verbose) {
		for (i = 0; i < a->n; i++)
			fprintf(stderr, "%s%s", i ? " " : "", a->v[i]);
		fputc('\n', stderr);
	}
	posix_spawn_file_actions_init(&fa);
	if (err)
		posix_spawn_file_actions_addopen(&fa, 2, err, O_WRONLY | O_CREAT |
						 O_TRUNC, 0600);
	st = posix_spawnp(&pid, a->v[0], &fa, NULL, a->v, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (st) {
		fprintf(stderr, "npu-cc: cannot run %s: %s (install clang and "
			"lld)\n", a->v[0], strerror(st));
		return -1;
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static int run(struct argv *a)
{
	return run_to(a, NULL);
}

static void cat_file(const char *path)
{
	char buf[4096];
	size_t n;
	FILE *f = fopen(path, "r");

	if (!f)
		return;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		fwrite(buf, 1, n, stderr);
	fclose(f);
}

/*
 * A failed link of objects with DWARF: ld.lld names the place of each
 * undefined reference from .debug_line, but does not apply the
 * R_RISCV_ADD16/SUB16 relocations clang puts there, so it names the wrong
 * line, often one of npu_kernel.h's. Link again, for the messages only,
 * copies without DWARF (llvm-objcopy --strip-debug; ld.lld -r keeps most
 * of it), named as the originals: then it names the object, after the
 * source, and its function. 0 if that link's messages were printed.
 */
static int relink_for_messages(const struct argv *ld, const struct argv *objs,
			       const char *tmpdir, struct argv *tmps)
{
	struct argv again = { .n = 0 };
	char dir[PATH_MAX + 8], path[2 * PATH_MAX];
	int i, k;

	snprintf(dir, sizeof(dir), "%s/nodebug", tmpdir);
	if (mkdir(dir, 0700))
		return -1;
	add(tmps, dir);		/* removed last: tmps go in reverse */
	for (i = 0; i < ld->n; i++) {
		for (k = 0; k < objs->n && strcmp(ld->v[i], objs->v[k]); k++)
			;
		if (k == objs->n) {
			add(&again, ld->v[i]);
			continue;
		}
		snprintf(path, sizeof(path), "%s/%d/", dir, k);
		if (mkdir(path, 0700))
			return -1;
		add(tmps, path);	/* removed after the files in it */
		strncat(path, basename(strdup(objs->v[k])),
			sizeof(path) - strlen(path) - 1);
		{
			struct argv r = { .n = 0 };

			add(&r, "llvm-objcopy");
			add(&r, "--strip-debug");
			add(&r, objs->v[k]);
			add(&r, path);
			if (run(&r))
				return -1;
		}
		add(tmps, path);
		add(&again, path);
	}
	run(&again);
	return 0;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

/* FNV-1a, 64 bits */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n--) {
		h ^= *b++;
		h *= 0x100000001b3ull;
	}
	return h;
}

static uint64_t fnv_file(uint64_t h, const char *path, bool *ok)
{
	char buf[8192];
	size_t n;
	FILE *f = fopen(path, "rb");

	if (!f) {
		fprintf(stderr, "npu-cc: %s: %s\n", path, strerror(errno));
		*ok = false;
		return h;
	}
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		h = fnv(h, buf, n);
	fclose(f);
	return fnv(h, "", 1);
}

/* DIR/<first input's base name>-<key>.npu, the key over every input file,
 * every option that changes the object, the headers and the runtime. */
static int cache_name(char *buf, size_t n, const char *dir, int argc,
		      char **argv, int first, const struct argv *cflags,
		      const char *opt, bool debug, const char *inc,
		      const char *lib)
{
	static const char *const deps[] = {
		"include/npu/npu_kernel.h", "include/npu/npu_code.h",
		"include/npu/npu_hw.h", "lib/npu/libnpu-rt.a",
		"lib/npu/npu-module.ld",
	};
	uint64_t h = 0xcbf29ce484222325ull;
	char base[PATH_MAX], path[PATH_MAX + 64];
	bool ok = true;
	unsigned i;
	int k;

	for (k = first; k < argc; k++)
		h = fnv_file(h, argv[k], &ok);
	for (k = 0; k < cflags->n; k++)
		h = fnv(h, cflags->v[k], strlen(cflags->v[k]) + 1);
	h = fnv(h, opt, strlen(opt) + 1);
	h = fnv(h, debug ? "g" : "-", 1);
	for (i = 0; i < sizeof(deps) / sizeof(deps[0]); i++) {
		snprintf(path, sizeof(path), "%s/../../%s", inc, deps[i]);
		h = fnv_file(h, path, &ok);
	}
	(void)lib;
	/* the C library by the package versions npu-cc was built with, not
	 * by its files: a copy of npu-cc where it is not installed (the
	 * guest's) looks up the same names */
	h = fnv(h, NPU_KLIBC_ID, strlen(NPU_KLIBC_ID) + 1);
	if (!ok)
		return -1;
	snprintf(base, sizeof(base), "%s", argv[first]);
	if (strrchr(base, '.'))
		*strrchr(base, '.') = 0;
	snprintf(buf, n, "%s/%s-%016llx.npu", dir, basename(base),
		 (unsigned long long)h);
	if (mkdir(dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "npu-cc: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	return 0;
}

/* libgcc.a of gcc-riscv64-unknown-elf's rv64iafd/lp64d multilib (the
 * newest version if several), or NULL. */
static char *libgcc_path(void)
{
	glob_t g;
	char *p = NULL;

	if (!glob(LIBGCC_GLOB, 0, NULL, &g) && g.gl_pathc)
		p = strdup(g.gl_pathv[g.gl_pathc - 1]);
	globfree(&g);
	return p;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: npu-cc [options] file.c|file.o ... [-o out.npu]\n"
"Compile npu kernels (C with npu_kernel.h; picolibc's C library and libm)\n"
"into a code object.\n"
"  -o FILE        output (default: the first file with .npu)\n"
"  -c             compile only: one RISC-V object per .c file\n"
"  -g             keep DWARF (source lines in fault messages and profiles)\n"
"  -O0..-O3, -Os  optimisation (default -O2)\n"
"  -D NAME[=VAL]  define a macro; -U NAME undefine it\n"
"  -I DIR         add an include directory\n"
"  -W...          passed to clang (e.g. -Wall -Werror)\n"
"  -v, --verbose  print the commands run\n"
"  --cache DIR    build into DIR under a name keyed by everything that\n"
"                 makes the object (sources, options, headers, runtime)\n"
"                 unless it is there already; print its path\n"
"  --print-include-dir, --print-lib-dir  where npu-cc's files are\n"
"  -h, --help     this text\n"
"Environment: NPU_CLANG, NPU_LLD (default clang, ld.lld).\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "print-include-dir", no_argument, NULL, 1 },
		{ "print-lib-dir", no_argument, NULL, 2 },
		{ "cache", required_argument, NULL, 3 },
		{ NULL, 0, NULL, 0 },
	};
	char self[PATH_MAX], inc[PATH_MAX + 32], lib[PATH_MAX + 32], path[PATH_MAX + 64];
	struct argv cflags = { .n = 0 }, objs = { .n = 0 }, tmps = { .n = 0 };
	const char *out = NULL, *opt = "-O2", *clang, *lld, *cache = NULL;
	char cached[PATH_MAX + 64], *libgcc = NULL, tmpdir[PATH_MAX] = "";
	bool compile_only = false, debug = false, failed = false;
	ssize_t len;
	int c, i, print = 0;

	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len <= 0) {
		perror("npu-cc: /proc/self/exe");
		return 2;
	}
	self[len] = 0;
	dirname(self);			/* .../bin */
	snprintf(inc, sizeof(inc), "%s/../include/npu", self);
	snprintf(lib, sizeof(lib), "%s/../lib/npu", self);
	clang = getenv("NPU_CLANG") ? getenv("NPU_CLANG") : "clang";
	lld = getenv("NPU_LLD") ? getenv("NPU_LLD") : "ld.lld";

	while ((c = getopt_long(argc, argv, "o:cgO:D:U:I:W:vh", longopts, NULL)) != -1) {
		char buf[PATH_MAX + 4];

		switch (c) {
		case 'o': out = optarg; break;
		case 'c': compile_only = true; break;
		case 'g': debug = true; break;
		case 'O':
			if (strlen(optarg) != 1 || !strchr("0123s", optarg[0])) {
				fprintf(stderr, "npu-cc: bad optimisation -O%s\n", optarg);
				return 2;
			}
			snprintf(buf, sizeof(buf), "-O%s", optarg);
			opt = strdup(buf);
			break;
		case 'D': case 'U': case 'I': case 'W':
			snprintf(buf, sizeof(buf), "-%c%s", c, optarg);
			add(&cflags, buf);
			break;
		case 'v': verbose = true; break;
		case 'h': usage(stdout); return 0;
		case 1: case 2: print = c; break;
		case 3: cache = optarg; break;
		default: usage(stderr); return 2;
		}
	}
	if (print) {
		printf("%s\n", realpath(print == 1 ? inc : lib, path) ? path :
		       (print == 1 ? inc : lib));
		return 0;
	}
	if (optind >= argc) {
		fprintf(stderr, "npu-cc: no input files\n");
		usage(stderr);
		return 2;
	}
	if (compile_only && out && argc - optind > 1) {
		fprintf(stderr, "npu-cc: -c -o with several input files\n");
		return 2;
	}
	if (cache) {
		if (compile_only || out) {
			fprintf(stderr, "npu-cc: --cache names the output itself "
				"(no -c, no -o)\n");
			return 2;
		}
		if (cache_name(cached, sizeof(cached), cache, argc, argv, optind,
			       &cflags, opt, debug, inc, lib))
			return 2;
		if (!access(cached, R_OK)) {
			printf("%s\n", cached);
			return 0;
		}
		if (asprintf((char **)&out, "%s.tmp.%d", cached, (int)getpid()) < 0)
			return 2;
	}
	snprintf(path, sizeof(path), "%s/libnpu-rt.a", lib);
	if (!compile_only && access(path, R_OK)) {
		fprintf(stderr, "npu-cc: missing %s (is npu-cc installed?)\n", path);
		return 2;
	}
	if (access(PICOLIBC_INC "/math.h", R_OK) ||
	    (!compile_only && (access(PICOLIBC_LIBC, R_OK) ||
			       !(libgcc = libgcc_path())))) {
		fprintf(stderr, "npu-cc: missing the kernels' C library (install "
			"picolibc-riscv64-unknown-elf and gcc-riscv64-unknown-elf)\n");
		return 2;
	}
	for (i = optind; i < argc && !failed; i++) {
		const char *src = argv[i];
		struct argv cc = { .n = 0 };
		char obj[PATH_MAX + 8];
		int k;

		if (ends_with(src, ".o")) {
			add(&objs, src);
			continue;
		}
		if (!ends_with(src, ".c")) {
			fprintf(stderr, "npu-cc: %s: not a .c or .o file\n", src);
			failed = true;
			break;
		}
		if (compile_only) {
			if (out) {
				snprintf(obj, sizeof(obj), "%s", out);
			} else {
				snprintf(obj, sizeof(obj), "%s", src);
				obj[strlen(obj) - 1] = 'o';
				snprintf(obj, sizeof(obj), "%s", basename(strdup(obj)));
			}
		} else {
			char base[PATH_MAX];

			/* named after the source: the linker's messages name
			 * the object ("saxpy.o:(__npu_entry_saxpy)") */
			if (!tmpdir[0]) {
				snprintf(tmpdir, sizeof(tmpdir), "%s/npu-cc-XXXXXX",
					 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
				if (!mkdtemp(tmpdir)) {
					perror("npu-cc: temporary directory");
					tmpdir[0] = 0;
					failed = true;
					break;
				}
			}
			snprintf(base, sizeof(base), "%s", src);
			snprintf(obj, sizeof(obj), "%s/%s", tmpdir, basename(base));
			obj[strlen(obj) - 1] = 'o';
			if (!access(obj, F_OK))	/* a second file of that name */
				snprintf(obj, sizeof(obj), "%s/%d-%s", tmpdir, i,
					 basename(base));
			if (ends_with(obj, ".c"))
				obj[strlen(obj) - 1] = 'o';
			add(&tmps, obj);
		}
		add(&cc, clang);
		add(&cc, "--target=riscv64-unknown-elf");
		add(&cc, "-march=rv64g");
		add(&cc, "-mabi=lp64d");
		add(&cc, "-mcmodel=medany");
		add(&cc, "-mno-relax");
		add(&cc, "-fPIE");
		/* picolibc's errno: tp-relative, set up by the entry stub */
		add(&cc, "-ftls-model=local-exec");
		add(&cc, "-nostdlibinc");
		add(&cc, "-fno-common");
		add(&cc, opt);
		if (debug)
			add(&cc, "-g");
		add(&cc, "-isystem");
		add(&cc, inc);
		add(&cc, "-isystem");
		add(&cc, PICOLIBC_INC);
		for (k = 0; k < cflags.n; k++)
			add(&cc, cflags.v[k]);
		add(&cc, "-c");
		add(&cc, src);
		add(&cc, "-o");
		add(&cc, obj);
		if (run(&cc))
			failed = true;
		add(&objs, obj);
	}
	if (!failed && !compile_only) {
		struct argv ld = { .n = 0 };
		char def[PATH_MAX + 8];

		if (!out) {
			snprintf(def, sizeof(def), "%s", basename(strdup(argv[optind])));
			if (ends_with(def, ".c") || ends_with(def, ".o"))
				def[strlen(def) - 2] = 0;
			strcat(def, ".npu");
			out = def;
		}
		add(&ld, lld);
		add(&ld, "-pie");
		add(&ld, "--no-dynamic-linker");
		add(&ld, "-z");
		add(&ld, "max-page-size=4096");
		add(&ld, "--entry=0");
		add(&ld, "-T");
		snprintf(path, sizeof(path), "%s/npu-module.ld", lib);
		add(&ld, path);
		if (!debug)
			add(&ld, "--strip-debug");
		add(&ld, "-o");
		add(&ld, out);
		for (i = 0; i < objs.n; i++)
			add(&ld, objs.v[i]);
		snprintf(path, sizeof(path), "%s/libnpu-rt.a", lib);
		add(&ld, "--start-group");
		add(&ld, path);
		add(&ld, PICOLIBC_LIBC);
		add(&ld, libgcc);
		add(&ld, "--end-group");
		if (!debug || !tmpdir[0]) {
			if (run(&ld))
				failed = true;
		} else {
			char err[PATH_MAX + 16];

			snprintf(err, sizeof(err), "%s/ld.err", tmpdir);
			if (run_to(&ld, err)) {
				failed = true;
				if (relink_for_messages(&ld, &objs, tmpdir, &tmps))
					cat_file(err);
			}
			unlink(err);
		}
	}
	for (i = tmps.n; i-- > 0;)	/* files before their directories */
		if (unlink(tmps.v[i]) && errno == EISDIR)
			rmdir(tmps.v[i]);
	if (tmpdir[0])
		rmdir(tmpdir);
	if (cache && !failed) {
		/* in place at once: concurrent builders see all or nothing */
		if (rename(out, cached)) {
			perror("npu-cc: cache");
			unlink(out);
			return 1;
		}
		printf("%s\n", cached);
	} else if (cache) {
		unlink(out);
	}
	return failed ? 1 : 0;
}
