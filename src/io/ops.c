/*
 * ops.c - the descriptor calls: xf_read, xf_write, ..., xf_poll, xf_close.
 *
 * Each mirrors its POSIX namesake - same arguments, same return value,
 * errno on failure - and blocks only the calling fiber: it tries the call
 * without blocking the thread and, on EAGAIN, waits on the descriptor
 * (io.h) and tries again.  Without blocking the thread, per call, never
 * touching the descriptor's O_NONBLOCK flag, which other processes that
 * inherited it share:
 *
 *   sockets                  MSG_DONTWAIT
 *   pipes, FIFOs, eventfds   preadv2/pwritev2 with RWF_NOWAIT
 *   other pollable ones      wait for readiness first (a tty, a timerfd);
 *                            the call itself may then still block if another
 *                            reader takes the data first
 *   regular files            RWF_NOWAIT, then the blocking pool
 *
 * Two exceptions set O_NONBLOCK: a listening socket, at its first
 * xf_accept4 (accept has no per-call form, and another acceptor may take
 * the connection readiness announced), and a socket for the duration of an
 * xf_connect to it (restored after).  The calls wait whatever the
 * descriptor's O_NONBLOCK flag says; a socket call given MSG_DONTWAIT only
 * tries.  Writes to stream sockets and pipes write everything, as a
 * blocking write does, unless an error or a timeout stops them (then they
 * return what was written, if anything).
 *
 * Outside a fiber, and with preemption disabled, each is the plain call.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/close_range.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/interpose.h"
#include "io/io.h"

/* One try of an operation, without blocking the thread: its result, or -1
 * with errno (EAGAIN: not ready). */
typedef ssize_t (*attempt_fn)(int fd, enum xf__fd_kind kind, void *op);

/* Whether fd is ready for `events` right now (for descriptors that have no
 * non-blocking form of the call). */
static bool ready_now(int fd, uint32_t events)
{
	struct pollfd p = {.fd = fd, .events = (short)events};

	return xf__poll_now(&p, 1) > 0;
}

/* A read or write of an iovec (rw_attempt's op). */
struct rw_op {
	const struct iovec *iov;
	int iovcnt;
	int flags; /* for sockets */
	bool write;
};

static ssize_t rw_attempt(int fd, enum xf__fd_kind kind, void *arg);

#ifdef XF_HAVE_IO_URING
/* A read or write on a socket as an io_uring request (ring.c), the
 * descriptor's deadlines as a linked timeout.  A read tries first, as with
 * epoll, until one finds nothing or stops short: ready data costs a recv,
 * not a request and two switches.  From then on the socket's reads are
 * requests; writes always are, so that they go in batches. */
static ssize_t ring_run(struct xf__fd *e, int fd, enum xf__fd_kind kind, uint32_t events,
			const struct rw_op *op, uint64_t *start_ns, size_t want)
{
	uint64_t deadline = 0, so_deadline = 0, until;
	ssize_t r;

	if (!op->write && !xf__fd_drained(e, EPOLLIN)) {
		uint64_t gen = xf__fd_gen(e); /* before the try: see xf__fd_wait */

		r = rw_attempt(fd, kind, (void *)op);
		if (r < 0 && xf__errno_get() != EAGAIN && xf__errno_get() != EWOULDBLOCK)
			return r;
		/* A short read says the queue is empty on a TCP stream only: a
		 * datagram socket's next datagram may be there already (a
		 * reviewer's recvfrom after it waited with two queued). */
		if (r < 0 || (r > 0 && (size_t)r < want && e->tcp_stream))
			xf__fd_ring_drained(e, gen, r > 0);
		if (r >= 0)
			return r;
	}
	if (e->read_timeout_ns || e->write_timeout_ns || e->so_rcvtimeo_ns || e->so_sndtimeo_ns) {
		if (!*start_ns)
			*start_ns = xf__now_ns();
		deadline = xf__fd_deadline(e, events, *start_ns);
		so_deadline = xf__fd_so_deadline(e, events, *start_ns);
	}
	until = !deadline || (so_deadline && so_deadline < deadline) ? so_deadline : deadline;
	r = xf__ring_call(e, fd, op->iov, op->iovcnt, op->flags, op->write, until);
	if (r < 0 && xf__errno_get() == ETIMEDOUT && so_deadline && until == so_deadline)
		xf__errno_set(EAGAIN); /* the socket's own timeout, as the blocking call says */
	return r;
}
#endif

/* The loop every call shares: try, wait, try again.  Deadlines run from
 * *start_ns, the start of the whole call (a MSG_WAITALL read's later parts
 * included); 0 until the call first has to wait, which then reads the
 * clock - a call that finds its data never does (~20 ns of a ~400 ns
 * ready read).  want: the bytes a read asks for, whose falling short on a
 * TCP socket says the next read would find nothing (xf__fd_read_short);
 * 0 for anything else. */
