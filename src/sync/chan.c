/*
 * chan.c - xf_chan: a bounded MPMC channel of fixed-size messages.
 *
 * One spinlock guards the ring and both wait queues.  Two invariants keep
 * every message in order and every waiter served:
 *   - receivers wait only while the ring is empty, senders only while it is
 *     full (or, with capacity 0, until a receiver takes their message);
 *   - a receiver that frees a slot moves the first waiting sender's message
 *     into it at once, so a sender that arrives later never overtakes one
 *     that waits.
 * Messages are copied straight between the two fibers' buffers whenever
 * one side waits; wait_data points at the waiter's message.  The copies
 * use general registers only (common/copy.h): a channel never puts vector
 * state in use on a fiber's behalf.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/copy.h"
#include "sched/sched.h"
#include "sync/sync.h"

struct xf_chan {
	_Atomic uint32_t lock;
	bool closed;
	size_t msg_size, capacity;
	size_t head, count; /* ring position of the oldest message, and how many */
	xf__waitq senders, receivers;
	char *ring;
};

enum mode { BLOCK, TRY, TIMED };

int xf_chan_create(xf_chan **out, size_t msg_size, size_t capacity)
{
	xf_chan *ch;

	if (!out || !msg_size || (capacity && msg_size > SIZE_MAX / capacity))
		return EINVAL;
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return ENOMEM;
	ch->ring = capacity ? malloc(msg_size * capacity) : NULL;
	if (capacity && !ch->ring) {
		free(ch);
		return ENOMEM;
	}
	ch->msg_size = msg_size;
	ch->capacity = capacity;
	*out = ch;
	return 0;
}

bool xf__chan_has_waiters(xf_chan *ch)
{
	bool any;

	xf__spin_lock(&ch->lock);
	any = ch->senders.head || ch->receivers.head;
	xf__spin_unlock(&ch->lock);
	return any;
}

int xf_chan_destroy(xf_chan *ch)
{
	if (!ch)
		return EINVAL;
	xf__spin_lock(&ch->lock);
	if (ch->senders.head || ch->receivers.head) {
		xf__spin_unlock(&ch->lock);
		return EBUSY;
	}
	xf__spin_unlock(&ch->lock);
	free(ch->ring);
	free(ch);
	return 0;
}

static void *slot(xf_chan *ch, size_t i)
{
	return ch->ring + ((ch->head + i) % ch->capacity) * ch->msg_size;
}

static int wait_result(int state)
{
	switch (state) {
	case XF_WAIT_WOKEN: return 0;
	case XF_WAIT_TIMEDOUT: return ETIMEDOUT;
	case XF_WAIT_CANCELED: return ECANCELED;
	default: return EPIPE; /* closed while waiting */
	}
}

/* A call that may wait, made by a cancelled fiber. */
static bool cancelled(enum mode mode, uint64_t timeout_ns)
{
	return (mode == BLOCK || (mode == TIMED && timeout_ns)) && xf__cancel_point();
}

/* The send as far as it can go now, under ch->lock: 0 (done; *wake is a
 * receiver to wake once the lock is dropped, or NULL), EPIPE (closed) or
 * EAGAIN (it would have to wait). */
static int send_locked(xf_chan *ch, const void *msg, struct xf_fiber **wake)
{
	struct xf_fiber *r;

	*wake = NULL;
	if (ch->closed)
		return EPIPE;
	r = xf__waitq_claim(&ch->receivers, XF_WAIT_WOKEN);
	if (r) {
		xf__copy(r->wait_data, msg, ch->msg_size);
		*wake = r;
		return 0;
	}
	if (ch->count < ch->capacity) {
		xf__copy(slot(ch, ch->count++), msg, ch->msg_size);
		return 0;
	}
	return EAGAIN;
}

/* The receive as far as it can go now, under ch->lock; as send_locked,
 * *wake a sender. */
static int recv_locked(xf_chan *ch, void *msg, struct xf_fiber **wake)
{
	struct xf_fiber *s;

	*wake = NULL;
	if (ch->count) {
		xf__copy(msg, slot(ch, 0), ch->msg_size);
		ch->head = (ch->head + 1) % ch->capacity;
		ch->count--;
		/* Refill the slot from the first waiting sender, keeping order. */
		s = xf__waitq_claim(&ch->senders, XF_WAIT_WOKEN);
		if (s)
			xf__copy(slot(ch, ch->count++), s->wait_data, ch->msg_size);
		*wake = s;
		return 0;
	}
	s = xf__waitq_claim(&ch->senders, XF_WAIT_WOKEN); /* capacity 0: take it directly */
	if (s) {
		xf__copy(msg, s->wait_data, ch->msg_size);
		*wake = s;
		return 0;
	}
	return ch->closed ? EPIPE : EAGAIN;
}

