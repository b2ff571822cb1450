/*
 * fd.c - the runtime's view of each descriptor: how to use it without
 * blocking, who waits on it, what the kernel reported ready (io.h has the
 * state machine).
 *
 * Entries live in a table indexed by descriptor number, in chunks of
 * XF_FD_CHUNK made on first use and kept for the life of the process, so a
 * pointer to an entry stays valid whatever happens to the number.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "common/probes.h"
#include "io/io.h"

#define XF_FD_CHUNK_SHIFT 10
#define XF_FD_CHUNK	  (1u << XF_FD_CHUNK_SHIFT)
#define XF_FD_CHUNKS	  1024 /* descriptors up to 2^20 */

/* A waiter woken by xf_shutdown, not by a close. */
#define REVENTS_CANCELED 0x80000000u

static _Atomic(struct xf__fd *) chunks[XF_FD_CHUNKS];
static _Atomic int cancelled; /* xf_shutdown has cancelled every I/O wait */
/* Where an xf_poll with no descriptor to wait on waits, for xf_shutdown. */
static struct xf__fd nowhere;

struct xf__fd *xf__fd_peek(int fd)
{
	struct xf__fd *c;

	if (fd < 0 || (unsigned)fd >= XF_FD_CHUNK * XF_FD_CHUNKS)
		return NULL;
	c = atomic_load_explicit(&chunks[fd >> XF_FD_CHUNK_SHIFT], memory_order_acquire);
	return c ? &c[fd & (XF_FD_CHUNK - 1)] : NULL;
}

struct xf__fd *xf__fd_get(int fd)
{
	struct xf__fd *c, *expected = NULL;

	if (fd < 0 || (unsigned)fd >= XF_FD_CHUNK * XF_FD_CHUNKS)
		return NULL;
	c = atomic_load_explicit(&chunks[fd >> XF_FD_CHUNK_SHIFT], memory_order_acquire);
	if (!c) {
		c = calloc(XF_FD_CHUNK, sizeof(*c));
		if (!c)
			return NULL;
		if (!atomic_compare_exchange_strong(&chunks[fd >> XF_FD_CHUNK_SHIFT], &expected,
						    c)) {
			free(c); /* another thread made it first */
			c = expected;
		}
	}
	return &c[fd & (XF_FD_CHUNK - 1)];
}

int xf__fd_enter(struct xf__fd *e)
{
	if (!e)
		return EBADF;
	/* Dekker with retire(): it sets closing, then waits for inflight. */
	atomic_fetch_add_explicit(&e->inflight, 1, memory_order_seq_cst);
	if (__atomic_load_n(&e->closing, __ATOMIC_SEQ_CST)) {
		atomic_fetch_sub_explicit(&e->inflight, 1, memory_order_release);
		return EBADF;
	}
	return 0;
}

void xf__fd_leave(struct xf__fd *e)
{
	atomic_fetch_sub_explicit(&e->inflight, 1, memory_order_release);
}

enum xf__fd_kind xf__fd_kind(struct xf__fd *e, int fd)
{
	struct stat st;
	uint8_t kind = __atomic_load_n(&e->kind, __ATOMIC_RELAXED);

	if (kind != XF_FD_UNKNOWN)
		return kind;
	if (fstat(fd, &st))
		return XF_FD_UNKNOWN;
	if (S_ISSOCK(st.st_mode)) {
		int proto = 0;
		socklen_t len = sizeof(proto);
		char ulp[16] = "";
		socklen_t ulp_len = sizeof(ulp);

		kind = XF_FD_SOCKET;
		/* TCP, with no upper layer (kernel TLS reads by records). */
		e->tcp_stream = getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &len) == 0 &&
				proto == IPPROTO_TCP &&
				getsockopt(fd, IPPROTO_TCP, TCP_ULP, ulp, &ulp_len) == 0 && !ulp[0];
		e->so_rcvtimeo_ns = xf__so_timeout_ns(fd, SO_RCVTIMEO);
		e->so_sndtimeo_ns = xf__so_timeout_ns(fd, SO_SNDTIMEO);
	}
	else if (S_ISFIFO(st.st_mode))
		kind = XF_FD_NOWAIT;
	else if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode) || S_ISDIR(st.st_mode))
		kind = XF_FD_FILE;
	else
		kind = XF_FD_POLLABLE; /* a tty, an eventfd, a timerfd, ... */
	__atomic_store_n(&e->kind, kind, __ATOMIC_RELAXED);
	return kind;
}

