/*
 * ring.c - the io_uring engine (XF_IO_BACKEND_IO_URING): a ring per
 * worker, on which a fiber's socket reads and writes are requests rather
 * than system calls.
 *
 * With epoll, a message costs its recv and its send: two system calls per
 * round trip, as Go's and tokio's (docs/io.md).  Here the fiber queues its
 * request in its worker's submission ring - memory, no system call - and
 * blocks; the worker hands the kernel every request its fibers queued in
 * one io_uring_enter when it runs out of fibers to run (or every
 * SUBMIT_BATCH requests, or at a preemption), and collects completions
 * where it looks for work: a round trip of many connections then costs a
 * fraction of a system call.  Everything else - accept, connect, poll,
 * pipes, files, readiness - stays with the poller (poller.c).
 *
 * A request's completion is the only thing that ends its fiber's wait: the
 * fiber's buffer and the wait record on its stack belong to the kernel
 * until then.  So nothing else claims the wait - no timer, no canceller:
 *
 *   a deadline (xf_fd_set_timeout, SO_RCVTIMEO):  a linked timeout
 *                         request, which cancels the request in the kernel;
 *   xf_close, xf_cancel, xf_shutdown:  the closer sets its flag (closing,
 *                         cancelled, the runtime's cancel), then asks every
 *                         worker with requests in flight for a sweep
 *                         (XF_DUE_RING and a kick); each worker, at its next
 *                         scheduling point, queues an asynchronous cancel
 *                         for each of its requests whose flag is set.  The
 *                         fiber looks at the flags itself after queueing
 *                         (a barrier on both sides: one of them sees the
 *                         other), so a request queued after a sweep is not
 *                         missed;
 *
 * and the cancelled request completes, -ECANCELED, waking its fiber, which
 * then says why.  xf_close waits for the calls on the number to leave
 * (fd.c), so the descriptor is not closed, nor its number reused, while a
 * request on it is in the kernel.
 *
 * A worker with requests in flight sleeps in its ring, not on its futex:
 * kicked through an eventfd the ring polls, and - if it holds the poller -
 * woken by the epoll set, which the ring polls too.
 *
 * Refused (io_uring_disabled, seccomp, RLIMIT_MEMLOCK, a kernel without
 * fast poll), xf_init falls back to epoll and says why once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <liburing.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "io/io.h"
#include "preempt/preempt.h"
#include "runtime/hooks.h"

#define CQ_ENTRIES	  4096	      /* completions of up to that many requests between looks */
#define MAX_REQUEST_BYTES 0x7ffff000u /* MAX_RW_COUNT: what one read or write moves */
#define SUBMIT_BATCH	  32	      /* queued requests that go in at once, fibers still to run */

/* user_data of what is not a fiber's request: ignored completions. */
#define TAG_IGNORE 0
#define TAG_KICK   1
#define TAG_EPOLL  2
#define TAG_MAX	   2

struct xf__ring {
	struct io_uring ring;
	int kick_fd;		     /* eventfd: another thread wakes the worker asleep here */
	bool kick_armed;	     /* its multishot poll is in the ring */
	bool epoll_armed;	     /* a poll of the epoll set is in the ring */
	bool epoll_fired;	     /* ... and has completed */
	unsigned inflight;	     /* requests not completed yet */
	unsigned unsubmitted;	     /* queued since the last io_uring_enter */
	unsigned rounds_left;	     /* scheduling points before they go in anyway: one
				      * round of the fibers queued when the first came */
	struct xf__ring_wait *waits; /* in flight, for the sweeps */
	_Atomic bool sweep_wanted;   /* a closer or canceller asked (xf__ring_sweep_all) */
	bool disabled;		     /* made for another thread: its worker enables it */
};

/* A fiber's request, on its stack until the request completes. */
struct xf__ring_wait {
	struct xf__ring_wait *next, *prev;
	struct xf_fiber *fiber;
	struct xf__fd *e;
	int32_t res;
	bool cancel_sent;
};

bool xf__ring_enabled;
unsigned xf__ring_entries = XF_RING_ENTRIES_DEFAULT;
static char refused_why[160];

