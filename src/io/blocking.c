/*
 * blocking.c - the blocking pool: calls that may block a thread, run on
 * helper threads while the fiber that asked waits.
 *
 * xf_blocking(fn, arg) queues a job and blocks the calling fiber (never its
 * worker); a helper thread runs fn and wakes the fiber.  Helpers are made
 * on demand, while every existing one is busy, up to max_threads
 * (xf_config.blocking_threads), and leave after XF_POOL_IDLE_NS without a
 * job, so the pool shrinks when idle.  At most XF_POOL_QUEUE_PER_THREAD
 * jobs per helper wait in the queue; past that xf_blocking fails with
 * EAGAIN.  Outside a fiber it runs fn inline.
 *
 * The regular-file calls (xf_open, xf_pread, xf_pwrite, xf_fsync) and name
 * resolution (xf_getaddrinfo) go through it; a read or write that the page
 * cache can serve is tried first without blocking (RWF_NOWAIT).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "io/io.h"
#include "runtime/hooks.h"

#define XF_POOL_THREADS_DEFAULT	 64
#define XF_POOL_QUEUE_PER_THREAD 16
#define XF_POOL_IDLE_NS		 (10ull * 1000 * 1000 * 1000)

struct job {
	struct job *next;
	void *(*fn)(void *);
	void *arg;
	void *result;
	struct xf_fiber *fiber;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t more; /* a job was queued, or the pool stops */
	pthread_cond_t gone; /* a helper left */
	struct job *head, *tail;
	unsigned queued, threads, idle, max;
	bool stopping;
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER,
	  .more = PTHREAD_COND_INITIALIZER,
	  .gone = PTHREAD_COND_INITIALIZER};

static void *helper(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&pool.lock);
	for (;;) {
		struct job *j;

		while (!pool.head && !pool.stopping) {
			struct timespec until;
			int err;

			clock_gettime(CLOCK_MONOTONIC, &until);
			until.tv_sec += (time_t)(XF_POOL_IDLE_NS / 1000000000u);
			pool.idle++;
			err = pthread_cond_clockwait(&pool.more, &pool.lock, CLOCK_MONOTONIC, &until);
			pool.idle--;
			if (err == ETIMEDOUT && !pool.head)
				goto leave; /* idle too long: the pool shrinks */
		}
		if (!pool.head)
			goto leave; /* stopping, nothing left */
		j = pool.head;
		pool.head = j->next;
		if (!pool.head)
			pool.tail = NULL;
		pool.queued--;
		pthread_mutex_unlock(&pool.lock);
		j->result = j->fn(j->arg);
		/* The fiber waits for exactly this wake-up: nothing else claims it. */
		if (xf__wait_claim(j->fiber, XF_WAIT_WOKEN))
			xf__wake(j->fiber);
		pthread_mutex_lock(&pool.lock);
	}
leave:
	pool.threads--;
	pthread_cond_broadcast(&pool.gone);
	pthread_mutex_unlock(&pool.lock);
	return NULL;
}

int xf__blocking_start(unsigned max_threads)
{
	pthread_mutex_lock(&pool.lock);
	pool.max = max_threads ? max_threads : XF_POOL_THREADS_DEFAULT;
	pool.stopping = false;
	pthread_mutex_unlock(&pool.lock);
	return 0;
}

void xf__blocking_stop(void)
{
	pthread_mutex_lock(&pool.lock);
	pool.stopping = true;
	pthread_cond_broadcast(&pool.more);
	while (pool.threads)
		pthread_cond_wait(&pool.gone, &pool.lock);
	pthread_mutex_unlock(&pool.lock);
}

static void blocking_fork(enum xf__fork_phase phase)
{
	xf__fork_mutex(&pool.lock, phase);
	if (phase == XF_FORK_CHILD) {
		/* The helpers are gone, and the fibers whose jobs were queued. */
		pthread_cond_init(&pool.more, NULL);
		pthread_cond_init(&pool.gone, NULL);
		pool.head = pool.tail = NULL;
		pool.queued = pool.threads = pool.idle = 0;
	}
}

int xf_blocking(void *(*fn)(void *), void *arg, void **result)
{
	struct xf_fiber *self = xf__self_may_wait();
	struct job j = {.fn = fn, .arg = arg, .fiber = self};
	pthread_t t;
	int err = 0;

	if (!fn)
		return EINVAL;
	if (xf__cancel_point())
		return ECANCELED; /* fn does not run */
	if (!self) {
		void *r = fn(arg); /* not a fiber's call: inline */

		if (result)
			*result = r;
		return 0;
	}
	/* Findable by a helper from the enqueue on: preemption off, WAITING. */
	xf__wait_prepare(self);
	pthread_mutex_lock(&pool.lock);
	if (pool.stopping) {
		err = ECANCELED;
	} else if (pool.queued >= XF_POOL_QUEUE_PER_THREAD * pool.max) {
		err = EAGAIN;
	} else {
		if (pool.tail)
			pool.tail->next = &j;
		else
			pool.head = &j;
		pool.tail = &j;
		pool.queued++;
		if (pool.idle >= pool.queued) {
			pthread_cond_signal(&pool.more);
		} else if (pool.threads < pool.max && pthread_create(&t, NULL, helper, NULL) == 0) {
			pthread_detach(t);
			pool.threads++;
		} else if (!pool.threads) {
			err = EAGAIN; /* no helper, none to be had: take it back */
			pool.head = pool.tail = NULL;
			pool.queued = 0;
		}
	}
	pthread_mutex_unlock(&pool.lock);
	if (err) {
		xf__wait_cancel(self);
		return err;
	}
	XF_STAT_INC(xf__this_worker(), blocking_jobs, 1);
	if (xf__wait_block(self, 0, NULL, XF_WAIT_ON_BLOCKING_CALL, NULL) == XF_WAIT_CANCELED)
		return ECANCELED; /* taken back before a helper took it */
	if (result)
		*result = j.result;
	/* Cancelled while it ran: the result is kept, the call says so. */
	return xf__cancel_pending(self) ? ECANCELED : 0;
}

