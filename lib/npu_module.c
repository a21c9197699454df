// SPDX-License-Identifier: MIT
/*
 * npu_module.c - code objects (npu_code.h): load, look up, unload; kernel
 * attributes and the occupancy calculator (Documentation/lib/kernels.rst).
 *
 * Loading parses the ELF with elfutils' libelf, checks everything the
 * device and the loader rely on, copies the PT_LOAD segments into one
 * device allocation, applies the R_RISCV_RELATIVE relocations and keeps a
 * host copy of the relocated image (device printf reads its format strings
 * there). Nothing is allocated before every check passed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "npu_core.h"
#include "npu_code.h"
#include "npu_module.h"

#ifndef EM_RISCV
#define EM_RISCV		243
#endif
#define EF_RISCV_RVC		0x0001
#define EF_RISCV_FLOAT_ABI	0x0006
#define EF_RISCV_FLOAT_ABI_DOUBLE 0x0004
#define R_RISCV_NONE		0
#define R_RISCV_RELATIVE	3

#define MODULE_MAGIC		0x4d4f444cU	/* "MODL" */
#define MODULE_UNLOADING	0x554e4c44U	/* "UNLD": one unload claimed it */
#define FUNC_MAGIC		0x46554e43U	/* "FUNC" */
#define MODULE_MAX_SPAN		(256u << 20)	/* loaded image bytes */
#define DEFAULT_STACK		2048u		/* per thread, see kernels.rst */

static pthread_mutex_t mod_lock = PTHREAD_MUTEX_INITIALIZER;
static struct npu_module *modules;		/* every loaded module */
atomic_uint npu_mod_gen;			/* modules unloaded so far */

static npu_status_t bad(const char *what, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static npu_status_t bad(const char *what, const char *fmt, ...)
{
	char msg[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return npu_fail(NPU_ERROR_INVALID_IMAGE, "code object %s: %s", what, msg);
}

/* The checked layout of an ELF image, before anything is allocated. */
struct layout {
	uint64_t span;			/* bytes from 0 to the last segment end */
	uint64_t first_w;		/* lowest writable segment's start */
	Elf_Scn *desc;			/* NPU_CODE_DESC_SECTION */
	Elf_Scn *symtab;
	unsigned nrela;
	Elf_Scn *rela[4];
};

static npu_status_t check_elf(Elf *e, const void *image, size_t size,
			      const char *what, struct layout *L)
{
	const unsigned char *id = image;
	GElf_Ehdr eh;
	size_t nph, shstr, i;
	Elf_Scn *scn = NULL;

	memset(L, 0, sizeof(*L));
	L->first_w = UINT64_MAX;
	if (size < EI_NIDENT || memcmp(id, ELFMAG, SELFMAG))
		return bad(what, "not an ELF file");
	if (elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh))
		return bad(what, "malformed ELF header (%s)", elf_errmsg(-1));
	if (id[EI_CLASS] != ELFCLASS64 || id[EI_DATA] != ELFDATA2LSB)
		return bad(what, "not a 64-bit little-endian ELF");
	if (eh.e_machine != EM_RISCV)
		return bad(what, "built for machine %u, not RISC-V (%u): compile "
			   "kernels with npu-cc", eh.e_machine, EM_RISCV);
	if (eh.e_type != ET_DYN)
		return bad(what, "ELF type %u, not a position-independent code "
			   "object (link with npu-cc)", eh.e_type);
	if ((eh.e_flags & EF_RISCV_FLOAT_ABI) != EF_RISCV_FLOAT_ABI_DOUBLE)
		return bad(what, "not the double-float ABI (lp64d)");
	if (eh.e_flags & EF_RISCV_RVC)
		return bad(what, "uses compressed instructions, which the "
			   "compute units do not run (rv64g)");
	if (eh.e_shoff > size || (uint64_t)eh.e_shnum * eh.e_shentsize >
	    size - eh.e_shoff || eh.e_phoff > size ||
	    (uint64_t)eh.e_phnum * eh.e_phentsize > size - eh.e_phoff)
		return bad(what, "headers past the end of the file (%zu bytes: "
			   "truncated?)", size);
	if (elf_getphdrnum(e, &nph))
		return bad(what, "malformed program headers");
	for (i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph))
			return bad(what, "malformed program header %zu", i);
		if (ph.p_type != PT_LOAD)
			continue;
		if (ph.p_filesz > ph.p_memsz || ph.p_offset > size ||
		    ph.p_filesz > size - ph.p_offset)
			return bad(what, "segment %zu runs past the file "
				   "(truncated?)", i);
		if (ph.p_vaddr > MODULE_MAX_SPAN ||
		    ph.p_memsz > MODULE_MAX_SPAN - ph.p_vaddr)
			return bad(what, "segment %zu is larger than %u MiB", i,
				   MODULE_MAX_SPAN >> 20);
		if (ph.p_vaddr + ph.p_memsz > L->span)
			L->span = ph.p_vaddr + ph.p_memsz;
		if ((ph.p_flags & PF_W) && ph.p_vaddr < L->first_w)
			L->first_w = ph.p_vaddr;
	}
	if (!L->span)
		return bad(what, "no loadable segment");
	if (elf_getshdrstrndx(e, &shstr))
		return bad(what, "malformed section headers");
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			return bad(what, "malformed section header");
		name = elf_strptr(e, shstr, sh.sh_name);
		if (sh.sh_type != SHT_NOBITS && sh.sh_type != SHT_NULL &&
		    (sh.sh_offset > size || sh.sh_size > size - sh.sh_offset))
			return bad(what, "section %s runs past the file "
				   "(truncated?)", name ? name : "?");
		if (sh.sh_type == SHT_SYMTAB)
			L->symtab = scn;
		else if (sh.sh_type == SHT_REL)
			return bad(what, "REL relocations are not supported");
		else if (sh.sh_type == SHT_RELA && (sh.sh_flags & SHF_ALLOC)) {
			if (L->nrela == 4)
				return bad(what, "too many relocation sections");
			L->rela[L->nrela++] = scn;
		}
		if (name && !strcmp(name, NPU_CODE_DESC_SECTION))
			L->desc = scn;
	}
	if (!L->desc)
		return bad(what, "no %s section: no kernel defined with "
			   "NPU_KERNEL", NPU_CODE_DESC_SECTION);
	if (!L->symtab)
		return bad(what, "no symbol table (stripped?)");
	return NPU_SUCCESS;
}

