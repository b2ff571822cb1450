/*
 * stack.c - fiber stacks: mmap'd, guarded, committed lazily, reused.
 *
 * Stacks of the default size are carved from slabs of XF_SLAB_STACKS, so
 * 100,000 fibers need a few thousand mappings, not 100,000: Linux allows
 * 65,530 per process by default.  The guard below each stack: see guard().
 * Pages are committed only when touched, so a parked fiber costs the pages
 * its frames reached.
 *
 * Each stack is `stack_size` for user frames plus `frame_reserve` for one
 * kernel signal frame on top (AT_MINSIGSTKSZ rounded up: ~3.4 KB, ~12 KB
 * once AMX is in use), since signal handlers run on the fiber's stack.
 *
 * Freed stacks go to the worker's cache (XF_STACK_CACHE); a full cache
 * hands its older half to a global pool, an empty one takes a batch back,
 * so the pool's lock is taken once per XF_STACK_BATCH spawns or exits.
 * Pooled stacks keep their pages until the scavenger (below) gives back
 * those nobody reused for a while: a burst of fibers faults its stacks in
 * once, not at every spawn.
 *
 * A stack of another size (xf_attr.stack_size) has a mapping of its own,
 * and goes to a pool of its size when freed, without a worker's cache: up
 * to XF_STACK_SIZES - 1 sizes, XF_SIZED_POOL_MAX stacks each, which the
 * scavenger unmaps once nobody reused them for a period or two; one of yet
 * another size, or past the bound, is unmapped at once.  Mapping, guarding
 * and unmapping took 21-25 us a spawn+join here, against 0.8 us from a
 * pool (a reviewer's program, 16 KiB to 512 KiB stacks).
 *
 * A fault in a guard region, or a signal frame the kernel could not push
 * for want of room, is reported by a SIGSEGV handler running on a
 * per-worker alternate stack: which fiber, which stack size, then abort.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "common/fmt.h"
#include "preempt/preempt.h"
#include "arch/context.h"
#include "sched/sched.h"
#include "runtime/hooks.h"

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif
#ifndef MADV_GUARD_REMOVE
#define MADV_GUARD_REMOVE 103
#endif

#define XF_SLAB_STACKS 16
#define PAGE	       4096u

struct slab {
	struct slab *next;
	void *base;
	size_t len;
	unsigned valgrind_ids[XF_SLAB_STACKS]; /* its stacks' registrations */
};

/* Stacks of one size, used as a stack (LIFO: the warmest first). */
struct stack_list {
	struct xf__stack *v;
	size_t nr, cap;
};

/* The sizes pooled: the default's first, then others as they are freed. */
#define XF_STACK_SIZES 8
/* Stacks a pool of another size keeps at most.  Each is a mapping of its
 * own, two with an mprotect guard (kernels before 6.13): a pool that kept
 * every stack of a burst until shutdown held its share of the 65,530 a
 * process may have, and bursts of a few sizes, each well within the limit,
 * then failed with ENOMEM (a reviewer's program: 12,000 fibers of 4 sizes
 * under XFIBER_STACK_GUARD=mprotect).  The scavenger unmaps the ones
 * nobody reused, rather than giving back their pages. */
#define XF_SIZED_POOL_MAX 64

/* Stacks of one usable size no worker caches, by how long ago they were
 * freed: `warm` since the last scavenge, `aging` since the one before,
 * `cold` with their pages given back. */
struct stack_pool {
	size_t usable; /* 0: a free entry */
	struct stack_list warm, aging, cold;
	struct stack_list spare; /* an empty buffer for the next `warm` */
	size_t scavenging;	 /* out of the lists while their pages go back */
};

static struct {
	pthread_mutex_t lock;
	struct slab *slabs; /* every slab, for release at shutdown */
	char *carve;	    /* next unused slot in the newest slab, */
	struct slab *carving; /* which is this one, or NULL once kept (xf__stack_keep) */
	unsigned carve_left;
	struct stack_pool pools[XF_STACK_SIZES]; /* [0]: the default size's */
	_Atomic uint64_t next_scavenge_ns;
	uint64_t made, scavenged; /* for xf_stats */
	bool handler_installed;
} stacks = {.lock = PTHREAD_MUTEX_INITIALIZER};

static size_t usable_size(size_t stack_size)
{
	return XF_ALIGN_UP(stack_size + xf__rt.frame_reserve, PAGE);
}