const char *xf__ring_refused(void)
{
	return refused_why[0] ? refused_why : NULL;
}

static void refuse(const char *what, int err)
{
	snprintf(refused_why, sizeof(refused_why), "%s: %s", what, strerror(err));
}

static void ring_free(struct xf__ring *r)
{
	if (!r)
		return;
	io_uring_queue_exit(&r->ring);
	if (r->kick_fd >= 0)
		close(r->kick_fd);
	free(r);
}

/* Who enters a ring (ring_new). */
enum ring_issuer {
	ISSUER_THIS_THREAD,  /* the worker runs on the thread making it */
	ISSUER_WORKER_LATER, /* the worker's thread enables it (xf__ring_worker_enter) */
	ISSUER_ANY,	     /* io_uring_register is refused: no single issuer */
};

static struct xf__ring *ring_new(int *err, enum ring_issuer issuer)
{
	/* The worker alone enters its ring (the single issuer), and
	 * completions wait for its next io_uring_enter asking for them
	 * rather than interrupt it (deferred task work: a one-byte ping-pong
	 * 1.38x -> 1.5x two threads' here, docs/io.md); the ring's flags say
	 * when some wait, which the ticker reads (xf__ring_wants_cpu): its
	 * preemption is that entry.  Without the single issuer (ISSUER_ANY,
	 * or before 6.1) completions wait for the worker's next entry into
	 * the kernel, of any kind (COOP_TASKRUN). */
	struct io_uring_params p = {
	    .flags = IORING_SETUP_CQSIZE | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
		     IORING_SETUP_TASKRUN_FLAG |
		     (issuer == ISSUER_WORKER_LATER ? IORING_SETUP_R_DISABLED : 0),
	    .cq_entries = CQ_ENTRIES};
	struct xf__ring *r = calloc(1, sizeof(*r));
	int rc;

	if (!r) {
		*err = ENOMEM;
		return NULL;
	}
	r->kick_fd = -1;
	rc = -EINVAL;
	if (issuer != ISSUER_ANY)
		rc = io_uring_queue_init_params(xf__ring_entries, &r->ring, &p);
	if (rc == -EINVAL) { /* ISSUER_ANY, or before 6.1: no DEFER_TASKRUN */
		p = (struct io_uring_params){.flags = IORING_SETUP_CQSIZE |
						      IORING_SETUP_COOP_TASKRUN |
						      IORING_SETUP_TASKRUN_FLAG,
					     .cq_entries = CQ_ENTRIES};
		rc = io_uring_queue_init_params(xf__ring_entries, &r->ring, &p);
	}
	if (rc == -EINVAL) { /* before 5.19: no TASKRUN_FLAG */
		p = (struct io_uring_params){.flags = IORING_SETUP_CQSIZE,
					     .cq_entries = CQ_ENTRIES};
		rc = io_uring_queue_init_params(xf__ring_entries, &r->ring, &p);
	}
	if (rc == -EINVAL) /* before 5.5: no CQSIZE */
		rc = io_uring_queue_init(xf__ring_entries, &r->ring, 0);
	if (rc < 0) {
		*err = -rc;
		refuse("io_uring_setup", -rc);
		free(r);
		return NULL;
	}
	r->disabled = p.flags & IORING_SETUP_R_DISABLED;
	/* Without fast poll a request on a socket with nothing to read
	 * would hold a kernel worker thread while it waits (before 5.7);
	 * without EXT_ARG a timed wait queues a timeout request of
	 * liburing's own (before 5.11); multishot poll, the kick's, came in
	 * 5.13, with RSRC_TAGS, which stands for it. */
	if (!(r->ring.features & IORING_FEAT_FAST_POLL) ||
	    !(r->ring.features & IORING_FEAT_EXT_ARG) ||
	    !(r->ring.features & IORING_FEAT_RSRC_TAGS)) {
		io_uring_queue_exit(&r->ring);
		free(r);
		*err = ENOTSUP;
		snprintf(
		    refused_why, sizeof(refused_why),
		    "io_uring without fast poll, EXT_ARG or multishot poll (Linux before 5.13)");
		return NULL;
	}
	r->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (r->kick_fd < 0) {
		*err = errno;
		refuse("eventfd", errno);
		ring_free(r);
		return NULL;
	}
	return r;
}