/* The defined symbol want in symtab (functions only if func): its value. */
static bool find_symbol(Elf *e, Elf_Scn *symtab, const char *want, bool func,
			uint64_t *value)
{
	GElf_Shdr sh;
	Elf_Data *d;
	size_t i, n;

	if (!gelf_getshdr(symtab, &sh) || !(d = elf_getdata(symtab, NULL)) ||
	    !sh.sh_entsize)
		return false;
	n = sh.sh_size / sh.sh_entsize;
	for (i = 0; i < n; i++) {
		GElf_Sym sym;
		const char *name;

		if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF ||
		    (func && GELF_ST_TYPE(sym.st_info) != STT_FUNC))
			continue;
		name = elf_strptr(e, sh.sh_link, sym.st_name);
		if (name && !strcmp(name, want)) {
			if (value)
				*value = sym.st_value;
			return true;
		}
	}
	return false;
}

static bool entry_of(Elf *e, Elf_Scn *symtab, const char *kname,
		     uint64_t *value)
{
	char want[NPU_CODE_NAME_MAX + 32];

	snprintf(want, sizeof(want), NPU_CODE_ENTRY_PREFIX "%s", kname);
	return find_symbol(e, symtab, want, true, value);
}

/* The largest block of kernel k: the unit's thread slots, the code object
 * format's limit and the kernel's own. */
static unsigned func_max_threads(const struct device *dev,
				 const struct npu_code_desc *k)
{
	unsigned t = dev->prop.unit_threads;

	if (t > NPU_CODE_MAX_THREADS)
		t = NPU_CODE_MAX_THREADS;
	if (k->max_threads && k->max_threads < t)
		t = k->max_threads;
	return t;
}

/* Read and check the kernel descriptors into m->funcs. */
static npu_status_t read_kernels(struct device *dev, Elf *e,
				 const struct layout *L, const char *what,
				 struct npu_module *m)
{
	Elf_Data *d = elf_getdata(L->desc, NULL);
	const struct npu_code_desc *k;
	size_t n, i, j;

	if (!d || !d->d_buf || d->d_size % sizeof(*k))
		return bad(what, "%s is %zu bytes, not a whole number of "
			   "kernel descriptors", NPU_CODE_DESC_SECTION,
			   d ? d->d_size : 0);
	n = d->d_size / sizeof(*k);
	if (!n)
		return bad(what, "defines no kernel");
	m->funcs = calloc(n, sizeof(*m->funcs));
	if (!m->funcs)
		return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "kernel table");
	m->nfuncs = (unsigned)n;
	for (i = 0; i < n; i++) {
		struct npu_function *f = &m->funcs[i];
		uint64_t entry;

		k = (const struct npu_code_desc *)d->d_buf + i;
		memcpy(&f->desc, k, sizeof(*k));
		k = &f->desc;
		if (k->magic != NPU_CODE_DESC_MAGIC || k->version != NPU_CODE_VERSION)
			return bad(what, "kernel descriptor %zu has magic 0x%x "
				   "version %u (npu-cc of another version?)", i,
				   k->magic, k->version);
		if (!memchr(k->name, 0, sizeof(k->name)) || !k->name[0])
			return bad(what, "kernel descriptor %zu has no name", i);
		if (k->nargs > NPU_CODE_MAX_ARGS)
			return bad(what, "kernel %s has %u arguments (at most %u)",
				   k->name, k->nargs, NPU_CODE_MAX_ARGS);
		for (j = 0; j < k->nargs; j++)
			if ((k->arg_size[j] != 1 && k->arg_size[j] != 2 &&
			     k->arg_size[j] != 4 && k->arg_size[j] != 8) ||
			    k->arg_kind[j] > NPU_CODE_ARG_FLOAT)
				return bad(what, "kernel %s: argument %zu has size "
					   "%u kind %u", k->name, j,
					   k->arg_size[j], k->arg_kind[j]);
		if (k->max_threads > NPU_CODE_MAX_THREADS)
			return bad(what, "kernel %s: max_threads %u > %u",
				   k->name, k->max_threads, NPU_CODE_MAX_THREADS);
		if (k->stack_bytes > NPU_CODE_MAX_STACK || k->stack_bytes % 16)
			return bad(what, "kernel %s: stack of %u bytes (a multiple "
				   "of 16, at most %u)", k->name, k->stack_bytes,
				   NPU_CODE_MAX_STACK);
		if (k->scratch_bytes > dev->prop.unit_scratch_bytes)
			return bad(what, "kernel %s needs %u bytes of scratchpad; "
				   "a unit has %u", k->name, k->scratch_bytes,
				   dev->prop.unit_scratch_bytes);
		for (j = 0; j < i; j++)
			if (!strcmp(m->funcs[j].desc.name, k->name))
				return bad(what, "kernel %s is defined twice",
					   k->name);
		if (!entry_of(e, L->symtab, k->name, &entry))
			return bad(what, "kernel %s has no entry symbol "
				   NPU_CODE_ENTRY_PREFIX "%s", k->name, k->name);
		if (entry >= L->span || entry % 4)
			return bad(what, "kernel %s: entry 0x%llx outside the "
				   "image or misaligned", k->name,
				   (unsigned long long)entry);
		f->magic = FUNC_MAGIC;
		f->mod = m;
		f->entry_off = entry;
		f->stack_bytes = k->stack_bytes ? k->stack_bytes : DEFAULT_STACK;
		f->max_threads = func_max_threads(dev, k);
		for (j = 0; j < k->nargs; j++)
			f->arg_log2 |= (uint32_t)__builtin_ctz(k->arg_size[j])
				       << (2 * j);
	}
	return NPU_SUCCESS;
}

