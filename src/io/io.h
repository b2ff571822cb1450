/*
 * io.h - descriptors, the poller and the blocking pool: the runtime's
 * private interface (the public one is xfiber.h's descriptor calls).
 *
 * A fiber's I/O call tries the system call without blocking; if it must
 * wait, the fiber waits on the descriptor's entry here, and the poller - a
 * single epoll instance, in which each descriptor is registered once,
 * edge-triggered - wakes it when the kernel says the descriptor is ready.
 *
 * The entry's state machine, under its spinlock:
 *
 *   gen     per direction (EPOLLIN, EPOLLOUT), how many events the poller
 *           has handed to the entry: a fiber reads it before its try, and
 *           an event since means the try may have come too early
 *   waiters the fibers waiting, each with the events it waits for; an
 *           event wakes every matching one (and none is left behind)
 *   drained EPOLLIN/EPOLLOUT whose last try found EAGAIN with no event
 *           since: registered edge-triggered, the descriptor gets an event
 *           for every change, so the next call need not try first - one
 *           system call less per wait
 *
 *   a fiber:                read gen; try (or, drained, not); EAGAIN ->
 *                           lock; closing -> EBADF; gen moved -> unlock,
 *                           try again; else mark drained, link itself and
 *                           block (the lock is released once it can no
 *                           longer miss a wake-up: xf__wait_block)
 *   the poller, an event:   lock; a stale sequence number -> drop it;
 *                           drained cleared, then gen + 1, for its
 *                           directions (a fiber reads gen, then drained,
 *                           unlocked); claim and unlink every matching
 *                           waiter; unlock; wake the claimed
 *   xf_close:               lock; closing, sequence number + 1, claim every
 *                           waiter (EBADF); unlock; wake them; take the fd
 *                           out of epoll; wait for the calls in flight to
 *                           leave; close it
 *
 * Readiness that arrives between the try and the link is thus never lost
 * (Go's "about to wait, then commit"), whether or not another fiber's
 * wait took the event: with several fibers on one descriptor, an event
 * claimed by one after another's EAGAIN must not leave data behind that
 * both then wait past (a mark of "drained" made after that event would
 * say so wrongly; io.multi checks it).  An event meant for a closed
 * descriptor whose number is reused never reaches the new one's waiters:
 * events carry the sequence number they were registered with.
 */
#ifndef XF_IO_IO_H
#define XF_IO_IO_H

#include <poll.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "sched/sched.h"

#pragma GCC visibility push(hidden)

/* How a descriptor can be used without blocking its thread. */
enum xf__fd_kind {
	XF_FD_UNKNOWN,	/* not looked at yet */
	XF_FD_SOCKET,	/* MSG_DONTWAIT per call */
	XF_FD_NOWAIT,	/* a pipe, FIFO or eventfd: RWF_NOWAIT per call */
	XF_FD_POLLABLE, /* anything else epoll takes: wait for readiness, then the call */
	XF_FD_FILE,	/* a regular file or block device: never "not ready"; may block */
};

/* A fiber waiting on a descriptor: on its stack while it waits. */
struct xf__io_waiter {
	struct xf__io_waiter *next, *prev;
	struct xf_fiber *fiber;
	uint32_t events;  /* EPOLLIN and/or EPOLLOUT it waits for */
	uint32_t revents; /* what woke it */
	uint64_t gen;	  /* xf__fds_wait: the entry's xf__fd_gen() before the try */
};