uint64_t xf__so_timeout_ns(int fd, int opt)
{
	struct timeval tv = {0};
	socklen_t len = sizeof(tv);

	if (getsockopt(fd, SOL_SOCKET, opt, &tv, &len) || tv.tv_sec < 0)
		return 0;
	return (uint64_t)tv.tv_sec * 1000000000u + (uint64_t)tv.tv_usec * 1000u;
}

uint64_t xf__fd_so_deadline(const struct xf__fd *e, uint32_t events, uint64_t start_ns)
{
	uint64_t t = (events & EPOLLIN) ? e->so_rcvtimeo_ns : e->so_sndtimeo_ns;

	if (!t)
		return 0;
	return t > UINT64_MAX - start_ns ? 0 : start_ns + t;
}

uint64_t xf__fd_deadline(const struct xf__fd *e, uint32_t events, uint64_t start_ns)
{
	uint64_t t = (events & EPOLLIN) ? e->read_timeout_ns : e->write_timeout_ns;

	if (!t)
		return 0;
	return t > UINT64_MAX - start_ns ? 0 : start_ns + t;
}

/* Registers fd with the poller, once per sequence number.  Lock held. */
static int ensure_registered(struct xf__fd *e, int fd)
{
	int err;

	if (e->registered)
		return 0;
	err = xf__poller_add(fd, e->seq);
	if (err == EPERM) {
		e->kind = XF_FD_FILE; /* epoll refuses it: always "ready" */
		return EPERM;
	}
	if (!err)
		e->registered = true;
	return err;
}

static void unlink_waiter(struct xf__fd *e, struct xf__io_waiter *w)
{
	if (w->prev)
		w->prev->next = w->next;
	else
		e->waiters = w->next;
	if (w->next)
		w->next->prev = w->prev;
	w->next = w->prev = NULL;
	w->fiber = NULL; /* no longer linked */
}

/* Whether a wait may begin: 0 and the time left (0: none), or why not. */
bool xf__io_cancelled(void)
{
	return atomic_load_explicit(&cancelled, memory_order_acquire);
}

static int wait_allowed(uint64_t deadline_ns, uint64_t *timeout)
{
	uint64_t now;

	if (atomic_load_explicit(&cancelled, memory_order_acquire))
		return ECANCELED;
	*timeout = 0;
	if (!deadline_ns)
		return 0;
	now = xf__now_ns();
	if (now >= deadline_ns)
		return ETIMEDOUT;
	*timeout = deadline_ns - now;
	return 0;
}

/* Puts w first on e's waiters.  Lock held. */
static void link_waiter(struct xf__fd *e, struct xf__io_waiter *w, struct xf_fiber *f,
			uint32_t events)
{
	w->fiber = f;
	w->events = events;
	w->next = e->waiters;
	if (w->next)
		w->next->prev = w;
	e->waiters = w;
}

/* Whether an event for one of `events` came since gen was read.  Lock held. */
static bool gen_moved(const struct xf__fd *e, uint32_t events, uint64_t gen)
{
	return ((events & EPOLLIN) && e->gen_in != (uint32_t)gen) ||
	       ((events & EPOLLOUT) && e->gen_out != (uint32_t)(gen >> 32));
}

/* A fiber starts to wait on descriptors.  Without a ticker (cooperative)
 * this worker's scheduling points poll from now on (io/poller.c). */
static void io_waiter_add(void)
{
	atomic_fetch_add_explicit(&xf__io_waiters, 1, memory_order_relaxed);
	if (!xf__rt.preempt_enabled)
		atomic_fetch_or_explicit(&xf__this_worker()->due, XF_DUE_IO, memory_order_relaxed);
}