/* Copy the segments to img and apply the relocations for base. */
static npu_status_t relocate(Elf *e, const struct layout *L, const uint8_t *file,
			     uint8_t *img, uint64_t base, const char *what)
{
	size_t nph, i, r;

	elf_getphdrnum(e, &nph);
	for (i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD)
			memcpy(img + ph.p_vaddr, file + ph.p_offset, ph.p_filesz);
	}
	for (r = 0; r < L->nrela; r++) {
		Elf_Data *d = elf_getdata(L->rela[r], NULL);
		GElf_Shdr sh;
		size_t n;

		if (!d || !gelf_getshdr(L->rela[r], &sh) || !sh.sh_entsize)
			return bad(what, "malformed relocation section");
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < n; i++) {
			GElf_Rela ra;
			uint64_t v;

			if (!gelf_getrela(d, (int)i, &ra))
				return bad(what, "malformed relocation %zu", i);
			if (GELF_R_TYPE(ra.r_info) == R_RISCV_NONE)
				continue;
			if (GELF_R_TYPE(ra.r_info) != R_RISCV_RELATIVE)
				return bad(what, "relocation type %u is not "
					   "supported (only R_RISCV_RELATIVE)",
					   (unsigned)GELF_R_TYPE(ra.r_info));
			if (ra.r_offset > L->span - 8)
				return bad(what, "relocation at 0x%llx outside "
					   "the image",
					   (unsigned long long)ra.r_offset);
			v = base + (uint64_t)ra.r_addend;
			memcpy(img + ra.r_offset, &v, 8);
		}
	}
	return NPU_SUCCESS;
}

/* The function symbol of e containing off: its name without the entry
 * prefix (the kernel's name), or NULL. */
static const char *func_at(Elf *e, uint64_t off, bool *entry)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t i, n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < n; i++) {
			GElf_Sym sym;
			const char *name;
			size_t pl = strlen(NPU_CODE_ENTRY_PREFIX);

			if (!gelf_getsym(d, (int)i, &sym) ||
			    GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    off < sym.st_value || off >= sym.st_value + sym.st_size)
				continue;
			name = elf_strptr(e, sh.sh_link, sym.st_name);
			*entry = name && !strncmp(name, NPU_CODE_ENTRY_PREFIX, pl);
			if (*entry)
				name += pl;
			return name;
		}
	}
	return NULL;
}

/* The module's ELF and DWARF handles, opened once. mod_lock held. */
static Elf *module_elf(struct npu_module *m)
{
	if (!m->elf) {
		m->elf = elf_memory(m->file, m->file_size);
		if (m->elf)
			m->dwarf = dwarf_begin_elf(m->elf, DWARF_C_READ, NULL);
	}
	return m->elf;
}

/* The compile unit holding off (clang writes no .debug_aranges, so walk
 * the units' ranges when the index is missing). */
static bool cu_of(Dwarf *dw, uint64_t off, Dwarf_Die *cu)
{
	Dwarf_Off o = 0, next;
	size_t hsize;

	if (dwarf_addrdie(dw, off, cu))
		return true;
	while (!dwarf_nextcu(dw, o, &next, &hsize, NULL, NULL, NULL)) {
		if (dwarf_offdie(dw, o + hsize, cu) && dwarf_haspc(cu, off) > 0)
			return true;
		o = next;
	}
	return false;
}

/* Where a device PC is: its module, function and source line (any may
 * be missing); user_src:user_line is the line of the kernel's own source
 * (a helper of npu_kernel.h inlined into it counts at its call); stub
 * when the PC is NPU_KERNEL's entry stub rather than the kernel's body.
 * mod_lock held. */
