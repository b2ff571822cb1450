/*
 * poll.c - the C library's readiness waits, made from fibers: poll(),
 * ppoll(), select(), pselect(), epoll_wait(), epoll_pwait(), epoll_pwait2().
 *
 * They wait in the kernel on the fiber's worker, holding no lock of the C
 * library, so a fiber in one is marked XF_BLOCKING_AT_WAIT (sync/pthread.c
 * explains the mark): when other fibers wait for the worker, the ticker's
 * next signal cuts the wait short and the handler switches the fiber out
 * right there.  The kernel ends these waits with EINTR whenever a handler
 * runs - SA_RESTART does not apply to them - so the wait is resumed here,
 * for the time left, when the runtime's signal was the only one; an
 * application signal's EINTR is returned as ever.  The worker still sleeps
 * in the kernel for the fiber at most until the ticker's next look, half a
 * slice, each time the fiber runs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>

#include "common/interpose.h"
#include "preempt/preempt.h"
#include "sched/sched.h"

static struct xf_fiber *waiter(void)
{
	struct xf_fiber *f = xf__self();

	return f && !(xf__preempt_word_get() & XF_PREEMPT_NESTING) ? f : NULL;
}

/* Milliseconds left of timeout_ms since start_ns (-1: forever). */
static int ms_left(int timeout_ms, uint64_t start_ns)
{
	uint64_t spent_ms;

	if (timeout_ms < 0)
		return -1;
	spent_ms = (xf__now_ns() - start_ns) / 1000000u;
	return spent_ms >= (uint64_t)timeout_ms ? 0 : timeout_ms - (int)spent_ms;
}

/* Runs call - a readiness wait - as a fiber's wait, again while the
 * runtime's signal alone cut it short; `resume` updates its timeout. */
#define READINESS_WAIT(call, resume)                                                               \
	({                                                                                         \
		struct xf_fiber *f = waiter();                                                     \
		__typeof__(call) result_;                                                          \
		for (;;) {                                                                         \
			uint32_t ticks = f ? f->preempt_signals : 0;                               \
			uint64_t app = xf__signal_app_count();                                     \
			uint8_t prev = f ? f->blocking : 0;                                        \
			if (f)                                                                     \
				__atomic_store_n(&f->blocking, XF_BLOCKING_AT_WAIT,                \
						 __ATOMIC_RELAXED);                                \
			result_ = (call);                                                          \
			if (f)                                                                     \
				__atomic_store_n(&f->blocking, prev, __ATOMIC_RELAXED);            \
			if (result_ >= 0 || errno != EINTR || !xf__eintr_was_ours(ticks, app))    \
				break;                                                             \
			resume;                                                                    \
		}                                                                                  \
		result_;                                                                           \
	})

XF_INTERPOSE(int, poll, (struct pollfd * fds, nfds_t n, int timeout_ms))
{
	uint64_t start = xf__now_ns();
	int left = timeout_ms;

	return READINESS_WAIT(XF_REAL(poll)(fds, n, left), left = ms_left(timeout_ms, start));
}

XF_INTERPOSE(int, epoll_wait, (int epfd, struct epoll_event *ev, int max, int timeout_ms))
{
	uint64_t start = xf__now_ns();
	int left = timeout_ms;

	return READINESS_WAIT(XF_REAL(epoll_wait)(epfd, ev, max, left),
			      left = ms_left(timeout_ms, start));
}

XF_INTERPOSE(int, epoll_pwait,
	     (int epfd, struct epoll_event *ev, int max, int timeout_ms, const sigset_t *mask))
{
	uint64_t start = xf__now_ns();
	int left = timeout_ms;

	return READINESS_WAIT(XF_REAL(epoll_pwait)(epfd, ev, max, left, mask),
			      left = ms_left(timeout_ms, start));
}

/* A relative timespec's time left, for the calls that do not update it. */
static struct timespec ts_left(const struct timespec *timeout, uint64_t start_ns);

XF_INTERPOSE(int, epoll_pwait2,
	     (int epfd, struct epoll_event *ev, int max, const struct timespec *timeout,
	      const sigset_t *mask))
{
	uint64_t start = xf__now_ns();
	struct timespec left, *t = NULL;

	if (timeout) {
		left = *timeout;
		t = &left;
	}
	return READINESS_WAIT(XF_REAL(epoll_pwait2)(epfd, ev, max, t, mask),
			      if (timeout) left = ts_left(timeout, start));
}

static struct timespec ts_left(const struct timespec *timeout, uint64_t start_ns)
{
	uint64_t total = (uint64_t)timeout->tv_sec * 1000000000u + (uint64_t)timeout->tv_nsec;
	uint64_t spent = xf__now_ns() - start_ns, left = spent >= total ? 0 : total - spent;

	return (struct timespec){(time_t)(left / 1000000000u), (long)(left % 1000000000u)};
}

XF_INTERPOSE(int, ppoll,
	     (struct pollfd * fds, nfds_t n, const struct timespec *timeout, const sigset_t *mask))
{
	uint64_t start = xf__now_ns();
	struct timespec left, *t = NULL;

	if (timeout) {
		left = *timeout;
		t = &left;
	}
	return READINESS_WAIT(XF_REAL(ppoll)(fds, n, t, mask),
			      if (timeout) left = ts_left(timeout, start));
}

/* select()'s sets as the caller passed them: a cut-short call changed them. */
struct fd_sets {
	fd_set *r, *w, *e;
	fd_set r0, w0, e0;
};

static void sets_keep(struct fd_sets *s, fd_set *r, fd_set *w, fd_set *e)
{
	*s = (struct fd_sets){.r = r, .w = w, .e = e};
	if (r)
		s->r0 = *r;
	if (w)
		s->w0 = *w;
	if (e)
		s->e0 = *e;
}

static void sets_restore(const struct fd_sets *s)
{
	if (s->r)
		*s->r = s->r0;
	if (s->w)
		*s->w = s->w0;
	if (s->e)
		*s->e = s->e0;
}

XF_INTERPOSE(int, pselect,
	     (int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *timeout,
	      const sigset_t *mask))
{
	uint64_t start = xf__now_ns();
	struct timespec left, *t = NULL;
	struct fd_sets sets;

	sets_keep(&sets, r, w, e);
	if (timeout) {
		left = *timeout;
		t = &left;
	}
	return READINESS_WAIT(XF_REAL(pselect)(n, r, w, e, t, mask), {
		if (timeout)
			left = ts_left(timeout, start);
		sets_restore(&sets);
	});
}

XF_INTERPOSE(int, select, (int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *timeout))
{
	uint64_t start = xf__now_ns();
	struct timespec total, left;
	struct fd_sets sets;

	/* Linux writes the time left into *timeout, but not the time the
	 * fiber spent switched out after it: resume from the total. */
	if (timeout)
		total = (struct timespec){timeout->tv_sec, timeout->tv_usec * 1000};
	sets_keep(&sets, r, w, e);
	return READINESS_WAIT(XF_REAL(select)(n, r, w, e, timeout), {
		sets_restore(&sets);
		if (timeout) {
			left = ts_left(&total, start);
			timeout->tv_sec = left.tv_sec;
			timeout->tv_usec = left.tv_nsec / 1000;
		}
	});
}

/* xf_init: every definition replaced here found once, in advance (and this
 * file linked in from the static library). */
void xf__poll_interpose_resolve(void)
{
	(void)XF_REAL(poll);
	(void)XF_REAL(epoll_wait);
	(void)XF_REAL(epoll_pwait);
	(void)XF_REAL(ppoll);
	(void)XF_REAL(pselect);
	(void)XF_REAL(select);
}
