/*
 * poller.c - the poller inside the scheduler: one epoll instance for the
 * whole runtime, polled by whoever has nothing better to do.
 *
 * Every descriptor a fiber waits on is registered once, edge-triggered, for
 * input and output (EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLPRI | EPOLLET), with its
 * number and sequence number in the event's data (fd.c keeps the state).
 * Who polls:
 *
 *   - an idle worker, instead of parking on its futex - one at a time (the
 *     owner), the others park as before - for as long as its earliest timer
 *     allows; an eventfd in the set wakes it when work is handed to it
 *     (xf__worker_kick), and the events it collects wake fibers on its own
 *     run queue (xf__wake), from where idle workers take them;
 *   - the ticker, when every worker is busy: a poll that does not wait,
 *     every half slice, so that readiness is noticed within one slice - the
 *     fibers it wakes go to their workers' inboxes, which then want the CPU
 *     and get a preemption tick.
 *
 * One set, not one per worker: any worker can then poll for any fiber, a
 * fiber that moved needs no re-registration, and one epoll_wait collects
 * the events of every connection (28 a call at 64 connections on two
 * workers; docs/io.md).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/probes.h"
#include "io/io.h"

#define POLL_EVENTS   64
#define KICK_TOKEN    UINT64_MAX
#define OWNER_NONE    0
#define OWNER_TICKER  (XF_WORKERS_MAX + 1) /* else 1 + the polling worker's id */

static struct {
	int epfd, evfd;
	_Atomic unsigned owner; /* who sits in epoll_wait */
	bool have_pwait2;
} poller = {.epfd = -1, .evfd = -1};

_Atomic unsigned xf__io_waiters;

int xf__poller_start(void)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = KICK_TOKEN};

	poller.epfd = epoll_create1(EPOLL_CLOEXEC);
	if (poller.epfd < 0)
		return errno;
	poller.evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (poller.evfd < 0 || epoll_ctl(poller.epfd, EPOLL_CTL_ADD, poller.evfd, &ev)) {
		int err = errno;

		xf__poller_stop(false);
		return err;
	}
	poller.have_pwait2 = true;
	atomic_store(&poller.owner, OWNER_NONE);
	return 0;
}

void xf__poller_stop(bool forked)
{
	if (poller.evfd >= 0)
		close(poller.evfd);
	if (poller.epfd >= 0)
		close(poller.epfd);
	poller.evfd = poller.epfd = -1;
	xf__fds_reset(forked);
}

int xf__poller_add(int fd, uint32_t seq)
{
	/* EPOLLPRI: urgent data ends what a short read says (fd.c). */
	struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLPRI | EPOLLET,
				 .data.u64 = (uint64_t)seq << 32 | (uint32_t)fd};

	if (poller.epfd < 0)
		return ECANCELED;
	if (epoll_ctl(poller.epfd, EPOLL_CTL_ADD, fd, &ev) == 0)
		return 0;
	/* Still in the set from before a close the runtime did not see (a
	 * dup of it kept the registration): it gets this sequence number. */
	if (errno == EEXIST && epoll_ctl(poller.epfd, EPOLL_CTL_MOD, fd, &ev) == 0)
		return 0;
	return errno;
}

void xf__poller_del(int fd)
{
	if (poller.epfd >= 0)
		epoll_ctl(poller.epfd, EPOLL_CTL_DEL, fd, NULL);
}

/* Hands every event to its descriptor's entry; counted on w (or, for the
 * ticker, nowhere: xf_stats_get adds xf__rt.ticker_stats). */
static void dispatch(const struct epoll_event *ev, int n, xf_worker_stats *stats)
{
	for (int i = 0; i < n; i++) {
		uint64_t data = ev[i].data.u64;
		struct xf__fd *e;

		if (data == KICK_TOKEN) {
			uint64_t v;

			if (read(poller.evfd, &v, sizeof(v)) < 0) {
				/* drained already */
			}
			continue;
		}
		e = xf__fd_peek((int)(uint32_t)data);
		XF_PROBE2(io__ready, (int)(uint32_t)data, ev[i].events);
		if (e)
			xf__fd_ready(e, (uint32_t)(data >> 32), ev[i].events);
	}
	__atomic_store_n(&stats->poller_calls, stats->poller_calls + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&stats->io_events, stats->io_events + (uint64_t)(n > 0 ? n : 0),
			 __ATOMIC_RELAXED);
}

/* One epoll_wait of up to timeout_ns (0: none; UINT64_MAX: forever). */
static int wait_events(struct epoll_event *ev, uint64_t timeout_ns)
{
	int n;

	if (poller.have_pwait2) {
		struct timespec ts = {(time_t)(timeout_ns / 1000000000u),
				      (long)(timeout_ns % 1000000000u)};

		n = epoll_pwait2(poller.epfd, ev, POLL_EVENTS,
				 timeout_ns == UINT64_MAX ? NULL : &ts, NULL);
		if (n >= 0 || errno != ENOSYS)
			return n;
		poller.have_pwait2 = false; /* a kernel before 5.11 */
	}
	return epoll_wait(poller.epfd, ev, POLL_EVENTS,
			  timeout_ns == UINT64_MAX ? -1 : (int)((timeout_ns + 999999) / 1000000));
}