struct where {
	struct npu_module *m;
	const char *fn, *src, *user_src;
	int line, user_line;
	bool stub;
};

/* The npu-cc headers whose inline helpers are not the user's lines. */
static bool sdk_header(const char *src)
{
	const char *b = strrchr(src, '/') ? strrchr(src, '/') + 1 : src;

	return !strcmp(b, "npu_kernel.h") || !strcmp(b, "npu_hw.h");
}

/* The source file DW_AT_call_file of an inlined subroutine names. */
static const char *call_file(Dwarf_Die *cu, Dwarf_Die *inl, int *line)
{
	Dwarf_Attribute a;
	Dwarf_Files *files;
	Dwarf_Word file, l;
	size_t n;

	if (!dwarf_attr(inl, DW_AT_call_file, &a) || dwarf_formudata(&a, &file) ||
	    !dwarf_attr(inl, DW_AT_call_line, &a) || dwarf_formudata(&a, &l) ||
	    dwarf_getsrcfiles(cu, &files, &n) || file >= n)
		return NULL;
	*line = (int)l;
	return dwarf_filesrc(files, file, NULL, NULL);
}

/*
 * NPU_KERNEL expands to an entry function that loads the arguments and
 * calls the kernel's body, which clang inlines into it: the line table
 * gives the entry's own instructions (argument loads, the return) the
 * NPU_KERNEL line or line 0, and the body's instructions their lines. The
 * scopes at off tell them apart: inside the inlined body (an inlined
 * subroutine named as the kernel) or a separate kernel function it is the
 * user's code, elsewhere in the entry function it is the stub.
 * dwarf_getscopes() follows an inlined subroutine to its abstract
 * definition; dwarf_getscopes_die() on the innermost scope gives the
 * concrete nesting (a loop's block in a helper in a helper in the body).
 */
static void user_line_of(Dwarf_Die *cu, uint64_t off, bool entry,
			 struct where *w)
{
	Dwarf_Die *scopes = NULL, *chain = NULL;
	bool body = false;
	int i, n;

	w->user_src = w->src;
	w->user_line = w->line;
	n = dwarf_getscopes(cu, off, &scopes);
	n = n > 0 ? dwarf_getscopes_die(&scopes[0], &chain) : 0;
	for (i = 0; i < n; i++) {
		const char *name;

		if (dwarf_tag(&chain[i]) != DW_TAG_inlined_subroutine)
			continue;
		/* the kernel's body, not a helper the stub inlines */
		name = dwarf_diename(&chain[i]);
		body |= name && w->fn && !strcmp(name, w->fn);
		if (w->user_src && sdk_header(w->user_src)) {
			const char *f = call_file(cu, &chain[i], &w->user_line);

			if (f)
				w->user_src = f;
		}
	}
	free(chain);
	free(scopes);
	w->stub = entry && (!body || !w->line);
}

static void where_of(uint64_t pc, struct where *w)
{
	memset(w, 0, sizeof(*w));
	for (w->m = modules; w->m; w->m = w->m->next)
		if (pc >= w->m->base && pc < w->m->base + w->m->size)
			break;
	if (w->m) {
		uint64_t off = pc - w->m->base;
		Elf *e = module_elf(w->m);
		bool entry = false;
		Dwarf_Die cu;

		w->fn = e ? func_at(e, off, &entry) : NULL;
		if (w->m->dwarf && cu_of(w->m->dwarf, off, &cu)) {
			Dwarf_Line *l = dwarf_getsrc_die(&cu, off);

			if (l && !dwarf_lineno(l, &w->line))
				w->src = dwarf_linesrc(l, NULL, NULL);
			user_line_of(&cu, off, entry, w);
		}
	}
}

/* The kernel of m whose entry is entry, or whose name is fn; NULL if
 * none. mod_lock held. */
static const char *kernel_of(struct npu_module *m, uint64_t entry,
			     const char *fn)
{
	for (unsigned i = 0; i < m->nfuncs; i++)
		if ((entry && m->funcs[i].entry == entry) ||
		    (!entry && fn && !strcmp(m->funcs[i].desc.name, fn)))
			return m->funcs[i].desc.name;
	return NULL;
}

/* npu_fault_pc_hook: " in kernel K (module) at pc P (file.c:line)", with
 * ", in function F" before "at" when the PC is in a function K called. */
static void describe_pc(uint64_t pc, uint64_t entry, char *buf, size_t n)
{
	struct where w;
	char line[128] = "", callee[96] = "";
	const char *k;

	pthread_mutex_lock(&mod_lock);
	where_of(pc, &w);
	if (w.m) {
		if (w.src)
			snprintf(line, sizeof(line), " (%s:%d)", w.src, w.line);
		k = kernel_of(w.m, entry, NULL);
		if (!k)		/* launched kernel unknown: is pc in one? */
			k = kernel_of(w.m, 0, w.fn);
		if (w.fn && (!k || strcmp(k, w.fn)))
			snprintf(callee, sizeof(callee), ", in function %s",
				 w.fn);
		snprintf(buf, n, " in kernel %s (%s)%s at pc 0x%llx%s",
			 k ? k : "?", w.m->name, callee,
			 (unsigned long long)pc, line);
	}
	pthread_mutex_unlock(&mod_lock);
}

