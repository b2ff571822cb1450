/*
 * stack.c - fiber stacks: mmap'd, guarded, committed lazily, reused.
 *
 * Stacks of the default size are carved from slabs of XF_SLAB_STACKS, so
 * 100,000 fibers need a few thousand mappings, not 100,000: Linux allows
 * 65,530 per process by default.  The guard below each stack is installed
 * with MADV_GUARD_INSTALL (Linux 6.13+), which marks page-table entries and
 * splits no mapping; older kernels get mprotect(PROT_NONE), which splits one.
 * Pages are committed only when touched, so a parked fiber costs the pages
 * its frames reached.
 *
 * Each stack is `stack_size` for user frames plus `frame_reserve` for one
 * kernel signal frame on top (AT_MINSIGSTKSZ rounded up: ~3.4 KB, ~12 KB
 * once AMX is in use), since signal handlers run on the fiber's stack.
 *
 * Freed stacks go to the worker's cache (XF_STACK_CACHE), then to a global
 * pool with their pages given back (MADV_DONTNEED).
 *
 * A fault in a guard region, or a signal frame the kernel could not push
 * for want of room, is reported by a SIGSEGV handler running on a
 * per-worker alternate stack: which fiber, which stack size, then abort.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "common/fmt.h"
#include "preempt/preempt.h"
#include "sched/sched.h"

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

#define XF_SLAB_STACKS 16
#define PAGE	       4096u

struct slab {
	struct slab *next;
	void *base;
	size_t len;
};

static struct {
	pthread_mutex_t lock;
	struct slab *slabs; /* every slab, for release at shutdown */
	char *carve;	    /* next unused slot in the newest slab */
	unsigned carve_left;
	struct xf__stack *pool; /* returned default-size stacks */
	size_t pool_nr, pool_cap;
	bool handler_installed;
} stacks = {.lock = PTHREAD_MUTEX_INITIALIZER};

static size_t usable_size(size_t stack_size)
{
	return XF_ALIGN_UP(stack_size + xf__rt.frame_reserve, PAGE);
}

static int guard(void *lo)
{
	if (madvise(lo, XF_GUARD_SIZE, MADV_GUARD_INSTALL) == 0)
		return 0;
	return mprotect(lo, XF_GUARD_SIZE, PROT_NONE) ? errno : 0;
}

/* One stack of any size in a mapping of its own. */
static int stack_map_single(size_t usable, struct xf__stack *out)
{
	size_t len = XF_GUARD_SIZE + usable;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
	int err;

	if (p == MAP_FAILED)
		return ENOMEM;
	err = guard(p);
	if (err) {
		munmap(p, len);
		return err == ENOMEM ? ENOMEM : EAGAIN;
	}
	*out = (struct xf__stack){.base = p + XF_GUARD_SIZE, .size = usable, .region = p};
	return 0;
}

/* A default-size stack from the pool or a slab; called with the lock held. */
static int stack_from_slab(size_t usable, struct xf__stack *out)
{
	const size_t slot = XF_GUARD_SIZE + usable;

	if (stacks.pool_nr) {
		*out = stacks.pool[--stacks.pool_nr];
		return 0;
	}
	if (!stacks.carve_left) {
		struct slab *s = malloc(sizeof(*s));
		void *p;

		if (!s)
			return ENOMEM;
		p = mmap(NULL, slot * XF_SLAB_STACKS, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
		if (p == MAP_FAILED) {
			free(s);
			return ENOMEM;
		}
		*s = (struct slab){.next = stacks.slabs, .base = p, .len = slot * XF_SLAB_STACKS};
		stacks.slabs = s;
		stacks.carve = p;
		stacks.carve_left = XF_SLAB_STACKS;
	}
	if (guard(stacks.carve))
		return ENOMEM;
	*out = (struct xf__stack){
	    .base = stacks.carve + XF_GUARD_SIZE, .size = usable, .region = NULL};
	stacks.carve += slot;
	stacks.carve_left--;
	return 0;
}

int xf__stack_get(struct xf__worker *w, size_t size, struct xf__stack *out)
{
	const size_t usable = usable_size(size);
	int err;

	if (size != xf__rt.stack_size)
		return stack_map_single(usable, out);
	if (w && w->stack_cache_nr) {
		*out = w->stack_cache[--w->stack_cache_nr];
		return 0;
	}
	pthread_mutex_lock(&stacks.lock);
	err = stack_from_slab(usable, out);
	pthread_mutex_unlock(&stacks.lock);
	return err;
}

void xf__stack_put(struct xf__worker *w, struct xf__stack *s)
{
	if (!s->base)
		return;
	if (s->region) {
		munmap(s->region, XF_GUARD_SIZE + s->size);
	} else if (w && w->stack_cache_nr < XF_STACK_CACHE) {
		w->stack_cache[w->stack_cache_nr++] = *s;
	} else {
		/* Past the cache: keep the address space, give the memory back. */
		madvise(s->base, s->size, MADV_DONTNEED);
		pthread_mutex_lock(&stacks.lock);
		if (stacks.pool_nr == stacks.pool_cap) {
			size_t cap = stacks.pool_cap ? 2 * stacks.pool_cap : 256;
			struct xf__stack *p = realloc(stacks.pool, cap * sizeof(*p));
			if (p) {
				stacks.pool = p;
				stacks.pool_cap = cap;
			}
		}
		/* If the pool cannot grow the stack is only leaked until
		 * shutdown, when its slab is unmapped. */
		if (stacks.pool_nr < stacks.pool_cap)
			stacks.pool[stacks.pool_nr++] = *s;
		pthread_mutex_unlock(&stacks.lock);
	}
	s->base = NULL;
}

void xf__stacks_fork(enum xf__fork_phase phase)
{
	xf__fork_mutex(&stacks.lock, phase);
}

void xf__stack_keep(const struct xf__stack *s)
{
	const char *p = s->base;

	/* Out of the list of slabs to unmap at shutdown: leaked, in use. */
	for (struct slab **link = &stacks.slabs; *link; link = &(*link)->next) {
		struct slab *slab = *link;

		if (p >= (char *)slab->base && p < (char *)slab->base + slab->len) {
			*link = slab->next;
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
		munmap(s->base, s->len);
		free(s);
	}
	free(stacks.pool);
	stacks.pool = NULL;
	stacks.pool_nr = stacks.pool_cap = 0;
	stacks.carve = NULL;
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

static __attribute__((unused)) void overflow_handler(int sig, siginfo_t *si, void *uc)
{
	struct xf__worker *w = xf__this_worker();
	struct xf_fiber *f = w ? w->current : NULL;
	const enum overflow kind = overflow_kind(f, si, uc);

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
		if (kind == NO_ROOM_FOR_SIGNAL_FRAME)
			say(": no room left for a signal frame (frames too deep, or signals "
			    "arriving faster than they are handled: a flood of SIGURG, the "
			    "preemption signal, nests their frames)",
			    buf, &len);
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
	stack_t ss;

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