static int chan_op(xf_chan *ch, void *msg, bool send, enum mode mode, uint64_t timeout_ns)
{
	struct xf_fiber *self = xf__self_or_thread(), *wake;
	int err;

	if (!ch || !msg)
		return EINVAL;
	if (cancelled(mode, timeout_ns))
		return ECANCELED;
	xf__spin_lock(&ch->lock);
	err = send ? send_locked(ch, msg, &wake) : recv_locked(ch, msg, &wake);
	if (err != EAGAIN || mode == TRY || !self || (mode == TIMED && !timeout_ns)) {
		xf__spin_unlock(&ch->lock);
		if (wake)
			xf__wake(wake);
		return err != EAGAIN ? err : mode == TRY ? EAGAIN : !self ? EPERM : ETIMEDOUT;
	}
	if (xf__preempt_disabled_beyond(1)) { /* 1: the channel's lock */
		xf__spin_unlock(&ch->lock);
		return xf__misuse_preempt_disabled(send ? "xf_chan_send" : "xf_chan_recv");
	}
	self->wait_data = msg;
	return wait_result(xf__waitq_wait(send ? &ch->senders : &ch->receivers, &ch->lock, self,
					  timeout_ns == XF_FOREVER ? 0 : timeout_ns,
					  send ? XF_WAIT_ON_CHAN_SEND : XF_WAIT_ON_CHAN_RECV, ch));
}

static int chan_send(xf_chan *ch, const void *msg, enum mode mode, uint64_t timeout_ns)
{
	return chan_op(ch, (void *)msg, true, mode, timeout_ns);
}

static int chan_recv(xf_chan *ch, void *msg, enum mode mode, uint64_t timeout_ns)
{
	return chan_op(ch, msg, false, mode, timeout_ns);
}

int xf_chan_send(xf_chan *ch, const void *msg)
{
	return chan_send(ch, msg, BLOCK, 0);
}

int xf_chan_try_send(xf_chan *ch, const void *msg)
{
	return chan_send(ch, msg, TRY, 0);
}

int xf_chan_timed_send(xf_chan *ch, const void *msg, uint64_t timeout_ns)
{
	return chan_send(ch, msg, TIMED, timeout_ns);
}

int xf_chan_recv(xf_chan *ch, void *msg)
{
	return chan_recv(ch, msg, BLOCK, 0);
}

int xf_chan_try_recv(xf_chan *ch, void *msg)
{
	return chan_recv(ch, msg, TRY, 0);
}

int xf_chan_timed_recv(xf_chan *ch, void *msg, uint64_t timeout_ns)
{
	return chan_recv(ch, msg, TIMED, timeout_ns);
}

int xf_chan_close(xf_chan *ch)
{
	struct xf_fiber *woken;

	if (!ch)
		return EINVAL;
	xf__spin_lock(&ch->lock);
	if (ch->closed) {
		xf__spin_unlock(&ch->lock);
		return EPIPE;
	}
	ch->closed = true;
	/* Waiting senders fail (their messages are not delivered); waiting
	 * receivers fail too: with receivers waiting the ring is empty. */
	woken = xf__waitq_claim_all(&ch->senders, XF_WAIT_CLOSED, NULL);
	woken = xf__waitq_claim_all(&ch->receivers, XF_WAIT_CLOSED, woken);
	xf__spin_unlock(&ch->lock);
	xf__wake_list(woken);
	return 0;
}

/* --- select --- */

/*
 * xf_select waits on several channel operations and performs exactly one.
 * First every case is tried, one channel lock at a time, in a random order
 * (a fresh permutation each call, as Go's select: when several are ready,
 * each is as likely as the others - a random first case tried in turn
 * would favour a ready case that follows cases not ready).  Then, if it may
 * wait, it takes every channel's lock at once, in address order (no other
 * path holds two), tries again, and queues one stand-in per case on its
 * channel: a fiber structure marked XF_FIBER_F_SELECT whose wait_object is
 * the selecting fiber.  A sender or receiver that claims a stand-in claims
 * the fiber (waitq.c), so the first case to proceed wins and the others
 * find it claimed; the fiber then unlinks the rest, one lock at a time.
 * The channel code needs nothing else: a stand-in's wait_data is its case's
 * message, as a waiting fiber's is.
 */