static ssize_t run_at(int fd, uint32_t events, attempt_fn attempt, void *op, bool once,
		      uint64_t *start_ns, size_t want)
{
	struct xf__fd *e = xf__fd_get(fd);
	enum xf__fd_kind kind;
	uint64_t deadline = 0, so_deadline = 0, wait_deadline = 0;
	bool timed = false;
	ssize_t r;
	int err;

	if ((err = xf__cancel_point()) || (err = xf__fd_enter(e))) {
		xf__errno_set(err);
		return -1;
	}
	kind = xf__fd_kind(e, fd);
	if (kind == XF_FD_UNKNOWN) {
		xf__fd_leave(e);
		xf__errno_set(EBADF);
		return -1;
	}
	err = atomic_exchange_explicit(&e->pending_err, 0, memory_order_relaxed);
	if (err) {
		xf__fd_leave(e);
		xf__errno_set(err);
		return -1;
	}
#ifdef XF_HAVE_IO_URING
	/* An empty vector moves nothing, and a request has no entry for it. */
	if (attempt == rw_attempt && !once && ((struct rw_op *)op)->iovcnt > 0 &&
	    xf__ring_takes(e, ((struct rw_op *)op)->flags)) {
		r = ring_run(e, fd, kind, events, op, start_ns, want);
		goto out;
	}
#endif
	for (;;) {
		uint64_t gen = xf__fd_gen(e); /* before the try: see xf__fd_wait */
		uint64_t until;
		bool on_trust = false; /* a wait that may be wrong: bounded (io.h) */

		if (kind == XF_FD_POLLABLE && !ready_now(fd, events)) {
			r = -1, xf__errno_set(EAGAIN);
		} else if (!once && xf__fd_drained(e, events)) {
			r = -1, xf__errno_set(EAGAIN); /* known not ready: straight to the wait */
			on_trust = (events & EPOLLIN) &&
				   (__atomic_load_n(&e->short_marked, __ATOMIC_RELAXED) ||
				    xf__fd_urgent_seen(e));
		} else {
			r = attempt(fd, kind, op);
			on_trust = r < 0 && (events & EPOLLIN) && xf__fd_urgent_seen(e);
		}
		if (r > 0 && (size_t)r < want && e->tcp_stream)
			xf__fd_read_short(e, gen);
		if (r >= 0 || (xf__errno_get() != EAGAIN && xf__errno_get() != EWOULDBLOCK) || once)
			break;
		uint64_t now = 0; /* read once a wait, when something needs it */

		if (!timed) {
			if (!*start_ns)
				*start_ns = now = xf__now_ns();
			deadline = xf__fd_deadline(e, events, *start_ns);
			so_deadline = xf__fd_so_deadline(e, events, *start_ns);
			wait_deadline = !deadline || (so_deadline && so_deadline < deadline)
					    ? so_deadline
					    : deadline;
			timed = true;
		}
		until = wait_deadline;
		if (on_trust) {
			uint64_t trust = (now ? now : xf__now_ns()) + XF_SHORT_READ_TRUST_NS;

			if (!until || trust < until)
				until = trust;
		}
		err = xf__fd_wait(e, fd, events, until, gen);
		if (err == ETIMEDOUT && until != wait_deadline) {
			xf__fd_short_untrust(e); /* then try: see xf__fd_read_short */
			continue;
		}
		if (err == ETIMEDOUT && so_deadline && wait_deadline == so_deadline)
			err = EAGAIN; /* the socket's own timeout, as the blocking call says */
		if (err) {
			xf__errno_set(err);
			r = -1;
			break;
		}
		kind = xf__fd_kind(e, fd); /* a pipe without RWF_NOWAIT became POLLABLE */
	}
#ifdef XF_HAVE_IO_URING
out:
#endif
	xf__fd_leave(e);
	/* A preemption point: ticks that land in the C library's send or
	 * recv are deferred (pending), and a fiber whose calls never wait
	 * would otherwise keep its worker for good (a reviewer's busy_io: the
	 * fiber beside it got none of the CPU).  Two instructions when none
	 * is pending. */
	xf__preempt_disable();
	xf__preempt_enable();
	return r;
}

static ssize_t run(int fd, uint32_t events, attempt_fn attempt, void *op, bool once)
{
	uint64_t start_ns = 0;

	return run_at(fd, events, attempt, op, once, &start_ns, 0);
}

/* A recv with MSG_PEEK and MSG_WAITALL waits, as the blocking call does,
 * until all n bytes can be seen or the stream ends: a shorter peek is "not
 * yet" unless the peer has hung up. */
