/*
 * pthread.c - pthread, C11, semaphore and C++ waits made from fibers: the
 * rule they keep, and what they share (pthread_wait.h).  The waits are in
 * pthread_mutex.c (mutexes, condition variables, rwlocks), pthread_once.c
 * (once-objects, C++ statics), semaphore.c and thread_waits.c (the rest).
 *
 * A fiber that waits in the kernel puts its worker's thread to sleep, and
 * with it every other fiber that thread could run.  When what it waits for
 * is held by one of those fibers - a pthread mutex, a once-object, a C++
 * static's guard, held by a fiber preempted in the middle - nothing moves
 * again: a preempted fiber resumes only on the thread it was interrupted on
 * (preempt/signal.c).  So these calls are interposed (common/interpose.h),
 * and made from a fiber they keep one rule:
 *
 *   A fiber does not put its worker to sleep in the kernel while other
 *   fibers of that worker are ready to run.  It tries the object (trylock,
 *   trywait, tryjoin) and, while it must wait, lets them run first - a
 *   yield - trying again each time it runs.  A condition variable cannot be
 *   tried: its wait gives the others their turn and returns 0, a spurious
 *   wake-up, which POSIX allows and every correct caller re-checks its
 *   predicate after.  Fibers that only wait for each other's turns would
 *   spin the CPU this way while they wait for something from outside the
 *   worker, so after WAIT_YIELDS rounds without progress a waiter sleeps on
 *   the runtime's timers instead, doubling from WAIT_SLEEP_MIN_NS to
 *   WAIT_SLEEP_MAX_NS.  Progress ends the series: the wait succeeding, or
 *   - for a condition variable - the fiber itself signalling one or
 *   unlocking a mutex, which a fiber that only waits never does.
 *
 *   A fiber alone on its worker waits in the kernel, as a thread would,
 *   marked XF_BLOCKING_AT_WAIT: "holds no lock where it waits in the
 *   kernel", true of every wait here.  When something becomes ready on the
 *   worker meanwhile, the ticker signals it at its next look, and the
 *   preemption handler switches the fiber out right at its futex wait,
 *   although the pc lies in libc, which is otherwise never preempted; the
 *   kernel has rewound the wait for restart (SA_RESTART) and the fiber
 *   issues it again when it resumes.  A timed wait, which the kernel ends
 *   with EINTR instead, is retried by the C library (mutexes, condition
 *   variables) or here (semaphores).
 *
 * Locks the thread owns - recursive, error-checking, robust and priority
 * mutexes, the write side of rwlocks - record a thread id, and glibc
 * decides recursion, EDEADLK and even which kind of unlock to do by
 * comparing it with the caller's: two fibers of one thread would pass for
 * one owner.  So a fiber that finds one held by its own thread but not by
 * itself waits as a fiber until that changes - recursive mutexes are only
 * ever tried, never waited for in the kernel - and a fiber that holds one
 * stays on its thread (XF_FIBER_F_STAY) until it lets go: its unlock must
 * come from the same thread id.  A once-object in progress and a C++ static
 * being built are waited out as a fiber too, whoever runs the routine.
 *
 * pthread_once's routine, unlike the waits, is the program's own code: it
 * runs with the mark taken off (once_routine), so a lock the C library
 * takes inside it is not mistaken for one that is safe to wait at.  C11's
 * mtx_, cnd_, call_once and thrd_join are glibc's pthread calls under other
 * names, and go through the ones here.
 *
 * Outside a fiber, and with preemption disabled, every call is the C
 * library's, untouched.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "runtime/hooks.h"
#include "sync/pthread_wait.h"
#include "sync/sync.h"

#define WAIT_YIELDS	   32		/* yields in a row, then sleeps */
#define WAIT_SLEEP_MIN_NS  (10 * 1000)
#define WAIT_SLEEP_MAX_NS  (1000 * 1000)
#define WAIT_SERIES_GAP_NS (1000 * 1000) /* a round after this long starts anew */