#define SELECT_ON_STACK	      8	 /* cases whose stand-ins fit on the stack */
#define SELECT_ORDER_ON_STACK 64 /* cases whose order fits on the stack */

static unsigned select_random(void)
{
	static __thread uint64_t state;

	if (!state)
		state = (uintptr_t)&state ^ xf__now_ns();
	state ^= state << 13;
	state ^= state >> 7;
	state ^= state << 17;
	return (unsigned)(state >> 32);
}

static int try_case(xf_select_case *c, struct xf_fiber **wake)
{
	return c->op == XF_SELECT_SEND ? send_locked(c->chan, c->msg, wake)
				       : recv_locked(c->chan, c->msg, wake);
}

/* A random permutation of 0..n-1 into order (Fisher-Yates). */
static void select_shuffle(size_t *order, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		size_t j = select_random() % (i + 1);

		if (j != i)
			order[i] = order[j];
		order[j] = i;
	}
}

/* Tries the cases in the given order, each under its own lock (locked: all
 * taken already, and *wake - the fiber the case's partner is - left to the
 * caller to wake once they are dropped).  The index of the case that
 * proceeded, with its result in it; or n. */
static size_t try_cases(xf_select_case *cases, size_t n, const size_t *order, bool locked,
			struct xf_fiber **wake)
{
	*wake = NULL;
	for (size_t k = 0; k < n; k++) {
		size_t i = order[k];
		int r;

		if (!cases[i].chan)
			continue;
		if (!locked)
			xf__spin_lock(&cases[i].chan->lock);
		r = try_case(&cases[i], wake);
		if (!locked)
			xf__spin_unlock(&cases[i].chan->lock);
		if (r == EAGAIN)
			continue;
		cases[i].result = r;
		if (!locked && *wake) {
			xf__wake(*wake);
			*wake = NULL;
		}
		return i;
	}
	return n;
}

/* The distinct channels of the cases, in address order, into chans; their
 * number. */
static size_t select_channels(xf_select_case *cases, size_t n, xf_chan **chans)
{
	size_t m = 0;

	for (size_t i = 0; i < n; i++) {
		size_t j;

		if (!cases[i].chan)
			continue;
		for (j = 0; j < m && chans[j] != cases[i].chan; j++)
			;
		if (j == m)
			chans[m++] = cases[i].chan;
	}
	for (size_t i = 1; i < m; i++) /* few channels: insertion sort */
		for (size_t j = i; j > 0 && (uintptr_t)chans[j - 1] > (uintptr_t)chans[j]; j--) {
			xf_chan *t = chans[j];
			chans[j] = chans[j - 1];
			chans[j - 1] = t;
		}
	return m;
}