struct xf__fd {
	_Atomic uint32_t lock; /* spinlock: the fields below */
	uint32_t seq;	       /* sequence number: bumped by every close */
	uint8_t kind;	       /* enum xf__fd_kind */
	bool registered;       /* in the epoll set, with `seq` */
	bool closing;	       /* xf_close under way: new calls fail with EBADF */
	bool nonblock_ours;    /* we set O_NONBLOCK (a listening socket) */
	uint32_t gen_in, gen_out; /* events handed to the entry, per direction */
	uint32_t drained;	  /* directions whose last try found EAGAIN, with no
				   * event since: the next call waits at once */
	struct xf__io_waiter *waiters;
	_Atomic uint32_t inflight; /* xf_ calls using the number right now */
	/* In the padding after inflight: the entry stays 80 bytes. */
	bool tcp_stream;       /* a TCP stream socket: a short read empties it */
	bool read_end_seen;    /* EPOLLRDHUP, EPOLLHUP, EPOLLERR or EPOLLPRI came: a
				* short read no longer says the queue is empty */
	bool short_marked;     /* drained's EPOLLIN came from a short read, not an
				* EAGAIN: trusted for XF_SHORT_READ_TRUST_NS */
	bool ring_used;	       /* a request went to an io_uring since it was opened: its
				* close must sweep the rings (ring.c) */
	uint64_t read_timeout_ns, write_timeout_ns; /* xf_fd_set_timeout; 0 = none */
	/* A socket's SO_RCVTIMEO and SO_SNDTIMEO, as the program set them
	 * (read when the socket is classified, kept by setsockopt): a blocking
	 * call would fail with EAGAIN after them, and so does the fiber's. */
	uint64_t so_rcvtimeo_ns, so_sndtimeo_ns;
	/* An error a call that had moved bytes already met (a reset during a
	 * MSG_WAITALL read): it returned the bytes, and the next call on the
	 * descriptor gets the error, as from the kernel. */
	_Atomic int pending_err;
};

/* The entry of fd, made on first use; NULL for a negative or huge fd. */
struct xf__fd *xf__fd_get(int fd);
/* The entry if it exists (never makes one). */
struct xf__fd *xf__fd_peek(int fd);

/* Takes fd for an xf_ call: EBADF if it is being closed (or invalid). */
int xf__fd_enter(struct xf__fd *e);
void xf__fd_leave(struct xf__fd *e);

/* A read on TCP socket e moved fewer bytes than it asked for, after a try
 * that began at event count gen: the next read waits without trying, if
 * that is still right (fd.c). */
void xf__fd_read_short(struct xf__fd *e, uint64_t gen);
/* The io_uring engine's first tries on e (ops.c's ring_run), begun at
 * event count gen: one found EAGAIN, or a TCP read stopped short
 * (short_read: marked as xf__fd_read_short marks, trusted as long).  The
 * next read goes straight to a request.  Unlike xf__fd_read_short, also
 * on an entry outside the epoll set: the ring needs no event, and a call
 * that waits through the poller registers the entry, which reports what
 * is queued. */
void xf__fd_ring_drained(struct xf__fd *e, uint64_t gen, bool short_read);
/* A wait that trusted a short read's mark timed out: the next read tries. */
void xf__fd_short_untrust(struct xf__fd *e);
/* The program takes fd's urgent byte (MSG_OOB): perhaps before the poller
 * saw EPOLLPRI, which a read stopped at the mark then no longer reports. */
void xf__fd_urgent_taken(int fd);

/* Whether TCP socket e has seen urgent data (or its end): a read at an
 * urgent mark finds EAGAIN while a signal is pending - a preemption tick -
 * with bytes queued behind the mark, and no event comes for them, so an
 * EAGAIN there is trusted no longer than a short read (ops.c's run_at). */
static inline bool xf__fd_urgent_seen(const struct xf__fd *e)
{
	return e->tcp_stream && __atomic_load_n(&e->read_end_seen, __ATOMIC_RELAXED);
}

/* How long a read waits on a short read's word alone before it tries
 * anyway: a read whose buffer faulted part of the way also stops short,
 * with bytes still queued and no event to come (fd.c). */
#define XF_SHORT_READ_TRUST_NS (50 * 1000 * 1000)

/* Classifies fd (fstat), once. */
enum xf__fd_kind xf__fd_kind(struct xf__fd *e, int fd);

/* The entry's event counts, read before a try (xf__fd_wait compares). */
static inline uint64_t xf__fd_gen(const struct xf__fd *e)
{
	return (uint64_t)__atomic_load_n(&e->gen_out, __ATOMIC_ACQUIRE) << 32 |
	       __atomic_load_n(&e->gen_in, __ATOMIC_ACQUIRE);
}

/* Whether the last try of `events` on e found EAGAIN and no event came
 * since: a try would fail again. */
static inline bool xf__fd_drained(const struct xf__fd *e, uint32_t events)
{
	return __atomic_load_n(&e->drained, __ATOMIC_RELAXED) & events;
}

/* Waits, as a fiber, until fd may be ready for `events` (EPOLLIN,
 * EPOLLOUT), after a try that found it not ready, begun when
 * xf__fd_gen(e) was gen: 0 (at once if an event came since gen),
 * ETIMEDOUT at deadline_ns (0 = none), EBADF if it is closed meanwhile,
 * ECANCELED when the runtime shuts down.  Registers fd with the poller
 * first if it is not.  Outside a fiber: EPERM. */