/* "file.c:12" for a device PC inside a loaded module (its DWARF; the
 * user's line a header helper was inlined at), "kernel (entry stub)" for
 * NPU_KERNEL's entry, else "kernel+0x40", else "0x...". */
#define LINE_MEMO	512	/* entries per module */

void npu_module_line(uint64_t pc, char *buf, size_t n)
{
	struct line_memo *lm = NULL;
	struct npu_module *m;
	struct where w;
	char text[sizeof(lm->text)];

	snprintf(buf, n, "0x%llx", (unsigned long long)pc);
	pthread_mutex_lock(&mod_lock);
	for (m = modules; m; m = m->next)
		if (pc >= m->base && pc < m->base + m->size)
			break;
	if (m && !m->line_memo)
		m->line_memo = calloc(LINE_MEMO, sizeof(*m->line_memo));
	if (m && m->line_memo) {
		lm = &m->line_memo[(pc >> 2) % LINE_MEMO];
		if (lm->pc == pc) {
			snprintf(buf, n, "%s", lm->text);
			pthread_mutex_unlock(&mod_lock);
			return;
		}
	}
	snprintf(text, sizeof(text), "0x%llx", (unsigned long long)pc);
	where_of(pc, &w);
	if (w.stub && w.fn)
		snprintf(text, sizeof(text), "%s (entry stub)", w.fn);
	else if (w.user_src)
		snprintf(text, sizeof(text), "%s:%d", strrchr(w.user_src, '/') ?
			 strrchr(w.user_src, '/') + 1 : w.user_src, w.user_line);
	else if (w.fn)
		snprintf(text, sizeof(text), "%s+0x%llx", w.fn,
			 (unsigned long long)(pc - w.m->base));
	if (lm) {
		lm->pc = pc;
		memcpy(lm->text, text, sizeof(text));
	}
	snprintf(buf, n, "%s", text);
	pthread_mutex_unlock(&mod_lock);
}

bool npu_module_kernel_name(uint64_t entry, char *buf, size_t n)
{
	struct npu_module *m;
	bool ok = false;

	pthread_mutex_lock(&mod_lock);
	for (m = modules; m && !ok; m = m->next)
		for (unsigned i = 0; i < m->nfuncs && !ok; i++)
			if (m->funcs[i].entry == entry) {
				snprintf(buf, n, "%s", m->funcs[i].desc.name);
				ok = true;
			}
	pthread_mutex_unlock(&mod_lock);
	return ok;
}

static void module_free(struct npu_module *m)
{
	if (!m)
		return;
	if (m->funcs)
		for (unsigned i = 0; i < m->nfuncs; i++)
			m->funcs[i].magic = 0;
	if (m->dwarf)
		dwarf_end(m->dwarf);
	if (m->elf)
		elf_end(m->elf);
	free(m->funcs);
	free(m->line_memo);
	free(m->image);
	free(m->file);
	m->magic = 0;
	free(m);
}

/* Load a code object. owned: image is malloc'ed and load() takes it,
 * whatever the outcome (it becomes m->file or is freed). */
static npu_status_t load(npu_module_t *out, const void *image, size_t size,
			 const char *what, bool owned)
{
	struct npu_module *m = NULL;
	struct device *dev;
	struct layout L;
	npu_status_t st;
	Elf *e = NULL;
	void *dptr = NULL;
	uint64_t ro;

	if (!out || !image) {
		st = npu_fail(NPU_ERROR_INVALID_VALUE, "NULL %s",
			      out ? "image" : "module pointer");
		goto fail_early;
	}
	*out = NULL;
	st = npu_cur_dev(&dev);
	if (st)
		goto fail_early;
	if (!(dev->prop.features & NPU_FEATURE_USER_KERNELS)) {
		st = npu_fail(NPU_ERROR_NOT_SUPPORTED, "the device runs no "
			      "user code (no NPU_FEATURE_USER_KERNELS)");
		goto fail_early;
	}
	if (elf_version(EV_CURRENT) == EV_NONE) {
		st = npu_fail(NPU_ERROR_NOT_INITIALIZED, "libelf: %s",
			      elf_errmsg(-1));
		goto fail_early;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		st = npu_fail(NPU_ERROR_OUT_OF_MEMORY, "module");
		goto fail_early;
	}
	if (owned) {
		m->file = (void *)image;
	} else {
		m->file = malloc(size ? size : 1);
		if (!m->file) {
			free(m);
			return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "module image");
		}
		memcpy(m->file, image, size);
	}
	m->file_size = size;
	snprintf(m->name, sizeof(m->name), "%s", what);
	e = elf_memory(m->file, size);
	if (!e) {
		st = bad(what, "not an ELF file (%s)", elf_errmsg(-1));
		goto fail;
	}
	st = check_elf(e, m->file, size, what, &L);
	if (!st)
		st = read_kernels(dev, e, &L, what, m);
	if (st)
		goto fail;
	m->uses_printf = find_symbol(e, L.symtab, "npu_printf", false, NULL);
	m->size = (L.span + 4095) & ~4095ull;
	m->image = calloc(1, m->size);
	if (!m->image) {
		st = npu_fail(NPU_ERROR_OUT_OF_MEMORY, "module image");
		goto fail;
	}
	st = npu_malloc(&dptr, m->size);
	if (st)
		goto fail;
	m->base = (uint64_t)(uintptr_t)dptr;
	st = relocate(e, &L, m->file, m->image, m->base, what);
	if (!st)
		st = npu_memcpy(dptr, m->image, m->size,
				NPU_MEMCPY_HOST_TO_DEVICE);
	/* the whole pages below the writable segments: code, read-only data */
	ro = (L.first_w < L.span ? L.first_w : L.span) & ~4095ull;
	if (!st && ro && (dev->prop.features & DRM_NPU_FEATURE_BO_PROTECT) &&
	    npu_mem_protect(dev, dptr, ro))
		st = npu_fail(NPU_ERROR_OS, "code object %s: BO_PROTECT: %s",
			      what, npu_strerror(errno));
	if (st)
		goto fail;
	elf_end(e);
	m->magic = MODULE_MAGIC;
	m->dev = dev;
	for (unsigned i = 0; i < m->nfuncs; i++) {
		struct npu_function *f = &m->funcs[i];

		f->entry = m->base + f->entry_off;
		f->scratch_room = dev->prop.unit_scratch_bytes -
				  f->desc.scratch_bytes;
		f->dev = dev;
		f->uses_printf = m->uses_printf;
		npu_cmd_short_template(&f->packet, f->entry, f->desc.nargs,
				       f->stack_bytes);
	}
	pthread_mutex_lock(&mod_lock);
	m->next = modules;
	modules = m;
	npu_fault_pc_hook = describe_pc;
	pthread_mutex_unlock(&mod_lock);
	*out = m;
	return NPU_SUCCESS;