bool xf__poller_busy(void)
{
	return atomic_load_explicit(&poller.owner, memory_order_relaxed) != OWNER_NONE;
}

bool xf__poller_claim(struct xf__worker *w)
{
	unsigned none = OWNER_NONE;

	return poller.epfd >= 0 && atomic_load_explicit(&xf__io_waiters, memory_order_relaxed) &&
	       atomic_compare_exchange_strong(&poller.owner, &none, w->id + 1);
}

/* The owner w's one wait of up to timeout_ns (0: a look), then the poller
 * goes and the events go to their entries. */
static void take_events(struct xf__worker *w, uint64_t timeout_ns)
{
	struct epoll_event ev[POLL_EVENTS];
	int n = wait_events(ev, timeout_ns);

	atomic_store_explicit(&poller.owner, OWNER_NONE, memory_order_release);
	dispatch(ev, n > 0 ? n : 0, &w->stats);
}

void xf__poller_idle(struct xf__worker *w, uint64_t timeout_ns)
{
	take_events(w, timeout_ns ? timeout_ns : UINT64_MAX);
}

static struct {
	int in_use; /* xf_io_backend */
	char refused[sizeof(((xf_stats *)0)->io_backend_refused)];
} backend = {XF_IO_BACKEND_EPOLL, ""};

void xf__io_backend_set(int in_use, const char *refused)
{
	backend.in_use = in_use;
	snprintf(backend.refused, sizeof(backend.refused), "%s", refused ? refused : "");
}

void xf__io_backend_stats(xf_stats *out)
{
	out->io_backend = (xf_io_backend)backend.in_use;
	memcpy(out->io_backend_refused, backend.refused, sizeof(out->io_backend_refused));
}

int xf__poller_fd(void)
{
	return poller.epfd;
}

void xf__poller_collect(struct xf__worker *w, bool fired)
{
	if (fired)
		take_events(w, 0);
	else
		xf__poller_release();
}

void xf__poller_release(void)
{
	atomic_store_explicit(&poller.owner, OWNER_NONE, memory_order_release);
}

/* A forked child: the epoll set is shared with the parent, whose it is. */
void xf__poller_fork_child(void)
{
	if (poller.epfd < 0)
		return;
	close(poller.evfd);
	close(poller.epfd);
	poller.epfd = poller.evfd = -1;
	xf__fds_reset(true);
	xf__poller_start();
}

void xf__poller_kick(void)
{
	uint64_t one = 1;

	if (write(poller.evfd, &one, sizeof(one)) < 0) {
		/* the counter is full: the poller wakes anyway */
	}
}

bool xf__poller_try(struct xf__worker *w)
{
	struct epoll_event ev[POLL_EVENTS];
	int n;

	if (!xf__poller_claim(w))
		return false;
	n = epoll_wait(poller.epfd, ev, POLL_EVENTS, 0);
	atomic_store_explicit(&poller.owner, OWNER_NONE, memory_order_release);
	dispatch(ev, n > 0 ? n : 0, &w->stats);
	return n > 0;
}

/*
 * Without a ticker (xf_config.cooperative) nothing sets XF_DUE_IO on a busy
 * worker, and fibers that only yield to each other never let it poll: a
 * fiber beside a yield loop waited on its descriptor until the loop ended
 * (a reviewer's program, 2.9 s).  So while fibers wait on descriptors
 * there, the bit stays set - every yield takes C's path, as for timers
 * (sched/timer.c) - and one scheduling point in XF_COOP_IO_POINTS polls.
 */
#define XF_COOP_IO_POINTS 64

void xf__poller_due(struct xf__worker *w)
{
	if (!xf__rt.preempt_enabled) {
		if (atomic_load_explicit(&xf__io_waiters, memory_order_relaxed))
			atomic_fetch_or_explicit(&w->due, XF_DUE_IO, memory_order_relaxed);
		if (++w->coop_io_points % XF_COOP_IO_POINTS)
			return;
	}
	xf__poller_try(w);
}

/* The ticker, when every worker is busy: whether events wait, without
 * taking them.  The worker it then preempts takes them (preempt/signal.c)
 * onto its own queue: the ticker never takes a descriptor's lock, which a
 * worker sharing its CPU may hold while the kernel runs the ticker. */
bool xf__poller_tick(void)
{
	struct pollfd p = {.fd = poller.epfd, .events = POLLIN};

	return poller.epfd >= 0 && atomic_load_explicit(&xf__io_waiters, memory_order_relaxed) &&
	       poll(&p, 1, 0) == 1;
}