/* Whether io_uring_register may be called, which enabling a ring needs. */
static bool register_allowed(struct io_uring *ring)
{
	struct io_uring_probe *probe = io_uring_get_probe_ring(ring);

	io_uring_free_probe(probe);
	return probe != NULL;
}

int xf__ring_start(void)
{
	bool can_enable = true;
	int err = 0;

	refused_why[0] = 0;
	for (unsigned i = 0; i < xf__rt.nr_workers; i++) {
		/* Worker 0 runs on this thread (xf_init's); the others' rings
		 * are enabled by their threads, unless a seccomp filter
		 * refuses io_uring_register (as a probe tells). */
		xf__rt.workers[i].ring = ring_new(&err, i == 0	     ? ISSUER_THIS_THREAD
							: can_enable ? ISSUER_WORKER_LATER
								     : ISSUER_ANY);
		if (!xf__rt.workers[i].ring) {
			xf__ring_stop();
			return err;
		}
		if (i == 0)
			can_enable = register_allowed(&xf__rt.workers[0].ring->ring);
	}
	xf__ring_enabled = true;
	return 0;
}

/* On worker w's own thread, before it runs a fiber: its ring takes this
 * thread as its only issuer. */
void xf__ring_worker_enter(struct xf__worker *w)
{
	struct xf__ring *r = w->ring;
	int rc;

	if (!r || !r->disabled)
		return;
	/* liburing 2.3 (Debian 12) declares io_uring_enable_rings but does
	 * not export it. */
	rc = syscall(__NR_io_uring_register, r->ring.ring_fd, IORING_REGISTER_ENABLE_RINGS, NULL, 0)
		 ? -errno
		 : 0;
	/* It cannot fail on a ring made disabled that nobody enabled; if it
	 * did, every entry would fail and the worker's fibers would wait
	 * forever: better said and stopped. */
	if (rc < 0) {
		fprintf(stderr, "xfiber: enabling worker %u's io_uring: %s\n", w->id,
			strerror(-rc));
		abort();
	}
	r->disabled = false;
}

void xf__ring_stop(void)
{
	for (unsigned i = 0; xf__rt.workers && i < xf__rt.nr_workers; i++) {
		ring_free(xf__rt.workers[i].ring);
		xf__rt.workers[i].ring = NULL;
	}
	xf__ring_enabled = false;
}

/* A forked child: the rings are its parent's (their memory is shared with
 * it); it lets go of them and goes on with epoll.  The forking fiber, the
 * only one left, has no request in flight: it is running. */
void xf__ring_fork_child(void)
{
	if (!xf__ring_enabled)
		return;
	xf__ring_stop();
	snprintf(refused_why, sizeof(refused_why), "a forked child uses epoll");
}

/* Whether completions wait for a kernel entry to be posted. */
static bool taskrun_pending(const struct xf__ring *r)
{
	return __atomic_load_n(r->ring.sq.kflags, __ATOMIC_RELAXED) & IORING_SQ_TASKRUN;
}

static bool reap(struct xf__ring *r);

/* --- submission --- */

static void submit(struct xf__ring *r)
{
	int rc;

	if (!r->unsubmitted)
		return;
	/* Asking for events too: with deferred task work, completions the
	 * submission itself caused (a send waking a receive of this ring)
	 * are posted in this entry rather than the next one. */
	rc = io_uring_submit_and_get_events(&r->ring);
	/* EINTR (a tick) or EAGAIN/EBUSY (the kernel's completion queue is
	 * full): what did not go in goes at the next look. */
	if (rc > 0)
		r->unsubmitted = rc >= (int)r->unsubmitted ? 0 : r->unsubmitted - (unsigned)rc;
}

/* Counts a request queued on w's ring. */
static void queued(struct xf__worker *w, struct xf__ring *r)
{
	if (!r->unsubmitted++)
		r->rounds_left = atomic_load_explicit(&w->nr_queued, memory_order_relaxed);
}