fail:
	if (dptr)
		npu_free(dptr);
	if (e)
		elf_end(e);
	module_free(m);		/* frees m->file, an owned image too */
	return st;
fail_early:
	if (owned)
		free((void *)image);
	return st;
}

npu_status_t npu_module_load_named(npu_module_t *module, const void *image,
				   size_t size, const char *what)
{
	return load(module, image, size, what, false);
}

npu_status_t npu_module_load_data(npu_module_t *module, const void *image,
				  size_t size)
{
	return load(module, image, size, "(memory)", false);
}

npu_status_t npu_module_load(npu_module_t *module, const char *path)
{
	struct stat sb;
	void *buf;
	ssize_t r;
	size_t got = 0;
	int fd;

	if (module)
		*module = NULL;
	if (!path || !module)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "NULL %s",
				path ? "module pointer" : "path");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return npu_fail(errno == ENOENT ? NPU_ERROR_FILE_NOT_FOUND :
				NPU_ERROR_OS, "%s: %s", path, strerror(errno));
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) ||
	    sb.st_size > 2 * (off_t)MODULE_MAX_SPAN) {
		close(fd);
		return npu_fail(NPU_ERROR_INVALID_IMAGE, "%s: not a regular file "
				"of a plausible size", path);
	}
	buf = malloc(sb.st_size ? (size_t)sb.st_size : 1);
	if (!buf) {
		close(fd);
		return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "%s", path);
	}
	while (got < (size_t)sb.st_size &&
	       (r = read(fd, (char *)buf + got, (size_t)sb.st_size - got)) > 0)
		got += (size_t)r;
	close(fd);
	if (got != (size_t)sb.st_size) {
		free(buf);
		return npu_fail(NPU_ERROR_OS, "%s: short read", path);
	}
	return load(module, buf, got, path, true);	/* takes buf */
}

static npu_status_t get_module(npu_module_t m)
{
	bool ok = false;
	struct npu_module *x;

	pthread_mutex_lock(&mod_lock);
	for (x = modules; x; x = x->next)
		if (x == m)
			ok = x->magic == MODULE_MAGIC;
	pthread_mutex_unlock(&mod_lock);
	return ok ? NPU_SUCCESS : npu_fail(NPU_ERROR_INVALID_HANDLE,
					   "not a loaded module");
}

npu_status_t npu_module_unload(npu_module_t m)
{
	struct npu_module **pp, *x;
	npu_status_t st = NPU_SUCCESS;
	unsigned users = 0;
	bool found = false;

	/* Claim m under mod_lock: of two threads unloading it, one wins,
	 * the other finds no loaded module. From here no launch, graph node
	 * or npu_module_get_function() can take one of its kernels. */
	pthread_mutex_lock(&mod_lock);
	for (x = modules; x; x = x->next)
		if (x == m && x->magic == MODULE_MAGIC) {
			found = true;
			users = m->users;
			if (!users) {
				m->magic = MODULE_UNLOADING;
				for (unsigned i = 0; i < m->nfuncs; i++)
					m->funcs[i].magic = 0;
				/* launches re-check their cached function */
				atomic_fetch_add_explicit(&npu_mod_gen, 1,
							  memory_order_release);
			}
			break;
		}
	pthread_mutex_unlock(&mod_lock);
	if (!found)
		return npu_fail(NPU_ERROR_INVALID_HANDLE, "not a loaded module");
	if (users)
		return npu_fail(NPU_ERROR_IN_USE, "module %s: %u node(s) of "
				"graphs or executable graphs launch its kernels; "
				"destroy them first", m->name, users);
	/* its kernels may still run on its device: let them end, print what
	 * they printed (a fault there is still described from m) */
	if (npu_capturing()) {	/* stream capture hook (npu_core.h) */
		npu_status_t cst;

		if (npu_capture()->sync(NULL, 1, &cst))
			st = cst;
	}
	if (!st) {
		pthread_mutex_lock(&m->dev->lock);
		st = npu_dev_sync_locked(m->dev);
		pthread_mutex_unlock(&m->dev->lock);
	}
	pthread_mutex_lock(&mod_lock);
	for (pp = &modules; *pp; pp = &(*pp)->next)
		if (*pp == m) {
			*pp = m->next;
			break;
		}
	atomic_fetch_add_explicit(&npu_mod_gen, 1, memory_order_release);
	pthread_mutex_unlock(&mod_lock);
	npu_free((void *)(uintptr_t)m->base);
	module_free(m);
	return st;
}

