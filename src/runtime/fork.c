/*
 * fork.c - fork() while the runtime runs, from a fiber or any thread.
 *
 * The runtime's locks - the lifecycle mutex, the safe-point table's, the
 * signal dispositions', the stack and fiber pools', the blocking pool's,
 * every worker's timer lock - are taken in this order before the fork (pthread_atfork's
 * prepare), so that the child never inherits one held by a thread that is
 * gone, and released after it in the parent and made new in the child,
 * whose runtime then keeps only the forking fiber (runtime/runtime.c,
 * fork_child).
 *
 * The handlers run inside the C library's fork() with its own atfork lock
 * held, so they run in xf_nopreempt_text with the soft mask raised: a
 * fiber preempted in one would leave that lock to another fiber of its
 * thread.
 */
#include <pthread.h>

#include "io/io.h"
#include "preempt/preempt.h"
#include "sched/sched.h"
#include "runtime/hooks.h"
#include "runtime/runtime.h"

#define FORK_TEXT __attribute__((section("xf_nopreempt_text")))

static bool took; /* prepare found the runtime running: the others act */

static void timer_locks(enum xf__fork_phase phase)
{
	for (unsigned i = 0; i < xf__rt.nr_workers; i++) {
		_Atomic uint32_t *l = &xf__rt.workers[i].timer_lock;

		if (phase == XF_FORK_PREPARE) {
			while (atomic_exchange_explicit(l, 1, memory_order_acquire))
				__builtin_ia32_pause();
		} else {
			atomic_store_explicit(l, 0, memory_order_release);
		}
	}
}

static FORK_TEXT void prepare(void)
{
	xf__preempt_disable();
	xf__runtime_fork(XF_FORK_PREPARE);
	took = atomic_load(&xf__rt.running);
	if (!took) {
		xf__runtime_fork(XF_FORK_PARENT);
		return;
	}
	xf__hooks_fork(XF_FORK_PREPARE); /* every module's, in its order */
	timer_locks(XF_FORK_PREPARE);
}

static FORK_TEXT void after(enum xf__fork_phase phase)
{
	if (took) {
		timer_locks(phase);
		xf__hooks_fork(phase); /* in the reverse order */
		xf__runtime_fork(phase);
	}
	/* Not yet: a preemption taken here would happen inside fork(). */
	xf__preempt_enable_no_resched();
}

static FORK_TEXT void parent(void)
{
	after(XF_FORK_PARENT);
}

static FORK_TEXT void child(void)
{
	after(XF_FORK_CHILD);
}

static void register_handlers(void)
{
	pthread_atfork(prepare, parent, child);
}

void xf__fork_handlers_register(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, register_handlers);
}