/*
 * Guards.  MADV_GUARD_INSTALL (Linux 6.13+) marks page-table entries and
 * splits no mapping.  Before it, mprotect(PROT_NONE) splits the slab: each
 * guarded stack then costs two of the vm.max_map_count mappings (65,530 by
 * default), so guarded fibers stop near 32,700.  The first guard that the
 * limit refuses says so on stderr, once, and the spawn fails with ENOMEM;
 * xf_config.no_stack_guards trades the guards for fibers.
 * XFIBER_STACK_GUARD=madvise|mprotect|none forces a way (tests use it to
 * run the old kernels' path here).
 */
enum guard_mode { GUARD_MADVISE, GUARD_MPROTECT, GUARD_NONE };
static enum guard_mode guard_mode;

int xf__stacks_configure(const xf_config *cfg)
{
	const char *env = getenv("XFIBER_STACK_GUARD");

	guard_mode = cfg->no_stack_guards ? GUARD_NONE : GUARD_MADVISE;
	if (!env || !*env || cfg->no_stack_guards)
		return 0;
	if (!strcmp(env, "madvise"))
		guard_mode = GUARD_MADVISE;
	else if (!strcmp(env, "mprotect"))
		guard_mode = GUARD_MPROTECT;
	else if (!strcmp(env, "none"))
		guard_mode = GUARD_NONE;
	else {
		fprintf(stderr, "xfiber: XFIBER_STACK_GUARD=%s: say madvise, mprotect or none\n",
			env);
		return EINVAL;
	}
	return 0;
}

static void say_map_limit(void)
{
	static atomic_bool said;
	char limit[32] = "?";
	FILE *f;

	if (atomic_exchange(&said, true))
		return;
	f = fopen("/proc/sys/vm/max_map_count", "r");
	if (f) {
		if (!fgets(limit, sizeof(limit), f))
			strcpy(limit, "?");
		limit[strcspn(limit, "\n")] = 0;
		fclose(f);
	}
	fprintf(stderr,
		"xfiber: no memory mapping left to guard another fiber stack: guards made with "
		"mprotect (no MADV_GUARD_INSTALL before Linux 6.13, or XFIBER_STACK_GUARD=mprotect) "
		"take two of the vm.max_map_count = %s mappings a process may have per stack. "
		"Raise it (sysctl -w "
		"vm.max_map_count=N, about 2 per fiber) or set xf_config.no_stack_guards; "
		"xf_spawn fails with ENOMEM meanwhile\n",
		limit);
}

static int guard(void *lo)
{
	if (guard_mode == GUARD_NONE)
		return 0;
	if (guard_mode == GUARD_MADVISE) {
		if (madvise(lo, XF_GUARD_SIZE, MADV_GUARD_INSTALL) == 0)
			return 0;
		guard_mode = GUARD_MPROTECT; /* a kernel before 6.13: EINVAL, for good */
	}
	if (mprotect(lo, XF_GUARD_SIZE, PROT_NONE) == 0)
		return 0;
	if (errno == ENOMEM)
		say_map_limit();
	return errno;
}

/*
 * A stack's own mapping refused: with mprotect's guards that is the same
 * limit as a refused guard (which of the two meets it first depends on the
 * count when the next slab is due; under qemu-user it is the mmap).
 */
static int map_refused(void)
{
	if (errno == ENOMEM && guard_mode == GUARD_MPROTECT)
		say_map_limit();
	return ENOMEM;
}

/*
 * For debuggers: gdb's gcore stops copying a mapping at the first page it
 * cannot read, which a guard of MADV_GUARD_INSTALL is, so a slab's cores
 * lost every stack past its first guard.  The gdb extension's `fiber gcore
 * FILE` takes the guards away (install 0), runs gcore, and puts them back
 * (install 1), with every thread stopped.  So no lock here: a stopped
 * thread may hold one, and nothing moves meanwhile.  Only guards of
 * MADV_GUARD_INSTALL (mprotect's are mappings of their own, which gcore
 * passes over).  The number of guards changed.
 */
__attribute__((visibility("default"), used)) int xf_debug_stack_guards(int install);