static ssize_t peek_all(int fd, ssize_t r, size_t n, int flags)
{
	struct pollfd p = {.fd = fd, .events = POLLRDHUP};

	if (r <= 0 || (size_t)r >= n || (flags & (MSG_PEEK | MSG_WAITALL)) != (MSG_PEEK | MSG_WAITALL))
		return r;
	if (xf__poll_now(&p, 1) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
		return r;
	xf__errno_set(EAGAIN);
	return -1;
}

/* --- reads and writes through an iovec --- */


static ssize_t file_io(int fd, const struct rw_op *op);

static size_t iov_total(const struct iovec *iov, int n)
{
	size_t t = 0;

	for (int i = 0; i < n; i++)
		t += iov[i].iov_len;
	return t;
}

static ssize_t rw_attempt(int fd, enum xf__fd_kind kind, void *arg)
{
	const struct rw_op *op = arg;
	ssize_t r;

	switch (kind) {
	case XF_FD_SOCKET: {
		struct msghdr m = {.msg_iov = (struct iovec *)op->iov, .msg_iovlen = (size_t)op->iovcnt};

		/* One buffer: the plain calls, which import no iovec. */
		if (op->iovcnt == 1)
			r = op->write ? send(fd, op->iov[0].iov_base, op->iov[0].iov_len,
					     op->flags | MSG_DONTWAIT)
				      : recv(fd, op->iov[0].iov_base, op->iov[0].iov_len,
					     op->flags | MSG_DONTWAIT);
		else
			r = op->write ? sendmsg(fd, &m, op->flags | MSG_DONTWAIT)
				      : recvmsg(fd, &m, op->flags | MSG_DONTWAIT);
		return op->write ? r : peek_all(fd, r, iov_total(op->iov, op->iovcnt), op->flags);
	}
	case XF_FD_NOWAIT:
		r = op->write ? pwritev2(fd, op->iov, op->iovcnt, -1, RWF_NOWAIT)
			      : preadv2(fd, op->iov, op->iovcnt, -1, RWF_NOWAIT);
		if (r < 0 && xf__errno_get() == EOPNOTSUPP) {
			/* This kernel or file has no RWF_NOWAIT: readiness first. */
			__atomic_store_n(&xf__fd_get(fd)->kind, XF_FD_POLLABLE, __ATOMIC_RELAXED);
			xf__errno_set(EAGAIN);
		}
		return r;
	case XF_FD_FILE:
		return file_io(fd, op);
	default:
		return op->write ? writev(fd, op->iov, op->iovcnt) : readv(fd, op->iov, op->iovcnt);
	}
}

/* A regular file: from the page cache without blocking, else in the pool. */
struct file_job {
	int fd;
	const struct rw_op *op;
	ssize_t result;
	int err;
};

static void *file_job_run(void *arg)
{
	struct file_job *j = arg;

	j->result = j->op->write ? writev(j->fd, j->op->iov, j->op->iovcnt)
				 : readv(j->fd, j->op->iov, j->op->iovcnt);
	j->err = xf__errno_get();
	return NULL;
}

static ssize_t file_io(int fd, const struct rw_op *op)
{
	struct file_job j = {.fd = fd, .op = op};
	ssize_t r = op->write ? pwritev2(fd, op->iov, op->iovcnt, -1, RWF_NOWAIT)
			      : preadv2(fd, op->iov, op->iovcnt, -1, RWF_NOWAIT);
	int err;

	if (r >= 0 || (xf__errno_get() != EAGAIN && xf__errno_get() != EOPNOTSUPP))
		return r;
	err = xf_blocking(file_job_run, &j, NULL);
	if (err) {
		xf__errno_set(err);
		return -1;
	}
	xf__errno_set(j.err);
	return j.result;
}

/* Whether a call on fd that moved only part of its bytes goes on for the
 * rest, as the blocking call does: every write to a stream socket or a
 * pipe, and a read from a stream socket with MSG_WAITALL. */
static bool goes_on(int fd, int flags, bool write)
{
	struct xf__fd *e = xf__fd_peek(fd);
	int type = 0;
	socklen_t len = sizeof(type);

	if (!e || (!write && !(flags & MSG_WAITALL)))
		return false;
	if (e->kind == XF_FD_NOWAIT)
		return write;
	if (e->kind != XF_FD_SOCKET)
		return false;
	return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_STREAM;
}

/* --- the message calls --- */

struct msg_op {
	struct msghdr *msg;
	int flags;
	bool write;
};

static ssize_t msg_attempt(int fd, enum xf__fd_kind kind, void *arg)
{
	struct msg_op *op = arg;
	ssize_t r;

	(void)kind;
	if (op->write)
		return sendmsg(fd, op->msg, op->flags | MSG_DONTWAIT);
	r = recvmsg(fd, op->msg, op->flags | MSG_DONTWAIT);
	return peek_all(fd, r, iov_total(op->msg->msg_iov, (int)op->msg->msg_iovlen), op->flags);
}

/*
 * After a first call that moved r of msg's bytes: the rest, until all of
 * them, the end of the stream, the deadline of the whole call, or an error
 * - which then shortens the count, and waits for the next call on the
 * descriptor (pending_err), as the kernel keeps it.  Control data (passed
 * descriptors) ends a read, as it ends the kernel's: the first part that
 * brings some hands it to the caller's buffer, of control_len bytes.
 * start_ns is the call's start, or 0 if its first part did not wait.
 * Returns the bytes moved.
 */
static ssize_t the_rest(int fd, struct msghdr *msg, int flags, bool write, ssize_t r,
			uint64_t start_ns, size_t control_len)
{
	struct xf__fd *e;
	const int iovcnt = (int)msg->msg_iovlen;
	size_t total = iov_total(msg->msg_iov, iovcnt), done;
	struct msghdr m = {0};
	/* A socket's kernel raises SIGPIPE only for a call that moved nothing:
	 * not for this one, which has moved r bytes (the next call on the
	 * descriptor gets the EPIPE, and the signal: whole_call). */
	struct msg_op op = {.msg = &m,
			    .flags = (flags & ~MSG_WAITALL) | (write ? MSG_NOSIGNAL : 0),
			    .write = write};
	struct rw_op rw_op = {.flags = op.flags, .write = write};
	struct iovec *rest;
	int left = iovcnt, err;

	if (r <= 0 || (size_t)r == total || (flags & (MSG_DONTWAIT | MSG_PEEK)) ||
	    (!write && msg->msg_controllen) || !goes_on(fd, flags, write))
		return r;
	rest = malloc((size_t)iovcnt * sizeof(*rest));
	if (!rest)
		return r;
	/* The first part moved bytes: fd has its entry.  The clock is read
	 * here if that part did not wait; it began one system call ago. */
	e = xf__fd_get(fd);
	if (!start_ns)
		start_ns = xf__now_ns();
	memcpy(rest, msg->msg_iov, (size_t)iovcnt * sizeof(*rest));
	for (done = (size_t)r; done < total; done += (size_t)r) {
		size_t skip = (size_t)r;

		while (left && skip >= rest[iovcnt - left].iov_len) {
			skip -= rest[iovcnt - left].iov_len;
			left--;
		}
		rest[iovcnt - left].iov_base = (char *)rest[iovcnt - left].iov_base + skip;
		rest[iovcnt - left].iov_len -= skip;
		m = (struct msghdr){.msg_iov = rest + (iovcnt - left), .msg_iovlen = (size_t)left};
		if (!write && control_len) {
			m.msg_control = msg->msg_control;
			m.msg_controllen = control_len;
		}
		rw_op.iov = m.msg_iov;
		rw_op.iovcnt = left;
		if (xf__fd_kind(e, fd) == XF_FD_SOCKET)
			r = run_at(fd, write ? EPOLLOUT : EPOLLIN, msg_attempt, &op, false, &start_ns,
				   0);
		else
			r = run_at(fd, write ? EPOLLOUT : EPOLLIN, rw_attempt, &rw_op, false,
				   &start_ns, 0);
		if (r < 0) {
			err = xf__errno_get();
			if (err != EAGAIN && err != ETIMEDOUT && err != ECANCELED && err != EBADF)
				atomic_store_explicit(&e->pending_err, err, memory_order_relaxed);
		}
		if (r <= 0)
			break;
		if (!write && m.msg_controllen) {
			/* Passed descriptors came with this part: they end the
			 * read, and go to the caller. */
			msg->msg_controllen = m.msg_controllen;
			msg->msg_flags |= m.msg_flags & MSG_CTRUNC;
			done += (size_t)r;
			break;
		}
	}
	free(rest);
	return (ssize_t)done;
}

/* A whole call: its first part, then what a stream call goes on for. */
static ssize_t whole_call(int fd, struct msghdr *msg, int flags, bool write, attempt_fn attempt,
			  void *op, size_t control_len)
{
	uint64_t start_ns = 0; /* read if the first part waits */

	if (!write && (flags & MSG_OOB))
		xf__fd_urgent_taken(fd);
	/* A peek leaves the bytes where they were: its length says nothing. */
	size_t want = write || (flags & MSG_PEEK) ? 0 : iov_total(msg->msg_iov, (int)msg->msg_iovlen);
	/* An EPIPE an earlier call met after moving bytes, kept for this one
	 * (the_rest): it comes with SIGPIPE, as the kernel's would. */
	struct xf__fd *e = write ? xf__fd_peek(fd) : NULL;
	bool kept_epipe = e && atomic_load_explicit(&e->pending_err, memory_order_relaxed) == EPIPE;
	ssize_t r = run_at(fd, write ? EPOLLOUT : EPOLLIN, attempt, op, flags & MSG_DONTWAIT,
			   &start_ns, want);

	if (kept_epipe && r < 0 && xf__errno_get() == EPIPE && !(flags & MSG_NOSIGNAL))
		pthread_kill(pthread_self(), SIGPIPE);

	return the_rest(fd, msg, flags, write, r, start_ns, control_len);
}

static ssize_t rw(int fd, const struct iovec *iov, int iovcnt, int flags, bool write)
{
	struct rw_op op = {.iov = iov, .iovcnt = iovcnt, .flags = flags, .write = write};
	struct msghdr m = {.msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt};

	return whole_call(fd, &m, flags, write, rw_attempt, &op, 0);
}

/* A read of nothing: the kernel's answer at once.  read() of 0 bytes never
 * waits (a socket's "SYS5 behaviour", a pipe's too), but the attempt on a
 * socket is a recv, which waits for a byte - and a fiber waited for data. */
ssize_t xf_read(int fd, void *buf, size_t n)
{
	struct iovec v = {buf, n};

	return xf__self_may_wait() && n ? rw(fd, &v, 1, 0, false) : read(fd, buf, n);
}

ssize_t xf_write(int fd, const void *buf, size_t n)
{
	struct iovec v = {(void *)buf, n};

	return xf__self_may_wait() ? rw(fd, &v, 1, 0, true) : write(fd, buf, n);
}

/* readv's and writev's own refusal: on a socket the calls are sendmsg and
 * recvmsg, which would say EMSGSIZE instead. */
static bool iovcnt_bad(int iovcnt)
{
	if (iovcnt >= 0 && iovcnt <= IOV_MAX)
		return false;
	xf__errno_set(EINVAL);
	return true;
}

/* A vector in the page at 0, which the kernel would refuse: EFAULT - or
 * EBADF, which the kernel says first, for a descriptor that is none. */
static bool iov_bad(int fd, const struct iovec *iov, int iovcnt)
{
	if (!iovcnt || !xf__user_ptr_bad(iov))
		return false;
	xf__errno_set(fcntl(fd, F_GETFD) < 0 ? EBADF : EFAULT);
	return true;
}

static bool iov_empty(const struct iovec *iov, int iovcnt)
{
	for (int i = 0; i < iovcnt; i++)
		if (iov[i].iov_len)
			return false;
	return true;
}

ssize_t xf_readv(int fd, const struct iovec *iov, int iovcnt)
{
	if (!xf__self_may_wait())
		return readv(fd, iov, iovcnt);
	if (iovcnt_bad(iovcnt) || iov_bad(fd, iov, iovcnt))
		return -1;
	/* Nothing to read: at once, as xf_read. */
	return iov_empty(iov, iovcnt) ? readv(fd, iov, iovcnt) : rw(fd, iov, iovcnt, 0, false);
}

ssize_t xf_writev(int fd, const struct iovec *iov, int iovcnt)
{
	if (!xf__self_may_wait())
		return writev(fd, iov, iovcnt);
	return iovcnt_bad(iovcnt) || iov_bad(fd, iov, iovcnt) ? -1 : rw(fd, iov, iovcnt, 0, true);
}

ssize_t xf_recv(int fd, void *buf, size_t n, int flags)
{
	struct iovec v = {buf, n};

	return xf__self_may_wait() ? rw(fd, &v, 1, flags, false) : recv(fd, buf, n, flags);
}

ssize_t xf_send(int fd, const void *buf, size_t n, int flags)
{
	struct iovec v = {(void *)buf, n};

	return xf__self_may_wait() ? rw(fd, &v, 1, flags, true) : send(fd, buf, n, flags);
}

ssize_t xf_recvmsg(int fd, struct msghdr *msg, int flags)
{
	struct msg_op op = {msg, flags, false};

	/* The error queue is read at once, empty or not (EAGAIN): nothing
	 * the poller reports as readable fills it. */
	if (!xf__self_may_wait() || (flags & MSG_ERRQUEUE))
		return recvmsg(fd, msg, flags);
	return whole_call(fd, msg, flags, false, msg_attempt, &op, msg->msg_controllen);
}

ssize_t xf_sendmsg(int fd, const struct msghdr *msg, int flags)
{
	struct msg_op op = {(struct msghdr *)msg, flags, true};

	if (!xf__self_may_wait())
		return sendmsg(fd, msg, flags);
	return whole_call(fd, (struct msghdr *)msg, flags, true, msg_attempt, &op, 0);
}

ssize_t xf_recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *addr,
		    socklen_t *len)
{
	struct iovec v = {buf, n};
	struct msghdr m = {.msg_name = addr,
			   .msg_namelen = addr && len ? *len : 0,
			   .msg_iov = &v,
			   .msg_iovlen = 1};
	ssize_t r;

	if (!xf__self_may_wait())
		return recvfrom(fd, buf, n, flags, addr, len);
	r = xf_recvmsg(fd, &m, flags);
	if (r >= 0 && addr && len)
		*len = m.msg_namelen;
	return r;
}

