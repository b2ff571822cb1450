/*
 * safepoint.c - where a preemption signal may switch: every loaded object's
 * code, each with a verdict.
 *
 * A fiber interrupted inside code that may hold a lock another fiber on the
 * same thread needs must not be switched away (preempt/signal.c defers the
 * preemption instead).  Such code is named here by object: libc, the
 * dynamic loader, libpthread, libgcc_s, libstdc++, NSS modules, libxfiber
 * itself, the sanitizer runtimes, the vDSO and OpenSSL's libcrypto and
 * libssl, plus whatever the program
 * marks with xf_preempt_unsafe_add().  libxfiber linked in statically lies
 * inside the executable, in a section of its own (xf_lib_text), unsafe too.
 *
 * The table holds the executable segments of *every* object, sorted by
 * address, each marked safe or unsafe, so that the handler can tell three
 * answers apart: safe, unsafe, and unknown - code in no object the table
 * knows.  Unknown code is treated as unsafe and makes the table stale: an
 * object loaded after the last build (dlopen(), or one the C library loads
 * on its own, such as libgcc_s for the unwinder or an NSS module), or code
 * outside any object (a JIT), which stays unknown and so is never
 * preempted.  Builds happen at xf_init and xf_preempt_unsafe_add(), and
 * on the ticker's thread when the handler found the table stale or, every
 * XF_SAFEPOINT_CHECK_NS, when the loader's counts of loads and unloads
 * changed (an object unloaded and another loaded at its address since).
 * dlopen() itself is not interposed: glibc resolves a relative name against
 * its caller's RUNPATH, and a wrapper would become that caller.
 *
 * The handler reads the table without a lock, from a signal: a build
 * publishes a new table with one release store and keeps the old ones until
 * the runtime stops (they are small, and builds are rare), so a handler
 * never reads freed memory.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "preempt/preempt.h"
#include "sched/sched.h"
#include "runtime/hooks.h"

#define MARKS_MAX 64
#define XF_SAFEPOINT_CHECK_NS (10 * 1000 * 1000)

struct text_range {
	uintptr_t lo, hi;
	bool unsafe;
};

struct table {
	struct table *retired_next; /* older tables, kept for handlers still reading */
	unsigned long long adds, subs;	/* the loader's counts it was built at */
	unsigned nr;
	struct text_range ranges[];
};

static _Atomic(struct table *) current;
static _Atomic int stale;
static pthread_mutex_t build_lock = PTHREAD_MUTEX_INITIALIZER;
static struct table *retired;
static uintptr_t marks[MARKS_MAX]; /* addresses given to xf_preempt_unsafe_add() */
static unsigned marks_nr;

/* Objects that may hold locks another fiber on the same thread needs. */
static bool system_object(const char *name)
{
	/* libc, the loader, the unwinder, the C++ runtime, the NSS modules
	 * that libc calls with its own locks held, ourselves, the sanitizer
	 * runtimes, whose allocators keep per-thread caches, the vDSO: its
	 * clock_gettime is called with locks held (ASan's allocator reads the
	 * clock inside its size-class lock - found as a deadlock) - and
	 * OpenSSL (LibreSSL too), which keys state on the thread: RSA
	 * blinding used without its lock by the thread that made it, the
	 * error queue, per-thread random generators.  Preempted inside it,
	 * 8 fibers signing with one key on one worker got 1,196 bad RSA
	 * signatures of 1,200 (sync.openssl). */
	static const char *const names[] = {
	    "/libc.so",	   "/ld-linux",	    "/libpthread.so", "/libgcc_s.so", "/libstdc++.so",
	    "/libnss_",	   "/libxfiber.so", "/libasan.so",    "/libubsan.so", "/libtsan.so",
	    "/liblsan.so", "linux-vdso.so", "/libcrypto.so",  "/libssl.so",
	};

	for (size_t i = 0; i < XF_ARRAY_SIZE(names); i++) {
		if (name && strstr(name, names[i]))
			return true;
	}
	return false;
}

static bool object_contains(const struct dl_phdr_info *info, uintptr_t addr)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && addr >= lo && addr < lo + ph->p_memsz)
			return true;
	}
	return false;
}

static bool object_marked(const struct dl_phdr_info *info)
{
	for (unsigned i = 0; i < marks_nr; i++) {
		if (object_contains(info, marks[i]))
			return true;
	}
	return false;
}

struct build {
	struct table *t;
	unsigned cap;
	int err;
};

static int add_object(struct dl_phdr_info *info, size_t size, void *data)
{
	struct build *b = data;
	bool unsafe = system_object(info->dlpi_name) || object_marked(info);

	(void)size;
	b->t->adds = info->dlpi_adds;
	b->t->subs = info->dlpi_subs;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		if (b->t->nr == b->cap) {
			unsigned cap = b->cap ? 2 * b->cap : 64;
			struct table *t = realloc(b->t, sizeof(*t) + cap * sizeof(t->ranges[0]));

			if (!t) {
				b->err = ENOMEM;
				return 1;
			}
			b->t = t;
			b->cap = cap;
		}
		b->t->ranges[b->t->nr++] =
		    (struct text_range){.lo = info->dlpi_addr + ph->p_vaddr,
					.hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz,
					.unsafe = unsafe};
	}
	return 0;
}

