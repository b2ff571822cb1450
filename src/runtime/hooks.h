/*
 * hooks.h - what a module asks of the runtime's life, registered where the
 * module is: one XF_HOOK per module, gathered by the linker into the
 * section xf_hooks (as the xfiber command's XF_COMMAND), walked by
 * runtime/.  No list of modules is kept by hand: a module linked in is a
 * module whose hooks run.
 *
 *   fork        around fork(): PREPARE takes the module's locks, PARENT
 *               releases them, CHILD makes them new (runtime/fork.c).
 *               Modules take their locks in ascending fork_order and
 *               release them in descending, so that two never wait on
 *               each other.
 *   fiber_exit  a fiber ends (or the first fiber, at xf_shutdown): what
 *               the module kept for it goes.
 *   cancel_wait xf_cancel of a fiber in a wait of kind cancel_wait_kind,
 *               which the module holds in a queue of its own, with no wait
 *               queue lock to find it by: the module ends it
 *               (sched/cancel.c).
 *
 * The C library calls a module replaces are resolved by xf_init calling
 * each module's resolver by name (runtime/runtime.c): that reference is
 * what links the module's replacements in from libxfiber.a even when only
 * a library later on the link line calls them, which a section walk would
 * not do.
 *
 * Lowest of the private headers: it includes none of them.
 */
#ifndef XF_RUNTIME_HOOKS_H
#define XF_RUNTIME_HOOKS_H

#include <pthread.h>
#include <stdbool.h>

#pragma GCC visibility push(hidden)

enum xf__fork_phase { XF_FORK_PREPARE, XF_FORK_PARENT, XF_FORK_CHILD };

struct xf_fiber;

struct xf__hook {
	const char *module; /* "sched/stack", for debuggers */
	unsigned fork_order;
	void (*fork)(enum xf__fork_phase phase);
	void (*fiber_exit)(struct xf_fiber *f);
	unsigned cancel_wait_kind; /* an XF_WAIT_ON_* (sched.h); 0: none */
	void (*cancel_wait)(struct xf_fiber *f);
};

#define XF_HOOK(var)                                                                               \
	static const struct xf__hook var                                                           \
	    __attribute__((used, section("xf_hooks"), aligned(sizeof(void *))))

/* Fork orders of the modules with locks, in the order prepare takes them. */
enum {
	XF_FORK_ORDER_SAFEPOINTS = 10,
	XF_FORK_ORDER_SIGNALS = 20,
	XF_FORK_ORDER_STACKS = 30,
	XF_FORK_ORDER_ARENA = 40,
	XF_FORK_ORDER_BLOCKING = 50,
	XF_FORK_ORDER_TIMERS = 60,
};

/* The usual fork hook body: m taken, released, or made new. */
static inline void xf__fork_mutex(pthread_mutex_t *m, enum xf__fork_phase phase)
{
	if (phase == XF_FORK_PREPARE)
		pthread_mutex_lock(m);
	else if (phase == XF_FORK_PARENT)
		pthread_mutex_unlock(m);
	else
		pthread_mutex_init(m, NULL);
}

/* runtime/hooks.c: every module's fork hook for phase, in its order. */
void xf__hooks_fork(enum xf__fork_phase phase);

/* Every module's fiber_exit hook; gathered once per process, at the first
 * xf_init, into a short array (a fiber's exit is on the spawn path). */
void xf__hooks_fiber_exit(struct xf_fiber *f);
void xf__hooks_init(void);

/* The cancel_wait hook of the module whose waits are of this kind, called
 * for f: whether there was one.  Cancelling is rare: a walk of the
 * section. */
bool xf__hooks_cancel_wait(struct xf_fiber *f, unsigned kind);

#pragma GCC visibility pop

#endif