ssize_t xf_sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *addr,
		  socklen_t len)
{
	struct iovec v = {(void *)buf, n};
	struct msghdr m = {.msg_name = (void *)addr, .msg_namelen = len, .msg_iov = &v, .msg_iovlen = 1};

	if (!xf__self_may_wait())
		return sendto(fd, buf, n, flags, addr, len);
	return xf_sendmsg(fd, &m, flags);
}

/* --- accept and connect --- */

struct accept_op {
	struct sockaddr *addr;
	socklen_t *len;
	int flags;
};

static ssize_t accept_attempt(int fd, enum xf__fd_kind kind, void *arg)
{
	struct accept_op *op = arg;

	(void)kind;
	return accept4(fd, op->addr, op->len, op->flags);
}

int xf_accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	struct accept_op op = {addr, len, flags};
	struct xf__fd *e;
	int fl;

	if (!xf__self_may_wait())
		return accept4(fd, addr, len, flags);
	e = xf__fd_get(fd);
	/* accept has no per-call non-blocking form: the listener gets
	 * O_NONBLOCK, once, and keeps it. */
	if (e && !e->nonblock_ours) {
		fl = fcntl(fd, F_GETFL);
		if (fl < 0)
			return -1;
		if (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
			return -1;
		e->nonblock_ours = true;
	}
	return (int)run(fd, EPOLLIN, accept_attempt, &op, false);
}

