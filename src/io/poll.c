/*
 * poll.c - the C library's readiness waits, made from fibers: poll(),
 * ppoll(), select(), pselect(), epoll_wait(), epoll_pwait(), epoll_pwait2().
 *
 * Made from a fiber, they wait as the fiber's own I/O calls do, through the
 * poller (io/ops.c): poll, ppoll and the selects are xf_poll, and an epoll
 * wait is a wait for its epoll descriptor to become readable, then a look
 * that does not wait.  Like any fiber wait, a signal to the worker's thread
 * does not end them.
 *
 * Given a signal mask to wait under (ppoll, pselect, epoll_pwait with a
 * mask), or with preemption disabled, they are the C library's calls,
 * which wait in the kernel on the fiber's worker holding no lock of the C
 * library - so a fiber in one is marked XF_BLOCKING_AT_WAIT (sync/pthread.c
 * explains the mark): when other fibers wait for the worker, the ticker's
 * next signal cuts the wait short and the handler switches the fiber out
 * right there.  The kernel ends these waits with EINTR whenever a handler
 * runs - SA_RESTART does not apply to them - so the wait is resumed here,
 * for the time left, when the runtime's signal was the only one; an
 * application signal's EINTR is returned as ever.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>

#include "common/interpose.h"
#include "io/io.h"
#include "preempt/preempt.h"
#include "sched/sched.h"

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
		struct xf_fiber *f = xf__self_may_wait();                                                     \
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
			if (result_ >= 0 || xf__errno_get() != EINTR || !xf__eintr_was_ours(ticks, app))    \
				break;                                                             \
			resume;                                                                    \
		}                                                                                  \
		result_;                                                                           \
	})

/* Milliseconds in a relative timespec, rounded up (-1 for none). */
static int ts_ms(const struct timespec *ts)
{
	uint64_t ms;

	if (!ts)
		return -1;
	ms = ((uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec + 999999) / 1000000u;
	return ms > INT32_MAX ? INT32_MAX : (int)ms;
}

XF_INTERPOSE(int, epoll_wait, (int epfd, struct epoll_event *ev, int max, int timeout_ms));

/* An epoll wait as a fiber: for the epoll descriptor, then a look. */
static int epoll_as_fiber(int epfd, struct epoll_event *ev, int max, int timeout_ms)
{
	int err, r;

	if (timeout_ms == 0)
		return XF_REAL(epoll_wait)(epfd, ev, max, 0);
	for (;;) {
		err = xf_fd_wait(epfd, POLLIN, timeout_ms > 0 ? (uint64_t)timeout_ms * 1000000u : 0);
		if (err == ETIMEDOUT)
			return 0;
		if (err) {
			xf__errno_set(err);
			return -1;
		}
		r = XF_REAL(epoll_wait)(epfd, ev, max, 0);
		if (r != 0)
			return r;
		/* Readable for another reader of the set first: wait again. */
	}
}

XF_INTERPOSE(int, poll, (struct pollfd * fds, nfds_t n, int timeout_ms));

/* A look that does not wait.  The kernel still fails even that with EINTR
 * when a signal - a tick - arrives during the call (do_poll checks
 * signal_pending before it honours the zero timeout): look again, as a
 * look has nothing to resume. */
int xf__poll_now(struct pollfd *fds, nfds_t n)
{
	int r;

	do
		r = XF_REAL(poll)(fds, n, 0);
	while (r < 0 && xf__errno_get() == EINTR);
	return r;
}

XF_INTERPOSE(int, poll, (struct pollfd * fds, nfds_t n, int timeout_ms))
{
	uint64_t start = xf__now_ns();
	int left = timeout_ms;

	if (xf__self_may_wait())
		return xf_poll(fds, n, timeout_ms);
	return READINESS_WAIT(XF_REAL(poll)(fds, n, left), left = ms_left(timeout_ms, start));
}

XF_INTERPOSE(int, epoll_wait, (int epfd, struct epoll_event *ev, int max, int timeout_ms))
{
	uint64_t start = xf__now_ns();
	int left = timeout_ms;

	if (xf__self_may_wait())
		return epoll_as_fiber(epfd, ev, max, timeout_ms);
	return READINESS_WAIT(XF_REAL(epoll_wait)(epfd, ev, max, left),
			      left = ms_left(timeout_ms, start));
}

XF_INTERPOSE(int, epoll_pwait,
	     (int epfd, struct epoll_event *ev, int max, int timeout_ms, const sigset_t *mask))
{
	uint64_t start = xf__now_ns();
	int left = timeout_ms;

	if (!mask && xf__self_may_wait())
		return epoll_as_fiber(epfd, ev, max, timeout_ms);
	return READINESS_WAIT(XF_REAL(epoll_pwait)(epfd, ev, max, left, mask),
			      left = ms_left(timeout_ms, start));
}

/* A timeout read here, before the kernel would, refused as it refuses it:
 * EFAULT for an address in the page at 0, EINVAL for a negative time or
 * nanoseconds past a second - a fiber's wait would otherwise take the one
 * for an endless wait and the other for a longer one. */
static bool timeout_bad(const struct timespec *timeout)
{
	if (!timeout)
		return false;
	if (xf__user_ptr_bad(timeout))
		return xf__errno_set(EFAULT), true;
	if (!xf__timespec_valid(timeout))
		return xf__errno_set(EINVAL), true;
	return false;
}

/* A relative timespec's time left, for the calls that do not update it. */
static struct timespec ts_left(const struct timespec *timeout, uint64_t start_ns);

XF_INTERPOSE(int, epoll_pwait2,
	     (int epfd, struct epoll_event *ev, int max, const struct timespec *timeout,
	      const sigset_t *mask))
{
	uint64_t start = xf__now_ns();
	struct timespec left, *t = NULL;

	if (timeout_bad(timeout))
		return -1;
	if (!mask && xf__self_may_wait())
		return epoll_as_fiber(epfd, ev, max, ts_ms(timeout));
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

	if (timeout_bad(timeout))
		return -1;
	if (!mask && xf__self_may_wait())
		return xf_poll(fds, n, ts_ms(timeout));
	if (timeout) {
		left = *timeout;
		t = &left;
	}
	return READINESS_WAIT(XF_REAL(ppoll)(fds, n, t, mask),
			      if (timeout) left = ts_left(timeout, start));
}

/* The bytes of a set that the kernel reads and writes back for n: the
 * longs that hold bits 0 to n - 1 (none for n <= 0), which may run past
 * FD_SETSIZE - the kernel's only bound is the descriptor table. */
static size_t set_bytes(int n)
{
	return n > 0 ? ((size_t)n + NFDBITS - 1) / NFDBITS * sizeof(fd_mask) : 0;
}

/* FD_ISSET and FD_SET without their FD_SETSIZE bound (fortified: abort).
 * Unsigned words: fd_mask is a signed long, and 1 << 63 in it is
 * undefined (UBSan's complaint at descriptor 63). */
static bool bit_get(const fd_set *set, int fd)
{
	return ((const unsigned long *)set)[fd / NFDBITS] >> (fd % NFDBITS) & 1;
}

static void bit_set(fd_set *set, int fd)
{
	((unsigned long *)set)[fd / NFDBITS] |= 1ul << (fd % NFDBITS);
}

/* select() as xf_poll: the sets become pollfds and back; the number of
 * bits set, as select counts. */
static int select_as_fiber(int n, fd_set *r, fd_set *w, fd_set *e, int timeout_ms)
{
	const size_t bytes = set_bytes(n);
	struct pollfd *p;
	nfds_t np = 0;
	int ready, count = 0;

	if (n < 0) {
		xf__errno_set(EINVAL);
		return -1;
	}
	p = calloc((size_t)n ? (size_t)n : 1, sizeof(*p));
	if (!p) {
		xf__errno_set(ENOMEM);
		return -1;
	}
	for (int fd = 0; fd < n; fd++) {
		short ev = (short)((r && bit_get(r, fd) ? POLLIN : 0) |
				   (w && bit_get(w, fd) ? POLLOUT : 0) |
				   (e && bit_get(e, fd) ? POLLPRI : 0));

		if (ev)
			p[np++] = (struct pollfd){.fd = fd, .events = ev};
	}
	ready = xf_poll(p, np, timeout_ms);
	if (ready < 0) {
		free(p);
		return -1;
	}
	for (nfds_t i = 0; i < np; i++) {
		if (p[i].revents & POLLNVAL) {
			free(p);
			xf__errno_set(EBADF);
			return -1;
		}
	}
	/* As the kernel: the words that hold bits below n, and no more. */
	if (r)
		memset(r, 0, bytes);
	if (w)
		memset(w, 0, bytes);
	if (e)
		memset(e, 0, bytes);
	for (nfds_t i = 0; i < np; i++) {
		short rv = p[i].revents;

		if (r && (p[i].events & POLLIN) && (rv & (POLLIN | POLLHUP | POLLERR)))
			bit_set(r, p[i].fd), count++;
		if (w && (p[i].events & POLLOUT) && (rv & (POLLOUT | POLLERR)))
			bit_set(w, p[i].fd), count++;
		if (e && (p[i].events & POLLPRI) && (rv & POLLPRI))
			bit_set(e, p[i].fd), count++;
	}
	free(p);
	return count;
}

/* select()'s sets as the caller passed them: a cut-short call changed them.
 * Only the bytes the kernel reads and writes (set_bytes): a set sized for n
 * - libevent allocates them so - may end there. */
struct fd_sets {
	fd_set *r, *w, *e;
	size_t bytes;
	unsigned char *saved; /* r, w, e: bytes each */
	unsigned char saved_here[3 * sizeof(fd_set)];
};

/* select's timeout as the kernel takes it (kern_select): microseconds
 * past a second carry into the seconds, and what is left must be a valid
 * time - so {0, -1} is EINVAL and {0, 1500000} a second and a half. */
static struct timespec tv_as_ts(const struct timeval *tv)
{
	return (struct timespec){tv->tv_sec + tv->tv_usec / 1000000, tv->tv_usec % 1000000 * 1000};
}

/* Whether select's arguments, read here before the kernel reads them, are
 * refused, in the kernel's order: the timeout (timeout_bad; tv for
 * select's timeval, else ts), then the sets when it would read them (n > 0)
 * and they lie in the page at 0 (EFAULT). */
static bool select_args_bad(int n, fd_set *r, fd_set *w, fd_set *e, const struct timeval *tv,
			    const struct timespec *ts)
{
	struct timespec converted;

	if (tv && xf__user_ptr_bad(tv))
		return xf__errno_set(EFAULT), true;
	if (tv) {
		converted = tv_as_ts(tv);
		ts = &converted;
	}
	if (timeout_bad(ts))
		return true;
	if (n > 0 && ((r && xf__user_ptr_bad(r)) || (w && xf__user_ptr_bad(w)) ||
		      (e && xf__user_ptr_bad(e)))) {
		xf__errno_set(EFAULT);
		return true;
	}
	return false;
}

/* Kept only when the kernel may change them: n > 0.  ENOMEM for sets past
 * FD_SETSIZE that no memory can keep. */
static int sets_keep(struct fd_sets *s, int n, fd_set *r, fd_set *w, fd_set *e)
{
	fd_set *sets[3] = {r, w, e};

	*s = (struct fd_sets){.r = r, .w = w, .e = e, .bytes = set_bytes(n)};
	s->saved = s->bytes <= sizeof(fd_set) ? s->saved_here : malloc(3 * s->bytes);
	if (!s->saved) {
		xf__errno_set(ENOMEM);
		return -1;
	}
	for (int i = 0; i < 3; i++)
		if (sets[i])
			memcpy(s->saved + i * s->bytes, sets[i], s->bytes);
	return 0;
}

static void sets_restore(const struct fd_sets *s)
{
	fd_set *sets[3] = {s->r, s->w, s->e};

	for (int i = 0; i < 3; i++)
		if (sets[i])
			memcpy(sets[i], s->saved + i * s->bytes, s->bytes);
}

static int sets_done(struct fd_sets *s, int result)
{
	if (s->saved != s->saved_here)
		free(s->saved);
	return result;
}

XF_INTERPOSE(int, pselect,
	     (int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *timeout,
	      const sigset_t *mask))
{
	uint64_t start = xf__now_ns();
	struct timespec left, *t = NULL;
	struct fd_sets sets;

	if (select_args_bad(n, r, w, e, NULL, timeout))
		return -1;
	if (!mask && xf__self_may_wait())
		return select_as_fiber(n, r, w, e, ts_ms(timeout));
	if (sets_keep(&sets, n, r, w, e))
		return -1;
	if (timeout) {
		left = *timeout;
		t = &left;
	}
	return sets_done(&sets, READINESS_WAIT(XF_REAL(pselect)(n, r, w, e, t, mask), {
		if (timeout)
			left = ts_left(timeout, start);
		sets_restore(&sets);
	}));
}

XF_INTERPOSE(int, select, (int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *timeout))
{
	uint64_t start = xf__now_ns();
	struct timespec total, left;
	struct fd_sets sets;

	if (select_args_bad(n, r, w, e, timeout, NULL))
		return -1;
	if (xf__self_may_wait()) {
		struct timespec ts, *tp = NULL;
		int ready;

		if (timeout) {
			ts = tv_as_ts(timeout);
			tp = &ts;
		}
		ready = select_as_fiber(n, r, w, e, ts_ms(tp));
		if (ready >= 0 && timeout) { /* Linux writes the time left */
			left = ts_left(&ts, start);
			timeout->tv_sec = left.tv_sec;
			timeout->tv_usec = left.tv_nsec / 1000;
		}
		return ready;
	}
	/* Linux writes the time left into *timeout, but not the time the
	 * fiber spent switched out after it: resume from the total. */
	if (timeout)
		total = (struct timespec){timeout->tv_sec, timeout->tv_usec * 1000};
	if (sets_keep(&sets, n, r, w, e))
		return -1;
	return sets_done(&sets, READINESS_WAIT(XF_REAL(select)(n, r, w, e, timeout), {
		sets_restore(&sets);
		if (timeout) {
			left = ts_left(&total, start);
			timeout->tv_sec = left.tv_sec;
			timeout->tv_usec = left.tv_nsec / 1000;
		}
	}));
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
