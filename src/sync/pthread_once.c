/*
 * pthread_once.c - once-objects and C++ function-local statics whose
 * initialisation a fiber waits out (the rule: sync/pthread.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "common/interpose.h"
#include "sync/pthread_wait.h"

/* --- once-objects --- */

/* glibc's once word: bit 0 while the routine runs, bit 1 once it has run
 * (the fork generation above them). */
#define ONCE_IN_PROGRESS 1
#define ONCE_DONE	 2

/* Whoever runs the routine - a fiber of this worker or not - is waited for
 * as a fiber: no owner is recorded to tell. */
static bool once_running(struct xf_fiber *f, const void *lock)
{
	int v = __atomic_load_n((const int *)lock, __ATOMIC_ACQUIRE);

	(void)f;
	return (v & (ONCE_IN_PROGRESS | ONCE_DONE)) == ONCE_IN_PROGRESS;
}

/* The routine runs as the program's own code, unmarked. */
static void once_routine(void)
{
	struct xf_fiber *f = xf__self();
	void (*init)(void) = f->once_init;
	uint8_t prev = mark(f, XF_BLOCKING_NONE);

	xf__cxx_once_set(xf__this_worker(), f->once_passed); /* on this thread */
	init();
	unmark(xf__self(), prev); /* the same fiber, perhaps on another worker */
}

XF_INTERPOSE(int, pthread_once, (pthread_once_t * once, void (*init)(void)))
{
	struct xf_fiber *f = xf__self_may_wait();
	void (*outer)(void);
	int err;

	void *passed[2], *outer_passed[2];

	if (!f)
		return XF_REAL(pthread_once)(once, init);
	/* Before any switch: std::call_once set them on this thread (cxx.c). */
	xf__cxx_once_get(xf__this_worker(), passed);
	wait_out(f, once_running, once, 0);
	outer = f->once_init; /* a routine that calls pthread_once itself */
	memcpy(outer_passed, f->once_passed, sizeof(passed));
	f->once_init = init;
	memcpy(f->once_passed, passed, sizeof(passed));
	err = BLOCKING(f, XF_BLOCKING_AT_WAIT, XF_REAL(pthread_once)(once, once_routine));
	f->once_init = outer;
	memcpy(f->once_passed, outer_passed, sizeof(passed));
	return err;
}

/* --- C++ function-local statics: libstdc++'s guard --- */

/* libstdc++'s guard word (guard.cc, with futexes): byte 0 set once the
 * object is built, bit 8 while a thread builds it. */
#define GUARD_DONE    1
#define GUARD_PENDING 0x100

static bool guard_building(struct xf_fiber *f, const void *lock)
{
	int v = __atomic_load_n((const int *)lock, __ATOMIC_ACQUIRE);

	(void)f;
	return (v & (GUARD_DONE | GUARD_PENDING)) == GUARD_PENDING;
}

/* The Itanium C++ ABI's guard acquisition; the initialiser itself runs
 * after it returns, in the program's code. */
__attribute__((visibility("default"))) int __cxa_guard_acquire(uint64_t *guard);
static __typeof__(__cxa_guard_acquire) *xf__real___cxa_guard_acquire;

int __cxa_guard_acquire(uint64_t *guard)
{
	struct xf_fiber *f = xf__self_may_wait();

	if (f)
		wait_out(f, guard_building, guard, 0);
	return BLOCKING(f, XF_BLOCKING_AT_WAIT, XF_REAL(__cxa_guard_acquire)(guard));
}

/* xf_init, through xf__pthread_interpose_resolve: every definition replaced
 * here found once, in advance (and this file linked in from the static
 * library). */
void xf__pthread_once_resolve(void)
{
	(void)XF_REAL(pthread_once);
}