int xf_debug_stack_guards(int install)
{
	const int advice = install ? MADV_GUARD_INSTALL : MADV_GUARD_REMOVE;
	int done = 0;

	if (guard_mode != GUARD_MADVISE)
		return 0;
	for (struct slab *s = stacks.slabs; s; s = s->next) {
		size_t slot = s->len / XF_SLAB_STACKS;
		unsigned carved = s == stacks.carving ? XF_SLAB_STACKS - stacks.carve_left
						       : XF_SLAB_STACKS;

		for (unsigned i = 0; i < carved; i++)
			done += madvise((char *)s->base + i * slot, XF_GUARD_SIZE, advice) == 0;
	}
	/* Stacks of other sizes: a mapping each, its guard first. */
	for (size_t c = 0; c < xf__fiber_arena.nr; c++)
		for (size_t i = 0; i < XF_ARENA_CHUNK; i++) {
			const struct xf_fiber *f = &xf__fiber_arena.chunks[c][i];

			if (f->magic == XF_FIBER_MAGIC && f->stack.region && f->stack.base)
				done += madvise(f->stack.region, XF_GUARD_SIZE, advice) == 0;
		}
	return done;
}

/* One stack of any size in a mapping of its own. */
static int stack_map_single(size_t usable, struct xf__stack *out)
{
	size_t len = XF_GUARD_SIZE + usable;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
	int err;

	if (p == MAP_FAILED)
		return map_refused();
	err = guard(p);
	if (err) {
		munmap(p, len);
		return err == ENOMEM ? ENOMEM : EAGAIN;
	}
	*out = (struct xf__stack){.base = p + XF_GUARD_SIZE, .size = usable, .region = p};
	out->valgrind_id = XF_VALGRIND_STACK_REGISTER(out->base, (char *)out->base + usable);
	return 0;
}