/* Room for n more entries: what is queued goes in, and what completed is
 * collected, until there is.  Called before anything of a request is
 * prepared, so that no collection runs between its parts. */
static void room_for(struct xf__ring *r, unsigned n)
{
	while (io_uring_sq_space_left(&r->ring) < n) {
		r->unsubmitted = io_uring_sq_ready(&r->ring);
		submit(r);
		reap(r);
	}
}

/* An entry, where room_for made room. */
static struct io_uring_sqe *sqe_take(struct xf__worker *w)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&w->ring->ring);

	XF_WARN_ON(!sqe);
	queued(w, w->ring);
	return sqe;
}

/* A cancel of wt, where room_for made room. */
static void cancel_request(struct xf__worker *w, struct xf__ring_wait *wt)
{
	struct io_uring_sqe *sqe = sqe_take(w);

	io_uring_prep_cancel64(sqe, (uint64_t)(uintptr_t)wt, 0);
	io_uring_sqe_set_data64(sqe, TAG_IGNORE);
	wt->cancel_sent = true;
}

/* Whether the request's wait must end now: its descriptor closes, its
 * fiber was cancelled, or the runtime cancels every wait. */
static bool must_end(const struct xf__ring_wait *wt)
{
	return __atomic_load_n(&wt->e->closing, __ATOMIC_SEQ_CST) ||
	       xf__cancel_pending(wt->fiber) || xf__io_cancelled();
}

/* The sweep, if one was asked for: a cancel for each request whose wait
 * must end.  Only then: it walks every request in flight.  It collects
 * nothing, which could end a wait under its feet: when the ring is full
 * it submits and leaves the rest to the next look. */
static bool sweep(struct xf__worker *w)
{
	struct xf__ring *r = w->ring;
	bool sent = false;

	if (!atomic_load_explicit(&r->sweep_wanted, memory_order_relaxed) ||
	    !atomic_exchange_explicit(&r->sweep_wanted, false, memory_order_seq_cst))
		return false;
	for (struct xf__ring_wait *wt = r->waits; wt; wt = wt->next) {
		struct io_uring_sqe *sqe;

		if (wt->cancel_sent || !must_end(wt))
			continue;
		sqe = io_uring_get_sqe(&r->ring);
		if (!sqe) {
			atomic_store_explicit(&r->sweep_wanted, true, memory_order_relaxed);
			atomic_fetch_or_explicit(&w->due, XF_DUE_RING, memory_order_relaxed);
			r->unsubmitted = io_uring_sq_ready(&r->ring);
			submit(r);
			return false;
		}
		queued(w, r);
		io_uring_prep_cancel64(sqe, (uint64_t)(uintptr_t)wt, 0);
		io_uring_sqe_set_data64(sqe, TAG_IGNORE);
		wt->cancel_sent = true;
		sent = true;
	}
	return sent;
}

/* --- completion --- */

/* Hands each completion to its fiber; whether any fiber woke. */
static bool reap(struct xf__ring *r)
{
	struct io_uring_cqe *cqe;
	unsigned head, n = 0;
	bool woke = false;

	if (taskrun_pending(r))
		io_uring_get_events(&r->ring);

	io_uring_for_each_cqe(&r->ring, head, cqe)
	{
		uint64_t data = io_uring_cqe_get_data64(cqe);
		struct xf__ring_wait *wt;

		n++;
		if (data == TAG_KICK) {
			uint64_t v;

			if (!(cqe->flags & IORING_CQE_F_MORE))
				r->kick_armed = false;
			if (read(r->kick_fd, &v, sizeof(v)) < 0) {
				/* drained already */
			}
			continue;
		}
		if (data == TAG_EPOLL) {
			r->epoll_armed = false;
			r->epoll_fired = true;
			continue;
		}
		if (data <= TAG_MAX || data == LIBURING_UDATA_TIMEOUT)
			continue;
		wt = (struct xf__ring_wait *)(uintptr_t)data;
		wt->res = cqe->res;
		if (wt->prev)
			wt->prev->next = wt->next;
		else
			r->waits = wt->next;
		if (wt->next)
			wt->next->prev = wt->prev;
		r->inflight--;
		if (xf__wait_claim(wt->fiber, XF_WAIT_WOKEN)) {
			xf__wake(wt->fiber);
			woke = true;
		}
	}
	io_uring_cq_advance(&r->ring, n);
	/* More completed than the queue holds: the kernel keeps the rest
	 * until a system call asks for them. */
	if (io_uring_cq_has_overflow(&r->ring)) {
		io_uring_get_events(&r->ring);
		woke |= reap(r);
	}
	return woke;
}