npu_status_t npu_function_hold(npu_function_t f)
{
	struct npu_module *x;
	bool ok = false;

	pthread_mutex_lock(&mod_lock);
	for (x = modules; x && !ok; x = x->next)
		ok = f >= x->funcs && f < x->funcs + x->nfuncs &&
		     f->magic == FUNC_MAGIC;
	if (ok)
		f->mod->users++;
	pthread_mutex_unlock(&mod_lock);
	return ok ? NPU_SUCCESS : npu_fail(NPU_ERROR_INVALID_HANDLE,
					   "not a function of a loaded module");
}

void npu_function_release(npu_function_t f)
{
	pthread_mutex_lock(&mod_lock);
	f->mod->users--;
	pthread_mutex_unlock(&mod_lock);
}

npu_status_t npu_module_get_function(npu_function_t *f, npu_module_t m,
				     const char *name)
{
	npu_status_t st;

	if (!f || !name)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "NULL %s",
				f ? "name" : "function pointer");
	st = get_module(m);
	if (st)
		return st;
	for (unsigned i = 0; i < m->nfuncs; i++)
		if (!strcmp(m->funcs[i].desc.name, name)) {
			*f = &m->funcs[i];
			return NPU_SUCCESS;
		}
	return npu_fail(NPU_ERROR_NOT_FOUND, "no kernel \"%s\" in %s", name,
			m->name);
}

__thread npu_function_t npu_last_function;
__thread unsigned npu_last_function_gen;
/* The thread's functions found valid lately, at generation recent_gen:
 * a thread that launches a few kernels in turn checks them without
 * mod_lock (a process-wide mutex) as long as no module was unloaded. */
#define RECENT_FUNCTIONS 8
static __thread npu_function_t recent_fn[RECENT_FUNCTIONS];
static __thread unsigned recent_gen, recent_next;

npu_status_t npu_function_check_slow(npu_function_t f)
{
	unsigned gen, i;
	bool ok = false;
	struct npu_module *x;

	gen = atomic_load_explicit(&npu_mod_gen, memory_order_acquire);
	for (i = 0; f && recent_gen == gen && i < RECENT_FUNCTIONS; i++)
		if (recent_fn[i] == f) {
			npu_last_function = f;
			npu_last_function_gen = gen;
			return NPU_SUCCESS;
		}
	pthread_mutex_lock(&mod_lock);
	gen = atomic_load_explicit(&npu_mod_gen, memory_order_relaxed);
	for (x = modules; x && !ok; x = x->next)
		ok = f >= x->funcs && f < x->funcs + x->nfuncs &&
		     f->magic == FUNC_MAGIC;
	pthread_mutex_unlock(&mod_lock);
	if (!ok)
		return npu_fail(NPU_ERROR_INVALID_HANDLE,
				"not a function of a loaded module");
	npu_last_function = f;
	npu_last_function_gen = gen;
	if (recent_gen != gen) {
		memset(recent_fn, 0, sizeof(recent_fn));
		recent_gen = gen;
	}
	recent_fn[recent_next++ % RECENT_FUNCTIONS] = f;
	return NPU_SUCCESS;
}

/* Copy at most n bytes of the NUL-terminated string at device address va
 * inside a loaded module into buf; false if va is in none. */
bool npu_module_string(uint64_t va, char *buf, size_t n)
{
	struct npu_module *m;
	bool ok = false;

	pthread_mutex_lock(&mod_lock);
	for (m = modules; m && !ok; m = m->next) {
		if (va < m->base || va >= m->base + m->size)
			continue;
		const char *s = (const char *)m->image + (va - m->base);
		size_t max = m->base + m->size - va, len = strnlen(s, max);

		if (len < max) {
			snprintf(buf, n, "%s", s);
			ok = true;
		}
	}
	pthread_mutex_unlock(&mod_lock);
	return ok;
}

npu_status_t npu_func_get_attribute(int *value, npu_func_attribute_t attr,
				    npu_function_t f)
{
	npu_status_t st;
	struct device *dev;

	if (!value)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "NULL value");
	st = npu_function_check(f);
	if (st)
		return st;
	dev = f->mod->dev;
	switch (attr) {
	case NPU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
		*value = (int)f->max_threads;
		break;
	case NPU_FUNC_ATTRIBUTE_SCRATCH_SIZE_BYTES:
		*value = (int)f->desc.scratch_bytes;
		break;
	case NPU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SCRATCH_SIZE_BYTES:
		*value = (int)(dev->prop.unit_scratch_bytes - f->desc.scratch_bytes);
		break;
	case NPU_FUNC_ATTRIBUTE_STACK_SIZE_BYTES:
		*value = (int)f->stack_bytes;
		break;
	case NPU_FUNC_ATTRIBUTE_NUM_ARGS:
		*value = (int)f->desc.nargs;
		break;
	default:
		return npu_fail(NPU_ERROR_INVALID_VALUE, "unknown attribute %d",
				(int)attr);
	}
	return NPU_SUCCESS;
}