/* A new default-size stack from a slab; lock held. */
static int stack_carve(size_t usable, struct xf__stack *out)
{
	const size_t slot = XF_GUARD_SIZE + usable;

	if (!stacks.carve_left) {
		struct slab *s = malloc(sizeof(*s));
		void *p;

		if (!s)
			return ENOMEM;
		p = mmap(NULL, slot * XF_SLAB_STACKS, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
		if (p == MAP_FAILED) {
			int err = map_refused();

			free(s);
			return err;
		}
		*s = (struct slab){.next = stacks.slabs, .base = p, .len = slot * XF_SLAB_STACKS};
		stacks.slabs = s;
		stacks.carving = s;
		stacks.carve = p;
		stacks.carve_left = XF_SLAB_STACKS;
	}
	if (guard(stacks.carve))
		return ENOMEM;
	*out = (struct xf__stack){
	    .base = stacks.carve + XF_GUARD_SIZE, .size = usable, .region = NULL};
	unsigned valgrind_id = XF_VALGRIND_STACK_REGISTER(out->base, (char *)out->base + usable);
	if (stacks.carving)
		stacks.carving->valgrind_ids[XF_SLAB_STACKS - stacks.carve_left] = valgrind_id;
	stacks.carve += slot;
	stacks.carve_left--;
	stacks.made++;
	return 0;
}

/* Appends s to l, growing it; false if it cannot grow.  Lock held. */
static bool list_push(struct stack_list *l, const struct xf__stack *s)
{
	if (l->nr == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 256;
		struct xf__stack *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return false;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->nr++] = *s;
	return true;
}

/* The pool of stacks of `usable` bytes: found, or (make) given a free
 * entry; NULL if none.  Lock held. */
static struct stack_pool *pool_of(size_t usable, bool make)
{
	struct stack_pool *free_entry = NULL;

	for (unsigned i = 0; i < XF_STACK_SIZES; i++) {
		struct stack_pool *p = &stacks.pools[i];

		if (p->usable == usable)
			return p;
		if (!p->usable && !free_entry && i)
			free_entry = p;
	}
	if (make && free_entry)
		free_entry->usable = usable;
	return make ? free_entry : NULL;
}

/* The warmest stack of pool p into *out; lock held. */
static bool pool_pop(struct stack_pool *p, struct xf__stack *out)
{
	struct stack_list *from = p->warm.nr ? &p->warm : p->aging.nr ? &p->aging : &p->cold;

	if (!from->nr)
		return false;
	*out = from->v[--from->nr];
	return true;
}

/* Into pool p, warm; a stack the pool cannot take (no memory to grow it)
 * gives its pages back and is only leaked until shutdown, when its slab is
 * unmapped - or, of another size than the default, is unmapped now.  Lock
 * held. */
static void pool_push(struct stack_pool *p, struct xf__stack *s)
{
	if ((!s->region || p->warm.nr + p->aging.nr + p->cold.nr < XF_SIZED_POOL_MAX) &&
	    list_push(&p->warm, s))
		return;
	if (!s->region) {
		madvise(s->base, s->size, MADV_DONTNEED);
	} else {
		XF_VALGRIND_STACK_DEREGISTER(s->valgrind_id);
		munmap(s->region, XF_GUARD_SIZE + s->size);
	}
}

/* A stack of another size than the default: pooled, else mapped. */
static int stack_get_sized(size_t usable, struct xf__stack *out)
{
	struct stack_pool *p;
	bool pooled;

	pthread_mutex_lock(&stacks.lock);
	p = pool_of(usable, false);
	pooled = p && pool_pop(p, out);
	pthread_mutex_unlock(&stacks.lock);
	return pooled ? 0 : stack_map_single(usable, out);
}

static void stack_put_sized(struct xf__stack *s)
{
	struct stack_pool *p;

	pthread_mutex_lock(&stacks.lock);
	p = pool_of(s->size, true);
	if (p)
		pool_push(p, s);
	pthread_mutex_unlock(&stacks.lock);
	if (!p) { /* XF_STACK_SIZES sizes pooled already */
		XF_VALGRIND_STACK_DEREGISTER(s->valgrind_id);
		munmap(s->region, XF_GUARD_SIZE + s->size);
	}
}

/* The next spawn writes its first frame at the top of the stack it gets
 * (arch/context.c): with thousands of fibers alive that line, and its page's
 * translation, are long gone from the caches, so ask for them now. */
static inline void prefetch_top(const struct xf__stack *s)
{
	__builtin_prefetch((char *)s->base + s->size - XF_CTX_SIZE, 1);
}

int xf__stack_get(struct xf__worker *w, size_t size, struct xf__stack *out)
{
	const size_t usable = usable_size(size);
	int err = 0;

	if (size != xf__rt.stack_size)
		return stack_get_sized(usable, out);
	if (w && w->stack_cache_nr) {
		*out = w->stack_cache[--w->stack_cache_nr];
		if (w->stack_cache_nr)
			prefetch_top(&w->stack_cache[w->stack_cache_nr - 1]);
		return 0;
	}
	/* The cache is empty: refill half of it at once, so that the lock is
	 * taken once per XF_STACK_BATCH spawns. */
	pthread_mutex_lock(&stacks.lock);
	if (w) {
		while (w->stack_cache_nr < XF_STACK_BATCH &&
		       pool_pop(&stacks.pools[0], &w->stack_cache[w->stack_cache_nr]))
			w->stack_cache_nr++;
		if (w->stack_cache_nr)
			*out = w->stack_cache[--w->stack_cache_nr];
		else
			err = stack_carve(usable, out);
	} else if (!pool_pop(&stacks.pools[0], out)) {
		err = stack_carve(usable, out);
	}
	pthread_mutex_unlock(&stacks.lock);
	return err;
}

void xf__stack_put(struct xf__worker *w, struct xf__stack *s)
{
	if (!s->base)
		return;
	if (s->region) {
		stack_put_sized(s);
	} else if (w) {
		if (w->stack_cache_nr == XF_STACK_CACHE) {
			/* Full: the older half goes to the pool, pages and all
			 * (the scavenger gives them back if nobody wants them). */
			pthread_mutex_lock(&stacks.lock);
			for (unsigned i = 0; i < XF_STACK_BATCH; i++)
				pool_push(&stacks.pools[0], &w->stack_cache[i]);
			pthread_mutex_unlock(&stacks.lock);
			memmove(w->stack_cache, w->stack_cache + XF_STACK_BATCH,
				(XF_STACK_CACHE - XF_STACK_BATCH) * sizeof(w->stack_cache[0]));
			w->stack_cache_nr -= XF_STACK_BATCH;
		}
		w->stack_cache[w->stack_cache_nr++] = *s;
	} else {
		pthread_mutex_lock(&stacks.lock);
		pool_push(&stacks.pools[0], s);
		pthread_mutex_unlock(&stacks.lock);
	}
	s->base = NULL;
}

/*
 * The scavenger: what the pool holds beyond what is being reused goes back
 * to the kernel, off the spawn and exit paths.  Called by the ticker at
 * every tick and by a worker about to sleep; at most once a
 * XF_SCAVENGE_PERIOD_NS it ages the pool: the stacks still `aging` (freed
 * one to two periods ago and not reused since) give their pages back
 * (MADV_DONTNEED, outside the lock) and become `cold`, and `warm` becomes
 * `aging`.  So after a burst the pooled stacks' memory is returned within
 * two periods; what the workers' caches hold (XF_STACK_CACHE stacks each)
 * is kept for the next spawns.
 */
/* One period of pool p: called and returns with the lock held, drops it
 * while the pages go back. */
static void scavenge_pool(struct stack_pool *p, bool default_size)
{
	struct stack_list old;

	if (!p->warm.nr && !p->aging.nr)
		return;
	old = p->aging;
	p->aging = p->warm;
	p->warm = p->spare;
	p->spare = (struct stack_list){0};
	p->scavenging = old.nr;
	pthread_mutex_unlock(&stacks.lock);

	/* The default size's are a slab's: their pages go back.  Another
	 * size's are mappings of their own: they go. */
	for (size_t i = 0; i < old.nr; i++) {
		if (default_size) {
			madvise(old.v[i].base, old.v[i].size, MADV_DONTNEED);
		} else {
			XF_VALGRIND_STACK_DEREGISTER(old.v[i].valgrind_id);
			munmap(old.v[i].region, XF_GUARD_SIZE + old.v[i].size);
		}
	}
	if (!default_size)
		old.nr = 0;

	pthread_mutex_lock(&stacks.lock);
	if (default_size)
		stacks.scavenged += old.nr;
	p->scavenging = 0;
	for (size_t i = 0; i < old.nr; i++)
		if (!list_push(&p->cold, &old.v[i]))
			break; /* leaked until shutdown, pages already given back */
	old.nr = 0;
	if (!p->spare.v)
		p->spare = old;
	else
		free(old.v);
}

void xf__stacks_scavenge(uint64_t now_ns)
{
	if (now_ns < atomic_load_explicit(&stacks.next_scavenge_ns, memory_order_relaxed) ||
	    pthread_mutex_trylock(&stacks.lock))
		return;
	if (now_ns < atomic_load_explicit(&stacks.next_scavenge_ns, memory_order_relaxed)) {
		pthread_mutex_unlock(&stacks.lock); /* another caller was first */
		return;
	}
	atomic_store_explicit(&stacks.next_scavenge_ns, now_ns + XF_SCAVENGE_PERIOD_NS,
			      memory_order_relaxed);
	for (unsigned i = 0; i < XF_STACK_SIZES; i++)
		if (!i || stacks.pools[i].usable)
			scavenge_pool(&stacks.pools[i], !i);
	pthread_mutex_unlock(&stacks.lock);
}

void xf__stacks_stats(xf_stats *out)
{
	const struct stack_pool *p = &stacks.pools[0];

	pthread_mutex_lock(&stacks.lock);
	out->stacks_made = stacks.made;
	out->stacks_pooled_warm = p->warm.nr + p->aging.nr + p->scavenging;
	out->stacks_scavenged = stacks.scavenged;
	pthread_mutex_unlock(&stacks.lock);
}

static void stacks_fork(enum xf__fork_phase phase)
{
	xf__fork_mutex(&stacks.lock, phase);
}

XF_HOOK(stacks_hook) = {
    .module = "sched/stack", .fork_order = XF_FORK_ORDER_STACKS, .fork = stacks_fork};

void xf__stack_keep(const struct xf__stack *s)
{
	const char *p = s->base;

	/* Out of the list of slabs to unmap at shutdown: leaked, in use. */
	for (struct slab **link = &stacks.slabs; *link; link = &(*link)->next) {
		struct slab *slab = *link;

		if (p >= (char *)slab->base && p < (char *)slab->base + slab->len) {
			*link = slab->next;
			if (stacks.carving == slab)
				stacks.carving = NULL;
			free(slab);
			return;
		}
	}
}

void xf__stacks_release(void)
{
	pthread_mutex_lock(&stacks.lock);
	while (stacks.slabs) {
		struct slab *s = stacks.slabs;
		stacks.slabs = s->next;
		/* Only its carved stacks were registered; ids start at 1. */
		for (unsigned i = 0; i < XF_SLAB_STACKS; i++)
			if (s->valgrind_ids[i])
				XF_VALGRIND_STACK_DEREGISTER(s->valgrind_ids[i]);
		munmap(s->base, s->len);
		free(s);
	}
	for (unsigned k = 0; k < XF_STACK_SIZES; k++) {
		struct stack_pool *p = &stacks.pools[k];
		struct stack_list *lists[] = {&p->warm, &p->aging, &p->cold, &p->spare};

		for (unsigned i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
			/* Stacks of their own mapping go with it; a slab's went
			 * with the slab. */
			for (size_t j = 0; j < lists[i]->nr; j++) {
				struct xf__stack *st = &lists[i]->v[j];

				if (st->region) {
					XF_VALGRIND_STACK_DEREGISTER(st->valgrind_id);
					munmap(st->region, XF_GUARD_SIZE + st->size);
				}
			}
			free(lists[i]->v);
			*lists[i] = (struct stack_list){0};
		}
		p->usable = 0;
	}
	atomic_store_explicit(&stacks.next_scavenge_ns, 0, memory_order_relaxed);
	stacks.made = stacks.scavenged = 0;
	stacks.carve = NULL;
	stacks.carving = NULL;
	stacks.carve_left = 0;
	pthread_mutex_unlock(&stacks.lock);
}

/* --- stack overflow reports --- */

static void say(const char *s, char *buf, size_t *len)
{
	while (*s && *len < 383)
		buf[(*len)++] = *s++;
}

/* How a fault shows a fiber out of stack: a store into its guard region
 * (the address), or the kernel unable to push a signal frame below a stack
 * pointer already in the stack's last frame_reserve bytes - it then sends
 * SIGSEGV with SI_KERNEL and no address (force_sigsegv).  The second is what
 * signals arriving faster than they are handled end in: the preemption
 * handler is SA_NODEFER, so each delivery nests a frame below the last.  A
 * general-protection or stack-segment fault also comes as SI_KERNEL with no
 * address, and user frames may reach into that last stretch: those say so
 * in their trap number, which a failed frame push leaves as it was (so
 * after a recovered GP fault a no-room fault dies unreported, as before). */
#define X86_TRAP_SS 12
#define X86_TRAP_GP 13
enum overflow { NOT_OURS, GUARD_HIT, NO_ROOM_FOR_SIGNAL_FRAME };

static enum overflow overflow_kind(const struct xf_fiber *f, const siginfo_t *si,
				   const ucontext_t *uc)
{
	const char *base = f ? f->stack.base : NULL;
	const char *addr = si->si_addr;
	const char *sp = (const char *)uc->uc_mcontext.gregs[REG_RSP];
	const greg_t trap = uc->uc_mcontext.gregs[REG_TRAPNO];

	if (!base)
		return NOT_OURS;
	if (addr < base && addr >= base - XF_GUARD_SIZE)
		return GUARD_HIT;
	if (si->si_code == SI_KERNEL && trap != X86_TRAP_GP && trap != X86_TRAP_SS &&
	    sp >= base - XF_GUARD_SIZE && sp < base + xf__rt.frame_reserve)
		return NO_ROOM_FOR_SIGNAL_FRAME;
	return NOT_OURS;
}

/* The handler runs with the preemption signal blocked (see the install);
 * whoever had SIGSEGV before gets it as the faulting code had it - a
 * handler that longjmps out would otherwise leave it blocked for good. */
static void restore_preempt_signal(const ucontext_t *uc)
{
	if (!sigismember(&uc->uc_sigmask, XF_PREEMPT_SIGNAL))
		xf__preempt_signal_unblock();
}

/* Handlers of the preemption signal nested on the faulting stack
 * (xf_fiber.handler_nesting, counted by preempt/signal.c) beyond which an
 * overflow is a flood's: one tick in flight at a time nests one or two.
 * Not the soft mask's nesting, which a fiber's own critical sections raise
 * too (xf_preempt_disable; stdio's locks): 8 nested flockfile()s and a
 * deep recursion were blamed on a flood (a reviewer's program). */
#define XF_FLOOD_NESTING 8

static __attribute__((unused)) void overflow_handler(int sig, siginfo_t *si, void *uc)
{
	struct xf__worker *w = xf__this_worker();
	struct xf_fiber *f = w ? w->current : NULL;
	const enum overflow kind = overflow_kind(f, si, uc);
	const uint32_t nesting = f ? f->handler_nesting : 0;

	if (kind != NOT_OURS) {
		/* Only async-signal-safe calls from here on. */
		char buf[384];
		size_t len = 0;

		say("xfiber: fiber ", buf, &len);
		len += xf__fmt_u64(buf + len, f->id);
		say(" overflowed its stack (", buf, &len);
		len += xf__fmt_u64(buf + len, f->stack.size - xf__rt.frame_reserve);
		say(" bytes + ", buf, &len);
		len += xf__fmt_u64(buf + len, xf__rt.frame_reserve);
		say(" reserved for signal frames)", buf, &len);
		/* A flood ends either way: the kernel finds no room for the next
		 * frame, or a handler's own frames reach the guard first. */
		if (kind == NO_ROOM_FOR_SIGNAL_FRAME) {
			say(": no room left for a signal frame (frames too deep, or signals "
			    "arriving faster than they are handled: a flood of SIGURG, the "
			    "preemption signal, nests their frames)",
			    buf, &len);
		} else if (nesting >= XF_FLOOD_NESTING) {
			say(": ", buf, &len);
			len += xf__fmt_u64(buf + len, nesting);
			say(" signal handlers nested on it (signals arriving faster than they are "
			    "handled: a flood of SIGURG, the preemption signal, nests their "
			    "frames)",
			    buf, &len);
		}
		say("; raise xf_attr.stack_size or xf_config.stack_size\n", buf, &len);
		if (write(STDERR_FILENO, buf, len) < 0) {
			/* Nothing more can be done: abort anyway. */
		}
		abort();
	}
	/* Not ours: the application's handler has it, or it dies of it. */
	restore_preempt_signal(uc);
	xf__signal_forward(sig, si, uc);
}

int xf__overflow_handler_install(struct xf__worker *w)
{
#if defined(__SANITIZE_ADDRESS__)
	(void)w; /* ASan reports stack overflows itself and owns SIGSEGV */
	return 0;
#else
	size_t size = XF_ALIGN_UP(64 * 1024 + (size_t)xf__rt.frame_reserve, PAGE);
	stack_t ss, cur;

	/* The application's own alternate stack (worker 0's thread called
	 * xf_init), if it is as large, serves the report as well as ours: kept,
	 * its SA_ONSTACK handlers keep the room they were given.  Replaced by
	 * a 72 KiB one, a handler using 200 KiB of its 1 MiB overflowed it
	 * without a word (a reviewer's program). */
	if (sigaltstack(NULL, &cur) == 0 && !(cur.ss_flags & SS_DISABLE) && cur.ss_size >= size) {
		w->altstack = NULL; /* nothing of ours to remove */
		goto take_handler;
	}
	w->altstack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (w->altstack == MAP_FAILED) {
		w->altstack = NULL;
		return ENOMEM;
	}
	/* The thread's own alternate stack, if it had one (the application's,
	 * on worker 0), comes back at the removal. */
	ss = (stack_t){.ss_sp = w->altstack, .ss_size = size};
	if (sigaltstack(&ss, &w->old_altstack))
		return errno;
take_handler:
	pthread_mutex_lock(&stacks.lock);
	if (!stacks.handler_installed) {
		sigset_t mask;

		/* The preemption signal waits while the report runs: nested on
		 * the alternate stack, a flood of it would overflow that too,
		 * and the process would die without a word. */
		sigemptyset(&mask);
		sigaddset(&mask, XF_PREEMPT_SIGNAL);
		stacks.handler_installed = !xf__signal_take(SIGSEGV, overflow_handler,
							   SA_ONSTACK | SA_NODEFER, &mask);
	}
	pthread_mutex_unlock(&stacks.lock);
	return 0;
#endif
}

void xf__overflow_handler_remove(struct xf__worker *w)
{
	size_t size = XF_ALIGN_UP(64 * 1024 + (size_t)xf__rt.frame_reserve, PAGE);
	stack_t off = {.ss_flags = SS_DISABLE};

	if (!w->altstack)
		return;
	/* The application's alternate stack again, or none if it had none. */
	if (w->old_altstack.ss_flags & SS_DISABLE)
		sigaltstack(&off, NULL);
	else
		sigaltstack(&(stack_t){.ss_sp = w->old_altstack.ss_sp,
				       .ss_size = w->old_altstack.ss_size},
			    NULL);
	munmap(w->altstack, size);
	w->altstack = NULL;
	if (w->id == 0) {
		pthread_mutex_lock(&stacks.lock);
		if (stacks.handler_installed)
			xf__signal_give_back(SIGSEGV);
		stacks.handler_installed = false;
		pthread_mutex_unlock(&stacks.lock);
	}
}