static int select_wait(xf_select_case *cases, size_t n, uint64_t timeout_ns, size_t *chosen,
		       const size_t *order, struct xf_fiber *self)
{
	struct xf_fiber on_stack[SELECT_ON_STACK], *nodes = on_stack, *wake;
	xf_chan *chans_on_stack[SELECT_ON_STACK], **chans = chans_on_stack;
	size_t m, i;
	int state, err = 0;

	if (n > SELECT_ON_STACK) {
		nodes = aligned_alloc(_Alignof(struct xf_fiber), n * sizeof(*nodes));
		chans = malloc(n * sizeof(*chans));
		if (!nodes || !chans) {
			free(nodes == on_stack ? NULL : nodes);
			free(chans == chans_on_stack ? NULL : chans);
			return ENOMEM;
		}
	}
	m = select_channels(cases, n, chans);
	for (size_t j = 0; j < m; j++)
		xf__spin_lock(&chans[j]->lock);
	/* Under every lock: one more try, then the stand-ins, atomically. */
	i = try_cases(cases, n, order, true, &wake);
	if (i == n) {
		atomic_store_explicit(&self->wait_state, XF_WAIT_WAITING, memory_order_relaxed);
		self->wait_timed = true; /* claimed by compare-and-swap, case by case */
		self->wait_data = NULL;
		for (size_t k = 0; k < n; k++) {
			struct xf_fiber *node = &nodes[k];

			if (!cases[k].chan)
				continue;
			memset(node, 0, sizeof(*node));
			node->flags = XF_FIBER_F_SELECT;
			node->wait_object = self;
			node->wait_data = cases[k].msg;
			node->fork_gen = xf__rt.fork_gen;
			node->wait_timed = true;
			xf__waitq_push(cases[k].op == XF_SELECT_SEND ? &cases[k].chan->senders
								     : &cases[k].chan->receivers,
				       node);
		}
	}
	for (size_t j = m; j-- > 0;)
		xf__spin_unlock_raw(&chans[j]->lock);
	/* One level of the locks' preemption-disable is left for the wait. */
	for (size_t j = 1; j < m; j++)
		xf__preempt_enable_no_resched();
	if (i < n) {
		xf__preempt_enable();
		if (wake)
			xf__wake(wake);
		goto out;
	}
	state = xf__wait_block(self, timeout_ns == XF_FOREVER ? 0 : timeout_ns, NULL,
			       XF_WAIT_ON_SELECT, cases);
	i = n; /* timed out or cancelled: no case won */
	if (state == XF_WAIT_WOKEN || state == XF_WAIT_CLOSED)
		i = (size_t)((struct xf_fiber *)self->wait_data - nodes);
	/* Every other stand-in off its queue before they go.  Not the
	 * winner's channel: its stand-in is off already, and nothing of this
	 * select keeps that channel alive now - the fiber that woke us may
	 * have destroyed it.  The others cannot be: a queued stand-in makes
	 * xf_chan_destroy fail with EBUSY. */
	for (size_t k = 0; k < n; k++) {
		if (!cases[k].chan || k == i)
			continue;
		xf__spin_lock(&cases[k].chan->lock);
		if (nodes[k].wait_queue)
			xf__waitq_remove(nodes[k].wait_queue, &nodes[k]);
		xf__spin_unlock(&cases[k].chan->lock);
	}
	if (i < n)
		cases[i].result = state == XF_WAIT_WOKEN ? 0 : EPIPE;
	else
		err = state == XF_WAIT_TIMEDOUT ? ETIMEDOUT : ECANCELED;
out:
	if (!err)
		*chosen = i;
	if (nodes != on_stack) {
		free(nodes);
		free(chans);
	}
	return err;
}

int xf_select(xf_select_case *cases, size_t n, uint64_t timeout_ns, size_t *chosen)
{
	struct xf_fiber *self;
	size_t active = 0, i, order_on_stack[SELECT_ORDER_ON_STACK], *order = order_on_stack;
	int err;

	if (!chosen || (n && !cases))
		return EINVAL;
	for (i = 0; i < n; i++) {
		if (!cases[i].chan)
			continue;
		if ((cases[i].op != XF_SELECT_SEND && cases[i].op != XF_SELECT_RECV) || !cases[i].msg)
			return EINVAL;
		active++;
	}
	if (timeout_ns && xf__cancel_point())
		return ECANCELED;
	if (!active) {
		/* Nothing to wait for but the time: select {} would be forever. */
		if (timeout_ns == XF_FOREVER)
			return EINVAL;
		if (timeout_ns) {
			if (xf__self())
				return xf_sleep_ns(timeout_ns) ? ECANCELED : ETIMEDOUT;
			struct timespec ts = {(time_t)(timeout_ns / 1000000000u),
					      (long)(timeout_ns % 1000000000u)};
			while (nanosleep(&ts, &ts))
				;
		}
		return ETIMEDOUT;
	}
	if (n > SELECT_ORDER_ON_STACK && !(order = malloc(n * sizeof(*order))))
		return ENOMEM;
	select_shuffle(order, n);
	{
		struct xf_fiber *none;

		i = try_cases(cases, n, order, false, &none);
	}
	if (i < n) {
		*chosen = i;
		err = 0;
	} else if (!timeout_ns) {
		err = ETIMEDOUT;
	} else if (!(self = xf__self_or_thread())) {
		err = EPERM;
	} else if (xf__preempt_disabled_beyond(0)) {
		err = xf__misuse_preempt_disabled("xf_select");
	} else {
		err = select_wait(cases, n, timeout_ns, chosen, order, self);
	}
	if (order != order_on_stack)
		free(order);
	return err;
}