/* A timed wait's yield.  While the others run, its deadline is one of
 * the worker's timers, which the fiber's own wait does not hold: a due
 * timer ends a CPU-bound fiber's slice a quarter into it (the ticker's
 * timer_wakes), so the wait times out then, as a sleep would, not at the
 * slice's end (std::condition_variable::wait_for(2 ms) took 200 ms beside a
 * CPU-bound fiber at 200 ms slices; cxx.timed_beside_spinner).  The timer
 * finds no wait to claim when it fires, and goes before the fiber's next
 * wait could be claimed by it. */
static void yield_until(struct xf_fiber *f, uint64_t deadline_ns)
{
	if (!deadline_ns) {
		xf_yield();
		return;
	}
	xf__timer_arm(xf__this_worker(), f, deadline_ns);
	xf_yield();
	xf__timer_cancel(f);
}

/* One round of a wait as a fiber (pthread_wait.h): a yield, or after
 * WAIT_YIELDS rounds without progress, or with nobody else ready, a sleep
 * doubling from WAIT_SLEEP_MIN_NS to WAIT_SLEEP_MAX_NS. */
int xf__lock_wait_round(struct xf_fiber *f, uint64_t deadline_ns)
{
	uint64_t now = xf__now_ns(), ns;

	if (deadline_ns == XF_DEADLINE_INVALID)
		return EINVAL;
	if (deadline_ns && now >= deadline_ns)
		return ETIMEDOUT;
	if (now - f->poll_last_ns > WAIT_SERIES_GAP_NS)
		f->polls = 0;
	if (f->polls < WAIT_YIELDS && others_ready()) {
		yield_until(f, deadline_ns);
	} else {
		unsigned doublings = f->polls < WAIT_YIELDS ? 0 : (f->polls - WAIT_YIELDS) / 4;

		ns = doublings >= 7 ? WAIT_SLEEP_MAX_NS : WAIT_SLEEP_MIN_NS << doublings;
		if (ns > WAIT_SLEEP_MAX_NS)
			ns = WAIT_SLEEP_MAX_NS;
		if (deadline_ns && ns > deadline_ns - now)
			ns = deadline_ns - now;
		xf__sleep_on(ns, XF_WAIT_ON_LOCK); /* a debugger sees the lock it waits for */
	}
	f->polls++;
	f->poll_last_ns = xf__now_ns();
	return 0;
}

/* CLOCK_MONOTONIC deadline for an absolute time on clock c (pthread_wait.h).
 * Far ones saturate to none: a year-2500 deadline computed in 64-bit
 * nanoseconds overflowed, and the wait timed out at once. */
uint64_t xf__lock_deadline_of(clockid_t c, const struct timespec *abstime)
{
	const int64_t sec_max = INT64_MAX / 1000000000 - 1;
	struct timespec now;
	int64_t sec, left;
	uint64_t mono;

	if (!abstime)
		return 0;
	if (abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000)
		return XF_DEADLINE_INVALID;
	clock_gettime(c, &now);
	if (__builtin_sub_overflow((int64_t)abstime->tv_sec, (int64_t)now.tv_sec, &sec) ||
	    sec < -sec_max)
		return xf__now_ns() + 1; /* long past */
	if (sec > sec_max)
		return 0;
	left = sec * 1000000000 + (abstime->tv_nsec - now.tv_nsec);
	mono = xf__now_ns() + (uint64_t)(left > 0 ? left : 1);
	return mono < XF_DEADLINE_INVALID ? mono : 0;
}

/* A fiber ends: its table of thread-owned locks goes. */
static void pthread_fiber_exit(struct xf_fiber *f)
{
	free(f->owned);
	f->owned = NULL;
	f->owned_nr = f->owned_cap = 0;
}

XF_HOOK(pthread_hook) = {.module = "sync/pthread", .fiber_exit = pthread_fiber_exit};

/* xf_init: every definition replaced in these files found once, in
 * advance (and the files linked in from the static library). */
void xf__pthread_interpose_resolve(void)
{
	xf__pthread_mutex_resolve();
	xf__pthread_once_resolve();
	xf__semaphore_resolve();
	xf__thread_waits_resolve();
}
