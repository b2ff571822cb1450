/*
 * hooks.c - the walk over every module's XF_HOOK (hooks.h).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "runtime/hooks.h"

/* The linker's bounds of the section; this library's own, never a
 * program's symbol of the same name. */
extern const struct xf__hook __start_xf_hooks[] __attribute__((visibility("hidden")));
extern const struct xf__hook __stop_xf_hooks[] __attribute__((visibility("hidden")));

#define EXIT_HOOKS_MAX 8

static void (*exit_hooks[EXIT_HOOKS_MAX])(struct xf_fiber *f);
static unsigned nr_exit_hooks;

/* Runs inside fork() (runtime/fork.c): no allocation, no lock; a few
 * hooks, so the order is found by looking for the next one each time. */
void xf__hooks_fork(enum xf__fork_phase phase)
{
	const bool up = phase == XF_FORK_PREPARE;
	unsigned last = up ? 0 : ~0u;

	for (;;) {
		const struct xf__hook *next = NULL;

		for (const struct xf__hook *h = __start_xf_hooks; h < __stop_xf_hooks; h++) {
			if (!h->fork || (up ? h->fork_order <= last : h->fork_order >= last))
				continue;
			if (!next || (up ? h->fork_order < next->fork_order
					 : h->fork_order > next->fork_order))
				next = h;
		}
		if (!next)
			return;
		next->fork(phase);
		last = next->fork_order;
	}
}

static void hooks_gather(void)
{
	unsigned n = 0;

	for (const struct xf__hook *h = __start_xf_hooks; h < __stop_xf_hooks; h++)
		if (h->fiber_exit && n < EXIT_HOOKS_MAX)
			exit_hooks[n++] = h->fiber_exit;
	nr_exit_hooks = n;
}

/* Once per process: the modules linked in never change, and an xf_init
 * that will fail with EBUSY runs beside fibers that exit (a reviewer's
 * init_race leaked their tables while the array was refilled). */
void xf__hooks_init(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, hooks_gather);
}

void xf__hooks_fiber_exit(struct xf_fiber *f)
{
	for (unsigned i = 0; i < nr_exit_hooks; i++)
		exit_hooks[i](f);
}

bool xf__hooks_cancel_wait(struct xf_fiber *f, unsigned kind)
{
	for (const struct xf__hook *h = __start_xf_hooks; h < __stop_xf_hooks; h++) {
		if (h->cancel_wait && h->cancel_wait_kind == kind) {
			h->cancel_wait(f);
			return true;
		}
	}
	return false;
}