int xf__fd_wait(struct xf__fd *e, int fd, uint32_t events, uint64_t deadline_ns, uint64_t gen)
{
	struct xf_fiber *self = xf__self();
	struct xf__io_waiter me = {0};
	uint64_t timeout;
	int state, err;

	if (!self)
		return EPERM;
	if ((err = wait_allowed(deadline_ns, &timeout)))
		return err;
	xf__spin_lock(&e->lock);
	if (e->closing) {
		xf__spin_unlock(&e->lock);
		return EBADF;
	}
	err = ensure_registered(e, fd);
	if (err) {
		xf__spin_unlock(&e->lock);
		return err == EPERM ? 0 : err; /* not pollable: the call will not wait */
	}
	if (gen_moved(e, events, gen)) {
		/* An event since the try began: it may have come too early. */
		xf__spin_unlock(&e->lock);
		return 0;
	}
	/* The try found EAGAIN and no event came since: until one comes, the
	 * next try would find it too. */
	e->drained |= events;
	link_waiter(e, &me, self, events);
	atomic_store_explicit(&self->wait_state, XF_WAIT_WAITING, memory_order_relaxed);
	self->wait_timed = timeout != 0;
	io_waiter_add();
	XF_STAT_INC(xf__this_worker(), io_waits, 1);
	XF_PROBE3(io__wait, self->id, fd, events);
	state = xf__wait_block(self, timeout, &e->lock, XF_WAIT_ON_IO, (const void *)(uintptr_t)fd);
	atomic_fetch_sub_explicit(&xf__io_waiters, 1, memory_order_relaxed);
	if (state == XF_WAIT_TIMEDOUT || state == XF_WAIT_CANCELED) {
		/* Claimed by its timer or a cancel, not by the poller: still linked. */
		xf__spin_lock(&e->lock);
		if (me.fiber)
			unlink_waiter(e, &me);
		xf__spin_unlock(&e->lock);
		return state == XF_WAIT_TIMEDOUT ? ETIMEDOUT : ECANCELED;
	}
	if (state == XF_WAIT_CLOSED)
		return (me.revents & REVENTS_CANCELED) ? ECANCELED : EBADF;
	return 0;
}

/* The events of a pollfd as the poller reports them. */
static uint32_t poll_events(short events)
{
	uint32_t ev = 0;

	if (events & (POLLIN | POLLRDNORM | POLLPRI | POLLRDHUP))
		ev |= EPOLLIN;
	if (events & (POLLOUT | POLLWRNORM))
		ev |= EPOLLOUT;
	return ev ? ev : EPOLLIN | EPOLLOUT; /* errors and hang-ups only: either */
}

int xf__fds_wait(struct pollfd *fds, nfds_t n, struct xf__io_waiter *w, uint64_t deadline_ns)
{
	struct xf_fiber *self = xf__self();
	uint64_t timeout;
	bool found = false, on_nowhere = false;
	unsigned linked = 0;
	int state, err;

	if ((err = wait_allowed(deadline_ns, &timeout)))
		return err;
	/* Findable from the first link on: preemption off, WAITING
	 * (xf__wait_block's rule). */
	xf__wait_prepare(self);
	self->wait_timed = timeout != 0;
	for (nfds_t i = 0; i < n; i++) {
		struct xf__fd *e = fds[i].fd >= 0 ? xf__fd_get(fds[i].fd) : NULL;
		uint32_t ev = poll_events(fds[i].events);
		bool ready;

		if (!e)
			continue;
		xf__spin_lock(&e->lock);
		if (e->closing) {
			/* xf_close is under way: the caller reports POLLNVAL
			 * (xf__fds_closing), though the number is still open. */
			xf__spin_unlock(&e->lock);
			found = true;
			break;
		}
		if (ensure_registered(e, fds[i].fd)) {
			xf__spin_unlock(&e->lock);
			continue; /* poll() itself reports it */
		}
		ready = gen_moved(e, ev, w[i].gen); /* since the poll(): poll again */
		if (!ready) {
			link_waiter(e, &w[i], self, ev);
			linked++;
		}
		xf__spin_unlock(&e->lock);
		if (ready) {
			found = true;
			break;
		}
	}
	if (!found && !linked) {
		/* No descriptor to wait on (none, or only negative ones): a sleep
		 * until the timeout, which xf_shutdown must still find. */
		xf__spin_lock(&nowhere.lock);
		link_waiter(&nowhere, &w[0], self, EPOLLIN | EPOLLOUT);
		xf__spin_unlock(&nowhere.lock);
		on_nowhere = true;
	}
	io_waiter_add();
	XF_STAT_INC(xf__this_worker(), io_waits, 1);
	/* Something was ready already: withdraw instead of waiting. */
	state = found ? xf__wait_cancel(self)
		      : xf__wait_block(self, timeout, NULL, XF_WAIT_ON_POLL, NULL);
	atomic_fetch_sub_explicit(&xf__io_waiters, 1, memory_order_relaxed);
	for (nfds_t i = 0; i < n || (on_nowhere && i == 0); i++) {
		struct xf__fd *e;

		if (!w[i].fiber)
			continue;
		e = on_nowhere ? &nowhere : xf__fd_peek(fds[i].fd);
		xf__spin_lock(&e->lock);
		if (w[i].fiber)
			unlink_waiter(e, &w[i]);
		xf__spin_unlock(&e->lock);
	}
	if (state == XF_WAIT_TIMEDOUT)
		return ETIMEDOUT;
	if (state == XF_WAIT_CANCELED)
		return ECANCELED;
	if (state == XF_WAIT_CLOSED) {
		for (nfds_t i = 0; i < n || (on_nowhere && i == 0); i++)
			if (w[i].revents & REVENTS_CANCELED)
				return ECANCELED;
	}
	return 0; /* woken, closed under it (poll() says POLLNVAL), or ready */
}