static ssize_t connected_attempt(int fd, enum xf__fd_kind kind, void *arg)
{
	int *soerr = arg;
	socklen_t len = sizeof(*soerr);

	(void)kind;
	/* Writable means the connection is made, or failed: SO_ERROR says. */
	if (!ready_now(fd, POLLOUT)) {
		xf__errno_set(EAGAIN);
		return -1;
	}
	return getsockopt(fd, SOL_SOCKET, SO_ERROR, soerr, &len);
}

/* A Unix socket whose listener's queue is full: a blocking connect waits
 * for room, a non-blocking one fails with EAGAIN, and nothing tells the
 * connecting socket when room comes.  So the fiber tries again, sleeping
 * 50 us, then twice as long each time up to 10 ms, until the descriptor's
 * write timeout (xf_fd_set_timeout: ETIMEDOUT; SO_SNDTIMEO: EAGAIN, as
 * the blocking call). */
static int unix_connect_retry(int fd, const struct sockaddr *addr, socklen_t len, int *err)
{
	struct xf__fd *e = xf__fd_get(fd);
	uint64_t start = xf__now_ns(), sleep_ns = 50000;
	uint64_t deadline = e ? xf__fd_deadline(e, EPOLLOUT, start) : 0;
	uint64_t so_deadline = 0;
	int r = -1;

	if (e && xf__fd_kind(e, fd) == XF_FD_SOCKET)
		so_deadline = xf__fd_so_deadline(e, EPOLLOUT, start);
	while (*err == EAGAIN) {
		uint64_t now = xf__now_ns();

		if (so_deadline && now >= so_deadline)
			break; /* EAGAIN, as the blocking call */
		if (deadline && now >= deadline) {
			*err = ETIMEDOUT;
			break;
		}
		if (xf__io_cancelled()) {
			*err = ECANCELED; /* xf_shutdown, as for any other wait */
			break;
		}
		xf_sleep_ns(sleep_ns);
		sleep_ns = sleep_ns * 2 > 10000000 ? 10000000 : sleep_ns * 2;
		r = connect(fd, addr, len);
		*err = r < 0 ? xf__errno_get() : 0;
	}
	return r;
}