/* Blocks of f resident on one unit at once (the device's fit rule: thread
 * slots and scratchpad). */
static unsigned blocks_per_unit(npu_function_t f, unsigned threads,
				size_t dyn_scratch)
{
	const npu_device_prop *p = &f->mod->dev->prop;
	unsigned n = p->unit_threads / threads;
	size_t scratch = f->desc.scratch_bytes + dyn_scratch;

	if (scratch && p->unit_scratch_bytes / scratch < n)
		n = (unsigned)(p->unit_scratch_bytes / scratch);
	return n;
}

npu_status_t npu_occupancy_max_active_blocks_per_unit(int *blocks,
						      npu_function_t f,
						      int block_threads,
						      size_t dyn_scratch)
{
	npu_status_t st;

	if (!blocks)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "NULL blocks");
	st = npu_function_check(f);
	if (st)
		return st;
	if (block_threads <= 0 || (unsigned)block_threads > f->max_threads)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "block of %d threads "
				"(kernel %s takes 1..%u)", block_threads,
				f->desc.name, f->max_threads);
	if (dyn_scratch > f->mod->dev->prop.unit_scratch_bytes)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "%zu bytes of dynamic "
				"scratchpad (a unit has %u)", dyn_scratch,
				f->mod->dev->prop.unit_scratch_bytes);
	*blocks = (int)blocks_per_unit(f, (unsigned)block_threads, dyn_scratch);
	return NPU_SUCCESS;
}

npu_status_t npu_occupancy_max_potential_block_size(int *min_grid,
						    int *block_threads,
						    npu_function_t f,
						    size_t dyn_scratch,
						    int block_limit)
{
	unsigned best = 0, best_active = 0, t, max;
	npu_status_t st;

	if (!min_grid || !block_threads)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "NULL output");
	st = npu_function_check(f);
	if (st)
		return st;
	if (block_limit < 0)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "negative block limit");
	max = f->max_threads;
	if (block_limit && (unsigned)block_limit < max)
		max = (unsigned)block_limit;
	for (t = max; t >= 1; t--) {
		unsigned active = blocks_per_unit(f, t, dyn_scratch) * t;

		if (active > best_active) {
			best_active = active;
			best = t;
		}
	}
	if (!best)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "kernel %s with %zu "
				"bytes of dynamic scratchpad fits no unit",
				f->desc.name, dyn_scratch);
	*block_threads = (int)best;
	*min_grid = (int)(blocks_per_unit(f, best, dyn_scratch) *
			  f->mod->dev->prop.compute_units);
	return NPU_SUCCESS;
}

/* What is wrong with args (npu_ukernel_prepare found something). */
npu_status_t npu_ukernel_args_fail(npu_function_t f, void **args)
{
	const struct npu_code_desc *k = &f->desc;
	unsigned i;

	if (!args)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "kernel %s takes %u "
				"arguments; args is NULL", k->name, k->nargs);
	for (i = 0; i < k->nargs && args[i]; i++)
		;
	return npu_fail(NPU_ERROR_INVALID_VALUE, "kernel %s: args[%u] is NULL",
			k->name, i);
}

npu_status_t npu_ukernel_check(npu_function_t f, npu_dim3 grid, npu_dim3 block,
			       uint64_t scratch_bytes)
{
	const struct npu_code_desc *k = &f->desc;
	uint64_t threads = (uint64_t)block.x * block.y * block.z;
	uint64_t blocks = (uint64_t)grid.x * grid.y * grid.z;
	uint64_t scratch = (uint64_t)k->scratch_bytes + scratch_bytes;

	if (!grid.x || !grid.y || !grid.z || !block.x || !block.y || !block.z)
		return npu_fail(NPU_ERROR_INVALID_CONFIGURATION,
				"kernel %s: grid %ux%ux%u, block %ux%ux%u has a "
				"zero dimension", k->name, grid.x, grid.y, grid.z,
				block.x, block.y, block.z);
	if (threads > f->max_threads)
		return npu_fail(NPU_ERROR_INVALID_CONFIGURATION,
				"kernel %s: %llu threads per block, at most %u",
				k->name, (unsigned long long)threads,
				f->max_threads);
	if (blocks > UINT32_MAX)
		return npu_fail(NPU_ERROR_INVALID_CONFIGURATION,
				"kernel %s: %llu blocks, fewer than 2^32 please",
				k->name, (unsigned long long)blocks);
	if (scratch > f->mod->dev->prop.unit_scratch_bytes)
		return npu_fail(NPU_ERROR_INVALID_CONFIGURATION,
				"kernel %s: %llu bytes of scratchpad per block "
				"(%u static), a unit has %u", k->name,
				(unsigned long long)scratch, k->scratch_bytes,
				f->mod->dev->prop.unit_scratch_bytes);
	return NPU_SUCCESS;
}