/* At a scheduling point of w's with XF_DUE_RING (runq.h): the sweep if
 * asked for, the queued requests in when the batch is full or nothing
 * else is ready, completions collected.  The bit stays set while requests
 * are in flight: every scheduling point then looks (a load, when the
 * completion queue is empty). */
void xf__ring_poll(struct xf__worker *w)
{
	struct xf__ring *r = w->ring;

	if (!r)
		return;
	/* Cancels go in at once: a closer waits for them, and the fiber
	 * running next may keep the worker for slices. */
	if (sweep(w) || (r->unsubmitted &&
			 (r->unsubmitted >= SUBMIT_BATCH || !w->runq.head || !r->rounds_left)))
		submit(r);
	else if (r->unsubmitted)
		r->rounds_left--;
	if (io_uring_cq_ready(&r->ring) || io_uring_cq_has_overflow(&r->ring) || taskrun_pending(r))
		reap(r);
	if (r->inflight || r->unsubmitted)
		atomic_fetch_or_explicit(&w->due, XF_DUE_RING, memory_order_relaxed);
}

/* Queued requests in, completions out, without waiting: whether fibers
 * woke.  An idle worker's look, and a preemption's: a request waits for
 * at most a slice, as an event does for the ticker's look with epoll. */
bool xf__ring_flush(struct xf__worker *w)
{
	struct xf__ring *r = w->ring;

	if (!r || (!r->inflight && !r->unsubmitted))
		return false;
	sweep(w);
	submit(r);
	return (io_uring_cq_ready(&r->ring) || io_uring_cq_has_overflow(&r->ring) ||
		taskrun_pending(r)) &&
	       reap(r);
}

bool xf__ring_busy(const struct xf__worker *w)
{
	const struct xf__ring *r = w->ring;

	return r && (__atomic_load_n(&r->inflight, __ATOMIC_RELAXED) ||
		     __atomic_load_n(&r->unsubmitted, __ATOMIC_RELAXED));
}

/* Sleeps in w's ring until a completion, a kick, timeout_ns (0: none) or,
 * with `poller` (w holds it), an event of the epoll set, which it then
 * collects.  w->parked is XF_PARKED_RING meanwhile (worker.c). */
void xf__ring_park(struct xf__worker *w, uint64_t timeout_ns, bool poller)
{
	struct xf__ring *r = w->ring;
	struct __kernel_timespec ts = {(long long)(timeout_ns / 1000000000u),
				       (long long)(timeout_ns % 1000000000u)};
	struct io_uring_cqe *cqe;

	/* The sweep and room for the two watches first: a collection after
	 * they are armed could take their completions away. */
	r->epoll_fired = false;
	sweep(w);
	room_for(r, 2);
	if (!r->kick_armed) {
		struct io_uring_sqe *sqe = sqe_take(w);

		io_uring_prep_poll_multishot(sqe, r->kick_fd, POLLIN);
		io_uring_sqe_set_data64(sqe, TAG_KICK);
		r->kick_armed = true;
	}
	if (poller && !r->epoll_armed && !r->epoll_fired) {
		struct io_uring_sqe *sqe = sqe_take(w);

		io_uring_prep_poll_add(sqe, xf__poller_fd(), POLLIN);
		io_uring_sqe_set_data64(sqe, TAG_EPOLL);
		r->epoll_armed = true;
	}
	/* An error (EINTR: a signal; ETIME: the timeout; EBUSY: a full
	 * completion queue) is only the end of the sleep. */
	if (!r->epoll_fired)
		(void)io_uring_submit_and_wait_timeout(&r->ring, &cqe, 1, timeout_ns ? &ts : NULL,
						       NULL);
	r->unsubmitted = io_uring_sq_ready(&r->ring); /* what did not go in */
	reap(r);
	if (poller)
		xf__poller_collect(w, r->epoll_fired);
}