int xf_connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	int fl, r, soerr = 0, err;

	if (!xf__self_may_wait())
		return connect(fd, addr, len);
	fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return -1;
	if (fl & O_NONBLOCK)
		return connect(fd, addr, len); /* the caller's choice: EINPROGRESS */
	/* Non-blocking for the connect only: the flag is the caller's. */
	if (fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -1;
	r = connect(fd, addr, len);
	err = xf__errno_get();
	if (r < 0 && err == EAGAIN && addr && addr->sa_family == AF_UNIX)
		r = unix_connect_retry(fd, addr, len, &err);
	if (r < 0 && err == EINPROGRESS) {
		r = (int)run(fd, EPOLLOUT, connected_attempt, &soerr, false);
		err = xf__errno_get();
		/* SO_SNDTIMEO ran out: a blocking connect says EINPROGRESS (the
		 * connection goes on), not the EAGAIN of a send. */
		if (r < 0 && err == EAGAIN)
			err = EINPROGRESS;
		if (r == 0 && soerr) {
			r = -1;
			err = soerr;
		}
	}
	fcntl(fd, F_SETFL, fl);
	xf__errno_set(err);
	return r;
}

/* --- poll --- */

/* A look that does not wait.  Descriptors being closed, and those the
 * call could not take (held[i] NULL: closing when it began, their number
 * perhaps reused since), are reported as closed ones (POLLNVAL). */
static int poll_now(struct pollfd *fds, nfds_t n, struct xf__fd **held)
{
	int r = xf__poll_now(fds, n);

	if (r < 0)
		return r;
	for (nfds_t i = 0; i < n; i++) {
		if (fds[i].fd < 0 || held[i])
			continue;
		r += !fds[i].revents;
		fds[i].revents = POLLNVAL;
	}
	return r + xf__fds_closing(fds, n);
}

/* A descriptor the table has no entry for. */
static struct xf__fd untracked;

/* The poll proper: held[] has each descriptor's entry, taken. */
static int poll_held(struct pollfd *fds, nfds_t n, int timeout_ms, struct xf__fd **held,
		     struct xf__io_waiter *w)
{
	uint64_t deadline = 0;
	int r, err;

	if (timeout_ms == 0)
		return poll_now(fds, n, held);
	if (timeout_ms > 0)
		deadline = xf__now_ns() + (uint64_t)timeout_ms * 1000000u;
	for (;;) {
		/* One waiter per descriptor (fd.c's single-descriptor wait,
		 * generalised), each with its entry's events counted before the
		 * poll() that may find none ready. */
		memset(w, 0, (n ? n : 1) * sizeof(*w));
		err = xf__fds_gen(fds, n, w);
		if (err) {
			xf__errno_set(err);
			return -1;
		}
		r = poll_now(fds, n, held);
		if (r != 0 || (deadline && xf__now_ns() >= deadline))
			return r;
		err = xf__fds_wait(fds, n, w, deadline);
		if (err == ETIMEDOUT)
			return 0;
		if (err) {
			xf__errno_set(err);
			return -1;
		}
	}
}

/* A fiber's poll holds each of its descriptors as the other calls hold
 * theirs (xf__fd_enter), so that xf_close waits for it to leave before the
 * number can be reused under it. */
int xf_poll(struct pollfd *fds, nfds_t n, int timeout_ms)
{
	struct xf__io_waiter *w;
	struct xf__fd **held;
	int r;

	if (!xf__self_may_wait())
		return poll(fds, n, timeout_ms); /* interposed: the plain call, here */
	if (n && xf__user_ptr_bad(fds)) {
		xf__errno_set(EFAULT);
		return -1;
	}
	if (xf__cancel_point()) {
		xf__errno_set(ECANCELED);
		return -1;
	}
	w = calloc(n ? n : 1, sizeof(*w));
	held = calloc(n ? n : 1, sizeof(*held));
	if (!w || !held) {
		free(w);
		free(held);
		xf__errno_set(ENOMEM);
		return -1;
	}
	for (nfds_t i = 0; i < n; i++) {
		struct xf__fd *e = fds[i].fd >= 0 ? xf__fd_get(fds[i].fd) : NULL;

		if (!e)
			held[i] = &untracked; /* beyond the table, or no memory: poll() alone */
		else if (!xf__fd_enter(e))
			held[i] = e;
	}
	r = poll_held(fds, n, timeout_ms, held, w);
	for (nfds_t i = 0; i < n; i++)
		if (held[i] && held[i] != &untracked)
			xf__fd_leave(held[i]);
	free(w);
	free(held);
	return r;
}