int xf__fd_wait(struct xf__fd *e, int fd, uint32_t events, uint64_t deadline_ns, uint64_t gen);

/* Waits, as a fiber, until one of fds may be ready (xf_poll): w holds a
 * waiter per entry, zeroed but for gen, each entry's xf__fd_gen() before
 * the poll() that found none ready (xf__fds_gen).  0 (look again with
 * poll()), ETIMEDOUT, ECANCELED. */
int xf__fds_wait(struct pollfd *fds, nfds_t n, struct xf__io_waiter *w, uint64_t deadline_ns);
/* Whether the runtime knows anything of the descriptor that a close must
 * undo. */
static inline bool xf__fd_in_use(const struct xf__fd *e)
{
	return e && (e->kind != XF_FD_UNKNOWN || e->registered || e->waiters ||
		     e->read_timeout_ns || e->write_timeout_ns);
}

/* Whether xf_shutdown has cancelled the fibers' I/O waits (ECANCELED). */
bool xf__io_cancelled(void);
void xf__io_uncancel(void); /* after a timed shutdown that gave up */
/* close_range(first, last): the entries of those descriptors start afresh. */
void xf__fds_retire_range(unsigned first, unsigned last);
/* Reports descriptors that xf_close is closing as poll() reports closed
 * ones (POLLNVAL), though their numbers are open until the close ends:
 * how many more now have revents. */
int xf__fds_closing(struct pollfd *fds, nfds_t n);
/* Fills w[i].gen for xf__fds_wait: 0, or ENOMEM (no entry could be made). */
int xf__fds_gen(const struct pollfd *fds, nfds_t n, struct xf__io_waiter *w);

/* The deadline the socket's own SO_RCVTIMEO/SO_SNDTIMEO sets a call on e
 * that waits for `events`, 0 if none. */
uint64_t xf__fd_so_deadline(const struct xf__fd *e, uint32_t events, uint64_t start_ns);
/* A socket's SO_RCVTIMEO or SO_SNDTIMEO in nanoseconds (0: none). */
uint64_t xf__so_timeout_ns(int fd, int opt);
/* The deadline of an xf_ call on e begun at start_ns that waits for
 * `events`: start plus the descriptor's timeout, 0 if none. */
uint64_t xf__fd_deadline(const struct xf__fd *e, uint32_t events, uint64_t start_ns);

/* Everything a close does before the close(2): waiters wake with EBADF, the
 * registration goes, and the calls on the number leave first (as the
 * caller can wait: fd.c). */
void xf__fd_retire(struct xf__fd *e, int fd);
/* The poller's side: events for the entry registered with sequence seq. */
void xf__fd_ready(struct xf__fd *e, uint32_t seq, uint32_t events);
/* The runtime stopped (forked: in a forked child): its epoll set is gone,
 * and every registration; in a child, the parent's calls too. */
void xf__fds_reset(bool forked);

/* The C library's poll(), not waiting (poll.c interposes poll itself). */
int xf__poll_now(struct pollfd *fds, nfds_t n);

/* --- the poller (poller.c) --- */
int xf__poller_start(void);
void xf__poller_stop(bool forked); /* forked: in a forked child (xf__fds_reset) */
/* Registers fd, edge-triggered, for everything; 0 or an errno (EPERM: not
 * pollable, a regular file). */
int xf__poller_add(int fd, uint32_t seq);
void xf__poller_del(int fd);
/* Fibers waiting on descriptors now, anywhere. */
extern _Atomic unsigned xf__io_waiters;
/* An idle worker takes the poller, if fibers wait on descriptors and
 * nobody else polls; then it sleeps there (xf__poller_idle) instead of on
 * its futex, until an event, its timer deadline (0: none) or a kick. */
bool xf__poller_claim(struct xf__worker *w);
void xf__poller_idle(struct xf__worker *w, uint64_t timeout_ns);
/* An idle worker's look that does not wait: whether it found events. */
bool xf__poller_try(struct xf__worker *w);
/* XF_DUE_IO at a scheduling point: a poll (paced when cooperative). */
void xf__poller_due(struct xf__worker *w);
/* Wakes the worker sleeping in the poller. */
void xf__poller_kick(void);
/* The ticker's look, when every worker is busy: a poll that does not wait. */
bool xf__poller_tick(void);
/* Whether a worker sleeps in the poller right now. */
bool xf__poller_busy(void);
/* xf_shutdown: fibers waiting on descriptors fail with ECANCELED. */
void xf__io_cancel_all(void);