int xf__fds_closing(struct pollfd *fds, nfds_t n)
{
	int more = 0;

	for (nfds_t i = 0; i < n; i++) {
		struct xf__fd *e = xf__fd_peek(fds[i].fd);

		if (!e || !__atomic_load_n(&e->closing, __ATOMIC_ACQUIRE))
			continue;
		more += !fds[i].revents;
		fds[i].revents = POLLNVAL;
	}
	return more;
}

int xf__fds_gen(const struct pollfd *fds, nfds_t n, struct xf__io_waiter *w)
{
	for (nfds_t i = 0; i < n; i++) {
		struct xf__fd *e = fds[i].fd >= 0 ? xf__fd_get(fds[i].fd) : NULL;

		if (!e && fds[i].fd >= 0 && fds[i].fd < (int)(XF_FD_CHUNK * XF_FD_CHUNKS))
			return ENOMEM;
		w[i].gen = e ? xf__fd_gen(e) : 0;
	}
	return 0;
}

/* Claims and unlinks every waiter for one of `events`, chaining them on
 * the fibers' wait_next (free while they wait here); *taken gets the
 * events they waited for.  Lock held. */
static struct xf_fiber *claim_waiters(struct xf__fd *e, uint32_t events, int state,
				      uint32_t revents, uint32_t *taken)
{
	struct xf__io_waiter *w, *next;
	struct xf_fiber *list = NULL;

	for (w = e->waiters; w; w = next) {
		struct xf_fiber *f = w->fiber;

		next = w->next;
		if (!(w->events & events) || !xf__wait_claim(f, state))
			continue; /* another event, or its timer claimed it first */
		*taken |= w->events & events;
		w->revents = revents;
		unlink_waiter(e, w);
		f->wait_next = list;
		list = f;
	}
	return list;
}

/* The poller's side: events for the entry registered with `seq`. */
void xf__fd_ready(struct xf__fd *e, uint32_t seq, uint32_t events)
{
	struct xf_fiber *woken;
	uint32_t bits = 0, taken = 0;

	if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR | EPOLLPRI))
		bits |= EPOLLIN;
	if (events & (EPOLLOUT | EPOLLHUP | EPOLLERR))
		bits |= EPOLLOUT;
	xf__spin_lock(&e->lock);
	if (e->seq != seq || !e->registered) {
		xf__spin_unlock(&e->lock); /* for a descriptor closed since */
		return;
	}
	/* The end of the stream, an error or urgent data: a read may now stop
	 * short with more to read, and no further event will say so. */
	if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR | EPOLLPRI))
		e->read_end_seen = true;
	/* Not drained any more, before the count moves: a fiber reads the
	 * count, then drained, without the lock (ops.c), and one that saw the
	 * new count with the old mark skipped its try and waited, past data
	 * whose event this was - with four readers on a pipe, io.multi lost
	 * a burst in ~1 run of 20 on a Zen 3 guest.  The count's release
	 * store publishes the cleared mark with it. */
	__atomic_store_n(&e->drained, e->drained & ~bits, __ATOMIC_RELAXED);
	if (bits & EPOLLIN)
		e->short_marked = false;
	/* Counted whether or not a waiter takes it: a fiber whose try began
	 * before it will try again rather than wait (io.h). */
	if (bits & EPOLLIN)
		__atomic_store_n(&e->gen_in, e->gen_in + 1, __ATOMIC_RELEASE);
	if (bits & EPOLLOUT)
		__atomic_store_n(&e->gen_out, e->gen_out + 1, __ATOMIC_RELEASE);
	woken = claim_waiters(e, bits, XF_WAIT_WOKEN, bits, &taken);
	xf__spin_unlock(&e->lock);
	xf__wake_list(woken);
}