/* --- timeouts, waits for others' descriptors, close --- */

int xf_fd_set_timeout(int fd, uint64_t read_ns, uint64_t write_ns)
{
	struct xf__fd *e;

	if (fcntl(fd, F_GETFD) < 0)
		return EBADF;
	e = xf__fd_get(fd);
	if (!e)
		return EBADF;
	e->read_timeout_ns = read_ns;
	e->write_timeout_ns = write_ns;
	return 0;
}

int xf_fd_wait(int fd, short events, uint64_t timeout_ns)
{
	struct pollfd p = {.fd = fd, .events = events};
	uint64_t deadline = 0;
	struct xf__fd *e;
	int err;

	if (!(events & (POLLIN | POLLOUT)) || (events & ~(POLLIN | POLLOUT)))
		return EINVAL;
	if (!xf__self_may_wait()) {
		/* ppoll: a timeout to the nanosecond (poll's milliseconds made
		 * 0.5 ms a poll that did not wait), and none for 0 or XF_FOREVER. */
		struct timespec ts = {(time_t)(timeout_ns / 1000000000u),
				      (long)(timeout_ns % 1000000000u)};
		bool forever = !timeout_ns || timeout_ns == XF_FOREVER;
		int r = ppoll(&p, 1, forever ? NULL : &ts, NULL);

		return r > 0 ? ((p.revents & POLLNVAL) ? EBADF : 0) : r == 0 ? ETIMEDOUT : xf__errno_get();
	}
	if (xf__cancel_point())
		return ECANCELED;
	if (timeout_ns)
		deadline = timeout_ns > UINT64_MAX - xf__now_ns() ? 0 : xf__now_ns() + timeout_ns;
	e = xf__fd_get(fd);
	if ((err = xf__fd_enter(e)))
		return err;
	for (;;) {
		uint64_t gen = xf__fd_gen(e); /* before the poll: see xf__fd_wait */
		int r = xf__poll_now(&p, 1);

		if (r > 0) {
			err = (p.revents & POLLNVAL) ? EBADF : 0;
			break;
		}
		if (r < 0) {
			err = xf__errno_get();
			break;
		}
		err = xf__fd_wait(e, fd, (uint32_t)events, deadline, gen);
		if (err)
			break;
	}
	xf__fd_leave(e);
	return err;
}

/* Whatever the runtime knows of fd goes, its waiters waking with EBADF,
 * and the calls on the number leave first when the caller can wait
 * (fd.c): before the number is closed, or reused. */
static void forget(int fd)
{
	struct xf__fd *e = fd >= 0 ? xf__fd_peek(fd) : NULL;

	if (xf__fd_in_use(e))
		xf__fd_retire(e, fd);
}

XF_INTERPOSE(int, close, (int fd));

int xf_close(int fd)
{
	forget(fd);
	return XF_REAL(close)(fd);
}

/* close(), dup2() and dup3() keep the table honest when the program, or a
 * library, ends a descriptor the runtime knows without xf_close, so that a
 * number reused by open() starts afresh. */
XF_INTERPOSE(int, close, (int fd))
{
	return xf_close(fd);
}

XF_INTERPOSE(int, dup2, (int old, int fd))
{
	if (old != fd)
		forget(fd);
	return XF_REAL(dup2)(old, fd);
}

XF_INTERPOSE(int, dup3, (int old, int fd, int flags))
{
	if (old != fd)
		forget(fd);
	return XF_REAL(dup3)(old, fd, flags);
}

/* A descriptor ended behind the runtime's back - by fclose(), whose close
 * glibc makes inside itself, or by a raw system call - leaves its entry
 * as it was, registered, with waiters perhaps.  The number comes back from
 * the next call that makes a descriptor: these calls start its entry
 * afresh (the old waiters wake with EBADF), so that the new descriptor is
 * registered anew instead of waiting for events that never come. */
static int fresh(int fd)
{
	forget(fd);
	return fd;
}

static int fresh_pair(int r, int fd[2])
{
	if (r == 0) {
		fresh(fd[0]);
		fresh(fd[1]);
	}
	return r;
}

XF_INTERPOSE(int, socket, (int domain, int type, int protocol))
{
	return fresh(XF_REAL(socket)(domain, type, protocol));
}

XF_INTERPOSE(int, socketpair, (int domain, int type, int protocol, int fd[2]))
{
	return fresh_pair(XF_REAL(socketpair)(domain, type, protocol, fd), fd);
}

XF_INTERPOSE(int, accept, (int fd, struct sockaddr *addr, socklen_t *len))
{
	return fresh(XF_REAL(accept)(fd, addr, len));
}

XF_INTERPOSE(int, accept4, (int fd, struct sockaddr *addr, socklen_t *len, int flags))
{
	return fresh(XF_REAL(accept4)(fd, addr, len, flags));
}