void xf__ring_kick(struct xf__worker *w)
{
	uint64_t one = 1;

	if (w->ring && write(w->ring->kick_fd, &one, sizeof(one)) < 0) {
		/* the counter is full: the worker wakes anyway */
	}
}

/* A closer or canceller set its flag: every worker with requests in
 * flight sweeps at its next scheduling point. */
void xf__ring_sweep_all(void)
{
	if (!xf__ring_enabled)
		return;
	atomic_thread_fence(memory_order_seq_cst); /* the flag, then the look */
	for (unsigned i = 0; i < xf__rt.nr_workers; i++) {
		struct xf__worker *w = &xf__rt.workers[i];

		if (!w->ring)
			continue;
		atomic_store_explicit(&w->ring->sweep_wanted, true, memory_order_seq_cst);
		atomic_fetch_or_explicit(&w->due, XF_DUE_RING, memory_order_seq_cst);
		if (xf__ring_busy(w))
			xf__worker_kick(w); /* asleep in its ring, perhaps */
	}
	/* A busy worker sweeps at its next scheduling point, which the
	 * ticker brings about (xf__ring_wants_cpu): not twenty slices from
	 * now if it sleeps long, believing nothing waits. */
	xf__ticker_poke();
}

/* xf_cancel of a fiber waiting for a request (sched/cancel.c). */
static void ring_cancel_wait(struct xf_fiber *f)
{
	(void)f;
	xf__ring_sweep_all();
}

XF_HOOK(ring_hook) = {.module = "io/ring",
		      .cancel_wait_kind = XF_WAIT_ON_IO_REQUEST,
		      .cancel_wait = ring_cancel_wait};

/* --- a fiber's request --- */

bool xf__ring_takes(const struct xf__fd *e, int flags)
{
	return xf__ring_enabled && e->kind == XF_FD_SOCKET &&
	       !(flags & ~(MSG_NOSIGNAL | MSG_MORE | MSG_EOR));
}