/*
 * A TCP read that moves fewer bytes than asked for has emptied the receive
 * queue (tcp_recvmsg copies all it holds, up to the length), so the next
 * read would find EAGAIN: it may wait at once, as after an EAGAIN - one
 * system call less per message (tokio does the same on epoll).  Unless an
 * event came since the try began (data arrived, and its event cleared or
 * will clear the mark), or the stream's end, an error or urgent data was
 * seen: a read stops short before the FIN or the urgent byte with more to
 * read, and no new event comes for what is already there.  Only a
 * registered entry: an event is then sure to follow new data.
 *
 * One short read the kernel cannot tell from these: a buffer that faults
 * part of the way (tcp_recvmsg returns the bytes before the faulting skb,
 * the rest stays queued).  Passing one is the caller's bug, but the
 * blocking read would still return the rest next time; so a mark made
 * here is trusted for XF_SHORT_READ_TRUST_NS only (ops.c's run_at), then
 * the read tries - an idle connection pays one wake-up for it, once per
 * quiet spell.
 */
void xf__fd_read_short(struct xf__fd *e, uint64_t gen)
{
	if (__atomic_load_n(&e->read_end_seen, __ATOMIC_RELAXED))
		return; /* sticky: no lock needed to know the answer */
	xf__spin_lock(&e->lock);
	if (e->registered && !e->closing && !e->read_end_seen && !gen_moved(e, EPOLLIN, gen) &&
	    !(e->drained & EPOLLIN)) {
		e->drained |= EPOLLIN;
		e->short_marked = true;
	}
	xf__spin_unlock(&e->lock);
}

void xf__fd_ring_drained(struct xf__fd *e, uint64_t gen, bool short_read)
{
	if (short_read && __atomic_load_n(&e->read_end_seen, __ATOMIC_RELAXED))
		return;
	xf__spin_lock(&e->lock);
	if (!e->closing && !gen_moved(e, EPOLLIN, gen) && !(short_read && e->read_end_seen)) {
		e->drained |= EPOLLIN;
		e->short_marked |= short_read;
	}
	xf__spin_unlock(&e->lock);
}

void xf__fd_short_untrust(struct xf__fd *e)
{
	xf__spin_lock(&e->lock);
	e->drained &= ~EPOLLIN; /* at worst one try more */
	e->short_marked = false;
	xf__spin_unlock(&e->lock);
}

void xf__fd_urgent_taken(int fd)
{
	struct xf__fd *e = xf__fd_peek(fd);

	if (e)
		__atomic_store_n(&e->read_end_seen, true, __ATOMIC_RELAXED);
}

/* Waits for the calls using e's number to leave: from a fiber by
 * yielding, from a plain thread by sleeping.  A worker outside a fiber (a
 * section with preemption disabled, the scheduler) cannot wait for
 * fibers that may need it, and does not. */
static void wait_calls_leave(struct xf__fd *e)
{
	const bool fiber = xf__self_may_wait() != NULL;

	if (!fiber && xf__this_worker())
		return;
	for (unsigned i = 0; atomic_load_explicit(&e->inflight, memory_order_acquire); i++) {
		if (fiber && i < 64) {
			xf_yield();
		} else if (fiber) {
			xf_sleep_ns(10000);
		} else {
			struct timespec ts = {0, 10000};

			nanosleep(&ts, NULL);
		}
	}
}