XF_INTERPOSE(int, pipe, (int fd[2]))
{
	return fresh_pair(XF_REAL(pipe)(fd), fd);
}

XF_INTERPOSE(int, pipe2, (int fd[2], int flags))
{
	return fresh_pair(XF_REAL(pipe2)(fd, flags), fd);
}

XF_INTERPOSE(int, dup, (int fd))
{
	return fresh(XF_REAL(dup)(fd));
}

XF_INTERPOSE(int, eventfd, (unsigned value, int flags))
{
	return fresh(XF_REAL(eventfd)(value, flags));
}

/* open's mode is there only with O_CREAT or O_TMPFILE; passing it always
 * is what glibc's own wrapper does. */
#define OPEN_MODE(flags, mode)                                                                     \
	do {                                                                                       \
		va_list ap_;                                                                       \
		va_start(ap_, flags);                                                              \
		mode = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap_, mode_t) : 0;                  \
		va_end(ap_);                                                                       \
	} while (0)

XF_INTERPOSE(int, open, (const char *path, int flags, ...))
{
	mode_t mode;

	OPEN_MODE(flags, mode);
	return fresh(XF_REAL(open)(path, flags, mode));
}

XF_INTERPOSE(int, open64, (const char *path, int flags, ...))
{
	mode_t mode;

	OPEN_MODE(flags, mode);
	return fresh(XF_REAL(open64)(path, flags, mode));
}

XF_INTERPOSE(int, openat, (int dir, const char *path, int flags, ...))
{
	mode_t mode;

	OPEN_MODE(flags, mode);
	return fresh(XF_REAL(openat)(dir, path, flags, mode));
}

XF_INTERPOSE(int, openat64, (int dir, const char *path, int flags, ...))
{
	mode_t mode;

	OPEN_MODE(flags, mode);
	return fresh(XF_REAL(openat64)(dir, path, flags, mode));
}

/* With _FORTIFY_SOURCE, open and openat without a constant mode go to
 * these (glibc declares them only in fortified builds). */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dir, const char *path, int flags);
int __openat64_2(int dir, const char *path, int flags);
XF_INTERPOSE(int, __open_2, (const char *path, int flags))
{
	return fresh(XF_REAL(__open_2)(path, flags));
}

XF_INTERPOSE(int, __open64_2, (const char *path, int flags))
{
	return fresh(XF_REAL(__open64_2)(path, flags));
}

XF_INTERPOSE(int, __openat_2, (int dir, const char *path, int flags))
{
	return fresh(XF_REAL(__openat_2)(dir, path, flags));
}

XF_INTERPOSE(int, __openat64_2, (int dir, const char *path, int flags))
{
	return fresh(XF_REAL(__openat64_2)(dir, path, flags));
}

/* close_range() ends every descriptor from first to last (unless it only
 * marks them close-on-exec): the runtime's entries among them go first. */
XF_INTERPOSE(int, close_range, (unsigned first, unsigned last, int flags))
{
	if (!(flags & CLOSE_RANGE_CLOEXEC))
		xf__fds_retire_range(first, last);
	return XF_REAL(close_range)(first, last, flags);
}

/* A socket's own timeouts, as the program sets them, bound the fibers'
 * waits as they bound the blocking calls (EAGAIN).  An upper layer on TCP
 * (TCP_ULP: kernel TLS) reads record by record, so that a short read no
 * longer says the socket is empty (xf__fd_read_short). */
XF_INTERPOSE(int, setsockopt,
	     (int fd, int level, int opt, const void *value, socklen_t len))
{
	int r = XF_REAL(setsockopt)(fd, level, opt, value, len);
	struct xf__fd *e;

	if (r == 0 && level == IPPROTO_TCP && opt == TCP_ULP && (e = xf__fd_peek(fd)))
		__atomic_store_n(&e->tcp_stream, false, __ATOMIC_RELAXED);
	if (r == 0 && level == SOL_SOCKET && (opt == SO_RCVTIMEO || opt == SO_SNDTIMEO) &&
	    (e = xf__fd_peek(fd)) && e->kind == XF_FD_SOCKET) {
		uint64_t ns = xf__so_timeout_ns(fd, opt);

		if (opt == SO_RCVTIMEO)
			e->so_rcvtimeo_ns = ns;
		else
			e->so_sndtimeo_ns = ns;
	}
	return r;
}

void xf__io_interpose_resolve(void)
{
	(void)XF_REAL(close);
	(void)XF_REAL(dup2);
	(void)XF_REAL(dup3);
	(void)XF_REAL(socket);
	(void)XF_REAL(socketpair);
	(void)XF_REAL(accept);
	(void)XF_REAL(accept4);
	(void)XF_REAL(pipe);
	(void)XF_REAL(pipe2);
	(void)XF_REAL(dup);
	(void)XF_REAL(eventfd);
	(void)XF_REAL(open);
	(void)XF_REAL(open64);
	(void)XF_REAL(openat);
	(void)XF_REAL(openat64);
	(void)XF_REAL(close_range);
	(void)XF_REAL(__open_2);
	(void)XF_REAL(__open64_2);
	(void)XF_REAL(__openat_2);
	(void)XF_REAL(__openat64_2);
	(void)XF_REAL(setsockopt);
}