/* The epoll set's descriptor, for a worker that waits on it from its ring. */
int xf__poller_fd(void);
/* The poller's owner w, woken from its ring: collects the events if the
 * set was readable (fired), and lets go of the poller. */
void xf__poller_collect(struct xf__worker *w, bool fired);

/* The engine in use and why the one asked for was refused (NULL: it was
 * not), for xf_stats (poller.c). */
void xf__io_backend_set(int backend, const char *refused);
void xf__io_backend_stats(xf_stats *out);

/* --- the io_uring engine (ring.c), with XF_IO_BACKEND_IO_URING --- */
#ifdef XF_HAVE_IO_URING
extern bool xf__ring_enabled;
/* Submission entries of each worker's ring: XF_RING_ENTRIES_DEFAULT, or
 * XFIBER_RING_ENTRIES (a power of two from XF_RING_ENTRIES_MIN: a call
 * makes room for three entries at once, a sleep for two). */
#define XF_RING_ENTRIES_DEFAULT 256
#define XF_RING_ENTRIES_MIN	4
#define XF_RING_ENTRIES_MAX	32768
extern unsigned xf__ring_entries;
/* A ring for every worker: 0, or an errno with xf__ring_refused() saying
 * why (nothing is left started). */
int xf__ring_start(void);
void xf__ring_stop(void);
void xf__ring_fork_child(void);
/* On worker w's thread as it starts: the ring's issuer is that thread. */
void xf__ring_worker_enter(struct xf__worker *w);
/* Why the engine was refused (or let go, in a forked child); NULL if not. */
const char *xf__ring_refused(void);
/* Whether a call with these flags on e goes to the ring. */
bool xf__ring_takes(const struct xf__fd *e, int flags);
/* A read or write of iov on socket fd as a request, waited for as a
 * fiber: the result, or -1 with errno (ETIMEDOUT at deadline_ns, 0: none;
 * EBADF when closed meanwhile; ECANCELED). */
ssize_t xf__ring_call(struct xf__fd *e, int fd, const struct iovec *iov, int iovcnt, int flags,
		      bool write, uint64_t deadline_ns);
/* Scheduling points with XF_DUE_RING (runq.h); the queued requests in and
 * the completions out at once (an idle worker's look, worker.c, and a
 * preemption, preempt/signal.c: whether fibers woke); an idle worker's
 * sleep; a kick; the sweep a closer or canceller asks for. */
void xf__ring_poll(struct xf__worker *w);
bool xf__ring_flush(struct xf__worker *w);
bool xf__ring_busy(const struct xf__worker *w);
/* Requests wait to be submitted, or completions to be collected, on w's
 * ring (the ticker's look, from its own thread). */
bool xf__ring_wants_cpu(const struct xf__worker *w);
void xf__ring_park(struct xf__worker *w, uint64_t timeout_ns, bool poller);
void xf__ring_kick(struct xf__worker *w);
void xf__ring_sweep_all(void);
#else
#define xf__ring_enabled false
static inline void xf__ring_poll(struct xf__worker *w)
{
	(void)w;
}
static inline bool xf__ring_flush(struct xf__worker *w)
{
	(void)w;
	return false;
}
static inline bool xf__ring_busy(const struct xf__worker *w)
{
	(void)w;
	return false;
}
static inline bool xf__ring_wants_cpu(const struct xf__worker *w)
{
	(void)w;
	return false;
}
static inline void xf__ring_park(struct xf__worker *w, uint64_t timeout_ns, bool poller)
{
	(void)w, (void)timeout_ns, (void)poller;
}
static inline void xf__ring_kick(struct xf__worker *w)
{
	(void)w;
}
static inline void xf__ring_sweep_all(void)
{
}
#endif

/* --- the blocking pool (blocking.c) --- */
int xf__blocking_start(unsigned max_threads);
void xf__blocking_stop(void);
void xf__poller_fork_child(void);
void xf__poller_release(void);

/* The C library's descriptor and readiness calls made from fibers (ops.c,
 * poll.c; common/interpose.h), resolved at xf_init. */
void xf__io_interpose_resolve(void);
void xf__poll_interpose_resolve(void);

#pragma GCC visibility pop

#endif
