/*
 * sleep.c - the C library's sleeps, made from fibers.
 *
 * sleep(), usleep(), nanosleep() and clock_nanosleep() called from a fiber
 * sleep on the runtime's timers (xf_sleep_ns): the fiber waits, the worker
 * runs the others, and no preemption signal can end the sleep early - the
 * kernel ends a sleep with EINTR whenever a handler runs, SA_RESTART or
 * not.  A sleep ends early only where the C library's would for a reason of
 * the application's: never, here, since its signals interrupt the thread
 * that runs the fiber, not the fiber.
 *
 * Outside a fiber, and in a fiber that disabled preemption, the C library
 * sleeps; on a worker, a preemption tick may still cut that sleep short,
 * and it is then resumed for the time left (retry_eintr) - unless an
 * application signal arrived too, whose EINTR is the caller's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "common/interpose.h"
#include "preempt/preempt.h"
#include "sched/sched.h"

/* Nanoseconds in ts, UINT64_MAX (forever, for the runtime's timers) past
 * what 64 bits hold - as the kernel clamps such a sleep. */
static uint64_t ts_ns(const struct timespec *ts)
{
	if ((uint64_t)ts->tv_sec >= UINT64_MAX / 1000000000u)
		return UINT64_MAX;
	return (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
}

/* Whether an EINTR the C library returned came from the runtime's own
 * signal alone, given the counts taken before the call. */
bool xf__eintr_was_ours(uint32_t ticks_before, uint64_t app_before)
{
	struct xf_fiber *f = xf__current();

	return f && f->preempt_signals != ticks_before && xf__signal_app_count() == app_before;
}

static void counts(uint32_t *ticks, uint64_t *app)
{
	struct xf_fiber *f = xf__current();

	*ticks = f ? f->preempt_signals : 0;
	*app = xf__signal_app_count();
}

XF_INTERPOSE(int, clock_nanosleep,
	     (clockid_t clk, int flags, const struct timespec *req, struct timespec *rem))
{
	struct xf_fiber *f = xf__self_may_wait();
	struct timespec now, left;
	uint32_t ticks;
	uint64_t app;
	int err;

	if (f && (clk == CLOCK_MONOTONIC || clk == CLOCK_REALTIME || clk == CLOCK_BOOTTIME ||
		  clk == CLOCK_TAI)) {
		if (xf__user_ptr_bad(req))
			return EFAULT; /* as the kernel, not a fault here */
		if (!xf__timespec_valid(req))
			return EINVAL;
		if (!(flags & TIMER_ABSTIME)) {
			xf__sleep_on(ts_ns(req), XF_WAIT_ON_LIBC_SLEEP);
			return 0;
		}
		/* Until the clock reads req: it may be set meanwhile, so look again. */
		while (clock_gettime(clk, &now) == 0 &&
		       (now.tv_sec < req->tv_sec ||
			(now.tv_sec == req->tv_sec && now.tv_nsec < req->tv_nsec))) {
			struct timespec until = {req->tv_sec - now.tv_sec, req->tv_nsec - now.tv_nsec};

			if (until.tv_nsec < 0) {
				until.tv_sec--;
				until.tv_nsec += 1000000000;
			}
			xf__sleep_on(ts_ns(&until), XF_WAIT_ON_LIBC_SLEEP);
		}
		return 0;
	}
	for (;;) {
		counts(&ticks, &app);
		err = XF_REAL(clock_nanosleep)(clk, flags, req, &left);
		if (err != EINTR || !xf__eintr_was_ours(ticks, app))
			break;
		if (!(flags & TIMER_ABSTIME))
			req = &left; /* resumed for what is left */
	}
	if (err == EINTR && rem && !(flags & TIMER_ABSTIME))
		*rem = left;
	return err;
}

XF_INTERPOSE(int, nanosleep, (const struct timespec *req, struct timespec *rem))
{
	int err;

	if (xf__user_ptr_bad(req))
		return xf__errno_set(EFAULT), -1;
	if (!xf__timespec_valid(req))
		return xf__errno_set(EINVAL), -1;
	err = clock_nanosleep(CLOCK_REALTIME, 0, req, rem);
	if (err)
		return xf__errno_set(err), -1;
	return 0;
}

XF_INTERPOSE(int, usleep, (useconds_t us))
{
	struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};

	return nanosleep(&ts, NULL);
}

XF_INTERPOSE(unsigned, sleep, (unsigned seconds))
{
	struct timespec ts = {(time_t)seconds, 0}, rem = {0, 0};

	if (nanosleep(&ts, &rem) == 0)
		return 0;
	/* Interrupted by the application's signal: the seconds left, rounded up. */
	return (unsigned)rem.tv_sec + (rem.tv_nsec > 0);
}

/* xf_init: every definition replaced here found once, in advance (and this
 * file linked in from the static library). */
void xf__sleep_interpose_resolve(void)
{
	(void)XF_REAL(clock_nanosleep);
	(void)XF_REAL(nanosleep);
	(void)XF_REAL(usleep);
	(void)XF_REAL(sleep);
}