/* xf_cancel of f, which waits in xf_blocking (sched/cancel.c, through the
 * hook below): its job, if no helper has taken it yet, leaves the queue and
 * the wait ends. */
static void blocking_cancel(struct xf_fiber *f)
{
	struct job **link, *prev = NULL;
	bool won = false;

	pthread_mutex_lock(&pool.lock);
	for (link = &pool.head; *link; prev = *link, link = &(*link)->next) {
		if ((*link)->fiber != f)
			continue;
		if (pool.tail == *link)
			pool.tail = prev;
		*link = (*link)->next;
		pool.queued--;
		won = xf__wait_claim(f, XF_WAIT_CANCELED);
		break;
	}
	pthread_mutex_unlock(&pool.lock);
	if (won)
		xf__wake(f);
}

XF_HOOK(blocking_hook) = {.module = "io/blocking",
			  .fork_order = XF_FORK_ORDER_BLOCKING,
			  .fork = blocking_fork,
			  .cancel_wait_kind = XF_WAIT_ON_BLOCKING_CALL,
			  .cancel_wait = blocking_cancel};

/* --- regular files and names --- */

struct call {
	int fd;
	void *buf;
	size_t n;
	off_t off;
	const char *path;
	int flags;
	mode_t mode;
	ssize_t r;
	int err;
};

static void *do_open(void *arg)
{
	struct call *c = arg;

	c->r = open(c->path, c->flags, c->mode);
	c->err = xf__errno_get();
	return NULL;
}

static void *do_pread(void *arg)
{
	struct call *c = arg;

	c->r = pread(c->fd, c->buf, c->n, c->off);
	c->err = xf__errno_get();
	return NULL;
}

static void *do_pwrite(void *arg)
{
	struct call *c = arg;

	c->r = pwrite(c->fd, c->buf, c->n, c->off);
	c->err = xf__errno_get();
	return NULL;
}

static void *do_fsync(void *arg)
{
	struct call *c = arg;

	c->r = fsync(c->fd);
	c->err = xf__errno_get();
	return NULL;
}

/* Runs a call in the pool; its result, errno set from the helper's. */
static ssize_t pooled(void *(*fn)(void *), struct call *c)
{
	int err = xf_blocking(fn, c, NULL);

	if (err) {
		xf__errno_set(err);
		return -1;
	}
	xf__errno_set(c->err);
	return c->r;
}

int xf_open(const char *path, int flags, ...)
{
	struct call c = {.path = path, .flags = flags};
	va_list ap;

	if (flags & (O_CREAT | O_TMPFILE)) {
		va_start(ap, flags);
		c.mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	return (int)pooled(do_open, &c);
}

ssize_t xf_pread(int fd, void *buf, size_t n, off_t off)
{
	struct iovec v = {buf, n};
	struct call c = {.fd = fd, .buf = buf, .n = n, .off = off};
	ssize_t r;

	/* pread's EINVAL, before anything: to preadv2 -1 is the file's
	 * position, which a negative offset would read at and move. */
	if (off < 0)
		return xf__errno_set(EINVAL), -1;
	r = preadv2(fd, &v, 1, off, RWF_NOWAIT); /* the page cache, if it can */

	if (r >= 0 || (xf__errno_get() != EAGAIN && xf__errno_get() != EOPNOTSUPP))
		return r;
	return pooled(do_pread, &c);
}

ssize_t xf_pwrite(int fd, const void *buf, size_t n, off_t off)
{
	struct iovec v = {(void *)buf, n};
	struct call c = {.fd = fd, .buf = (void *)buf, .n = n, .off = off};
	ssize_t r;

	if (off < 0) /* as xf_pread */
		return xf__errno_set(EINVAL), -1;
	r = pwritev2(fd, &v, 1, off, RWF_NOWAIT);

	if (r >= 0 || (xf__errno_get() != EAGAIN && xf__errno_get() != EOPNOTSUPP))
		return r;
	return pooled(do_pwrite, &c);
}

int xf_fsync(int fd)
{
	struct call c = {.fd = fd};

	return (int)pooled(do_fsync, &c);
}

struct gai {
	const char *node, *service;
	const struct addrinfo *hints;
	struct addrinfo **res;
	int r;
};

static void *do_getaddrinfo(void *arg)
{
	struct gai *g = arg;

	g->r = getaddrinfo(g->node, g->service, g->hints, g->res);
	return NULL;
}

int xf_getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
		   struct addrinfo **res)
{
	struct gai g = {node, service, hints, res, 0};
	int err = xf_blocking(do_getaddrinfo, &g, NULL);

	if (err) {
		xf__errno_set(err);
		return EAI_SYSTEM;
	}
	return g.r;
}