static int by_address(const void *a, const void *b)
{
	const struct text_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The loader's counts of loads and unloads right now. */
static int read_counts(struct dl_phdr_info *info, size_t size, void *data)
{
	unsigned long long *counts = data;

	(void)size;
	counts[0] = info->dlpi_adds;
	counts[1] = info->dlpi_subs;
	return 1; /* one object tells */
}

/* Builds and publishes a table if the loaded objects changed since the
 * last one (or always, with force).  Not from a signal handler. */
static int build(bool force)
{
	struct table *old;
	struct build b = {0};
	unsigned long long counts[2] = {0, 0};

	pthread_mutex_lock(&build_lock);
	old = atomic_load_explicit(&current, memory_order_relaxed);
	atomic_store_explicit(&stale, 0, memory_order_relaxed);
	dl_iterate_phdr(read_counts, counts);
	if (old && !force && old->adds == counts[0] && old->subs == counts[1]) {
		pthread_mutex_unlock(&build_lock);
		return 0;
	}
	b.t = calloc(1, sizeof(*b.t));
	if (b.t)
		dl_iterate_phdr(add_object, &b);
	if (!b.t || b.err) {
		free(b.t);
		pthread_mutex_unlock(&build_lock);
		return ENOMEM;
	}
	qsort(b.t->ranges, b.t->nr, sizeof(b.t->ranges[0]), by_address);
	atomic_store_explicit(&current, b.t, memory_order_release);
	if (old) {
		old->retired_next = retired;
		retired = old;
	}
	pthread_mutex_unlock(&build_lock);
	return 0;
}

int xf__safepoints_build(void)
{
	return build(true);
}

void xf__safepoints_refresh(uint64_t now_ns)
{
	static uint64_t checked_ns;

	if (!atomic_load_explicit(&current, memory_order_relaxed))
		return;
	if (atomic_load_explicit(&stale, memory_order_relaxed) ||
	    now_ns - checked_ns >= XF_SAFEPOINT_CHECK_NS) {
		checked_ns = now_ns;
		build(false);
	}
}

void xf__safepoints_release(void)
{
	pthread_mutex_lock(&build_lock);
	free(atomic_exchange(&current, NULL));
	while (retired) {
		struct table *t = retired;
		retired = t->retired_next;
		free(t);
	}
	pthread_mutex_unlock(&build_lock);
}

/* libxfiber's own code when the static library is linked in: inside the
 * executable's segment, but not the program's code (src/CMakeLists.txt). */
extern const char __start_xf_lib_text[] __attribute__((weak, visibility("hidden")));
extern const char __stop_xf_lib_text[] __attribute__((weak, visibility("hidden")));

enum xf__code xf__safepoint_code(uintptr_t pc)
{
	const struct table *t = atomic_load_explicit(&current, memory_order_acquire);
	unsigned lo = 0, hi;

	if (!t || (pc >= (uintptr_t)__start_xf_lib_text && pc < (uintptr_t)__stop_xf_lib_text))
		return XF_CODE_UNSAFE;
	/* The last range starting at or below pc. */
	hi = t->nr;
	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (t->ranges[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && pc < t->ranges[lo - 1].hi)
		return t->ranges[lo - 1].unsafe ? XF_CODE_UNSAFE : XF_CODE_SAFE;
	atomic_store_explicit(&stale, 1, memory_order_relaxed);
	return XF_CODE_UNKNOWN;
}

struct find_object {
	uintptr_t addr;
	bool found;
};

static int find_containing(struct dl_phdr_info *info, size_t size, void *data)
{
	struct find_object *q = data;

	(void)size;
	if (!object_contains(info, q->addr))
		return 0;
	q->found = true;
	return 1;
}

int xf_preempt_unsafe_add(const void *addr)
{
	struct find_object q = {.addr = (uintptr_t)addr};
	int err = 0;

	if (!addr)
		return EINVAL;
	dl_iterate_phdr(find_containing, &q);
	if (!q.found)
		return EINVAL;
	pthread_mutex_lock(&build_lock);
	if (marks_nr == MARKS_MAX)
		err = ENOSPC;
	else
		marks[marks_nr++] = (uintptr_t)addr;
	pthread_mutex_unlock(&build_lock);
	/* In force from now on if the runtime runs; else from xf_init. */
	if (!err && atomic_load_explicit(&current, memory_order_relaxed))
		err = build(true);
	return err;
}

static void safepoints_fork(enum xf__fork_phase phase)
{
	xf__fork_mutex(&build_lock, phase);
}

XF_HOOK(safepoints_hook) = {.module = "preempt/safepoint",
			    .fork_order = XF_FORK_ORDER_SAFEPOINTS,
			    .fork = safepoints_fork};