ssize_t xf__ring_call(struct xf__fd *e, int fd, const struct iovec *iov, int iovcnt, int flags,
		      bool write, uint64_t deadline_ns)
{
	struct xf_fiber *self = xf__self();
	struct xf__ring_wait wt = {.fiber = self, .e = e};
	struct msghdr msg = {.msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt};
	struct __kernel_timespec ts;
	struct io_uring_sqe *sqe;
	struct xf__worker *w;
	struct xf__ring *r;
	uint64_t now = 0;
	size_t len;
	int state;

	if (deadline_ns) {
		now = xf__now_ns();
		if (deadline_ns <= now) {
			xf__errno_set(ETIMEDOUT);
			return -1;
		}
		ts.tv_sec = (long long)((deadline_ns - now) / 1000000000u);
		ts.tv_nsec = (long long)((deadline_ns - now) % 1000000000u);
	}
	if (!__atomic_load_n(&e->ring_used, __ATOMIC_RELAXED))
		__atomic_store_n(&e->ring_used, true, __ATOMIC_SEQ_CST);
	xf__wait_prepare(self); /* preemption off: this worker's ring, until we block */
	w = xf__this_worker();
	r = w->ring;
	/* The request, its timeout and perhaps a cancel of our own: room for
	 * all three first, so that nothing is submitted or collected between
	 * them. */
	room_for(r, 3);
	/* What it waits for, before the flags are looked at below: a
	 * canceller that reads the kind must find ours (sched/cancel.c). */
	self->wait_kind = XF_WAIT_ON_IO_REQUEST;
	self->wait_object = (void *)(intptr_t)fd;
	wt.next = r->waits;
	if (r->waits)
		r->waits->prev = &wt;
	r->waits = &wt;
	r->inflight++;
	sqe = sqe_take(w);
	/* MSG_NOSIGNAL always: the kernel may run the send on a thread of its
	 * own, whose SIGPIPE would go astray; ours is raised below. */
	/* An entry's length is 32 bits: a longer call moves part, as the
	 * kernel's own calls do past MAX_RW_COUNT. */
	len = iov[0].iov_len > MAX_REQUEST_BYTES ? MAX_REQUEST_BYTES : iov[0].iov_len;
	if (iovcnt == 1 && write)
		io_uring_prep_send(sqe, fd, iov[0].iov_base, len, flags | MSG_NOSIGNAL);
	else if (iovcnt == 1)
		io_uring_prep_recv(sqe, fd, iov[0].iov_base, len, flags);
	else if (write)
		io_uring_prep_sendmsg(sqe, fd, &msg, (unsigned)(flags | MSG_NOSIGNAL));
	else
		io_uring_prep_recvmsg(sqe, fd, &msg, (unsigned)flags);
	io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)&wt);
	if (deadline_ns) {
		sqe->flags |= IOSQE_IO_LINK;
		sqe = sqe_take(w);
		io_uring_prep_link_timeout(sqe, &ts, 0);
		io_uring_sqe_set_data64(sqe, TAG_IGNORE);
	}
	/* The request is where a sweep finds it; then our own look at the
	 * flags, against a closer's or canceller's look at us (ring.c's
	 * head). */
	atomic_thread_fence(memory_order_seq_cst);
	if (must_end(&wt))
		cancel_request(w, &wt);
	if (r->unsubmitted >= SUBMIT_BATCH)
		submit(r);
	atomic_fetch_or_explicit(&w->due, XF_DUE_RING, memory_order_relaxed);
	state = xf__wait_block(self, 0, NULL, XF_WAIT_ON_IO_REQUEST, (void *)(intptr_t)fd);
	XF_WARN_ON(state != XF_WAIT_WOKEN);
	(void)state;
	if (wt.res >= 0)
		return wt.res;
	/* Cancelled: by our own sweep (ECANCELED, or EINTR from a request the
	 * kernel was running on a thread of its own) or by its timeout. */
	if (wt.res == -ECANCELED || wt.res == -EINTR) {
		if (__atomic_load_n(&e->closing, __ATOMIC_ACQUIRE))
			wt.res = -EBADF;
		else if (xf__cancel_pending(self) || xf__io_cancelled())
			wt.res = -ECANCELED;
		else if (deadline_ns && xf__now_ns() >= deadline_ns)
			wt.res = -ETIMEDOUT;
		else
			wt.res = -EINTR;
	}
	if (wt.res == -EPIPE && write && !(flags & MSG_NOSIGNAL))
		pthread_kill(pthread_self(), SIGPIPE); /* as the blocking call's kernel does */
	xf__errno_set(-wt.res);
	return -1;
}

/* From the ticker's thread: the owner writes these, and a stale look
 * only moves the next one.  Requests to submit, or completions to
 * collect, want the worker's next scheduling point. */
bool xf__ring_wants_cpu(const struct xf__worker *w)
{
	const struct xf__ring *r = w->ring;

	/* Completions only count with requests in flight: a late kick's is
	 * no work, and would keep the ticker preempting for nothing.  A sweep
	 * asked for does: a closer waits for it, and a fiber that spins, or
	 * waits in the kernel (a pthread_join of the closing thread), would
	 * otherwise keep the worker from it for good (a reviewer's
	 * close_busy and close_thread_join). */
	return __atomic_load_n(&r->unsubmitted, __ATOMIC_RELAXED) ||
	       (__atomic_load_n(&r->inflight, __ATOMIC_RELAXED) &&
		(atomic_load_explicit(&r->sweep_wanted, memory_order_relaxed) ||
		 __atomic_load_n(r->ring.cq.ktail, __ATOMIC_ACQUIRE) !=
		     __atomic_load_n(r->ring.cq.khead, __ATOMIC_RELAXED) ||
		 io_uring_cq_has_overflow(&r->ring) || taskrun_pending(r)));
}