void xf__fd_retire(struct xf__fd *e, int fd)
{
	struct xf_fiber *woken;
	uint32_t taken = 0;
	bool registered;

	xf__spin_lock(&e->lock);
	__atomic_store_n(&e->closing, true, __ATOMIC_SEQ_CST);
	e->seq++; /* events already queued for the old registration are stale */
	registered = e->registered;
	e->registered = false;
	e->drained = 0;
	e->short_marked = false;
	woken = claim_waiters(e, EPOLLIN | EPOLLOUT, XF_WAIT_CLOSED, 0, &taken);
	xf__spin_unlock(&e->lock);
	xf__wake_list(woken);
	if (__atomic_load_n(&e->ring_used, __ATOMIC_SEQ_CST))
		xf__ring_sweep_all(); /* its requests in flight are cancelled (ring.c) */
	if (registered)
		xf__poller_del(fd);
	/* The number stays open until the calls on it have left: the fibers
	 * just woken (a poll among them must see it closing, not a new
	 * descriptor with its number), and any in a system call or the
	 * blocking pool. */
	wait_calls_leave(e);
	e->kind = XF_FD_UNKNOWN;
	e->read_timeout_ns = e->write_timeout_ns = 0;
	e->so_rcvtimeo_ns = e->so_sndtimeo_ns = 0;
	e->pending_err = 0;
	e->nonblock_ours = false;
	e->tcp_stream = e->read_end_seen = e->short_marked = e->ring_used = false;
	__atomic_store_n(&e->closing, false, __ATOMIC_RELEASE);
}

void xf__fds_retire_range(unsigned first, unsigned last)
{
	for (unsigned c = first >> XF_FD_CHUNK_SHIFT; c < XF_FD_CHUNKS && c <= last >> XF_FD_CHUNK_SHIFT;
	     c++) {
		struct xf__fd *chunk = atomic_load_explicit(&chunks[c], memory_order_acquire);

		for (unsigned i = 0; chunk && i < XF_FD_CHUNK; i++) {
			unsigned fd = c << XF_FD_CHUNK_SHIFT | i;
			struct xf__fd *e = &chunk[i];

			if (fd >= first && fd <= last && xf__fd_in_use(e))
				xf__fd_retire(e, (int)fd);
		}
	}
}

/* Wakes every waiter of e as cancelled by xf_shutdown. */
static void cancel_waiters(struct xf__fd *e)
{
	struct xf_fiber *woken;
	uint32_t taken = 0;

	if (!__atomic_load_n(&e->waiters, __ATOMIC_RELAXED))
		return;
	xf__spin_lock(&e->lock);
	woken = claim_waiters(e, EPOLLIN | EPOLLOUT, XF_WAIT_CLOSED, REVENTS_CANCELED, &taken);
	xf__spin_unlock(&e->lock);
	xf__wake_list(woken);
}

void xf__io_cancel_all(void)
{
	atomic_store_explicit(&cancelled, 1, memory_order_seq_cst);
	xf__ring_sweep_all(); /* requests in flight end too (ring.c) */
	cancel_waiters(&nowhere);
	for (unsigned c = 0; c < XF_FD_CHUNKS; c++) {
		struct xf__fd *chunk = atomic_load_explicit(&chunks[c], memory_order_acquire);

		for (unsigned i = 0; chunk && i < XF_FD_CHUNK; i++)
			cancel_waiters(&chunk[i]);
	}
}

/* A timed shutdown gave up (ETIMEDOUT), and the runtime runs on: waits on
 * descriptors work again.  Those cancelled meanwhile stay cancelled. */
void xf__io_uncancel(void)
{
	atomic_store_explicit(&cancelled, 0, memory_order_release);
}

/* The runtime stopped, or this is a forked child: no registration
 * survives its epoll set.  In a child, the calls under way on an entry,
 * and a close waiting for them, were the parent's fibers' and threads':
 * none will leave, and a close of the number waited forever for them (a
 * reviewer's forkt). */
void xf__fds_reset(bool forked)
{
	atomic_store_explicit(&cancelled, 0, memory_order_release);
	for (unsigned c = 0; c < XF_FD_CHUNKS; c++) {
		struct xf__fd *chunk = atomic_load_explicit(&chunks[c], memory_order_acquire);

		for (unsigned i = 0; chunk && i < XF_FD_CHUNK; i++) {
			chunk[i].registered = false;
			chunk[i].drained = 0;
			chunk[i].short_marked = false;
			chunk[i].seq++;
			chunk[i].waiters = NULL; /* a forked child's: the parent's fibers */
			if (forked) {
				atomic_store_explicit(&chunk[i].inflight, 0, memory_order_relaxed);
				__atomic_store_n(&chunk[i].closing, false, __ATOMIC_RELAXED);
			}
		}
	}
	nowhere.waiters = NULL;
	atomic_store_explicit(&xf__io_waiters, 0, memory_order_relaxed);
}
