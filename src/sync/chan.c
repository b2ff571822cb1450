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

#include "common/copy.h"
#include "sched/sched.h"

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

static int chan_send(xf_chan *ch, const void *msg, enum mode mode, uint64_t timeout_ns)
{
	struct xf_fiber *self = xf__self_or_thread();
	struct xf_fiber *r;

	if (!ch || !msg)
		return EINVAL;
	if (cancelled(mode, timeout_ns))
		return ECANCELED;
	xf__spin_lock(&ch->lock);
	if (ch->closed) {
		xf__spin_unlock(&ch->lock);
		return EPIPE;
	}
	r = xf__waitq_claim(&ch->receivers, XF_WAIT_WOKEN);
	if (r) {
		xf__copy(r->wait_data, msg, ch->msg_size);
		xf__spin_unlock(&ch->lock);
		xf__wake(r);
		return 0;
	}
	if (ch->count < ch->capacity) {
		xf__copy(slot(ch, ch->count++), msg, ch->msg_size);
		xf__spin_unlock(&ch->lock);
		return 0;
	}
	if (mode == TRY || !self || (mode == TIMED && !timeout_ns)) {
		xf__spin_unlock(&ch->lock);
		return mode == TRY ? EAGAIN : !self ? EPERM : ETIMEDOUT;
	}
	if (xf__preempt_disabled_beyond(1)) { /* 1: the channel's lock */
		xf__spin_unlock(&ch->lock);
		return xf__misuse_preempt_disabled("xf_chan_send");
	}
	self->wait_data = (void *)msg;
	return wait_result(xf__waitq_wait(&ch->senders, &ch->lock, self, timeout_ns,
					  XF_WAIT_ON_CHAN_SEND, ch));
}

static int chan_recv(xf_chan *ch, void *msg, enum mode mode, uint64_t timeout_ns)
{
	struct xf_fiber *self = xf__self_or_thread();
	struct xf_fiber *s;

	if (!ch || !msg)
		return EINVAL;
	if (cancelled(mode, timeout_ns))
		return ECANCELED;
	xf__spin_lock(&ch->lock);
	if (ch->count) {
		xf__copy(msg, slot(ch, 0), ch->msg_size);
		ch->head = (ch->head + 1) % ch->capacity;
		ch->count--;
		/* Refill the slot from the first waiting sender, keeping order. */
		s = xf__waitq_claim(&ch->senders, XF_WAIT_WOKEN);
		if (s)
			xf__copy(slot(ch, ch->count++), s->wait_data, ch->msg_size);
		xf__spin_unlock(&ch->lock);
		if (s)
			xf__wake(s);
		return 0;
	}
	s = xf__waitq_claim(&ch->senders, XF_WAIT_WOKEN); /* capacity 0: take it directly */
	if (s) {
		xf__copy(msg, s->wait_data, ch->msg_size);
		xf__spin_unlock(&ch->lock);
		xf__wake(s);
		return 0;
	}
	if (ch->closed || mode == TRY || !self || (mode == TIMED && !timeout_ns)) {
		xf__spin_unlock(&ch->lock);
		return ch->closed ? EPIPE : mode == TRY ? EAGAIN : !self ? EPERM : ETIMEDOUT;
	}
	if (xf__preempt_disabled_beyond(1)) { /* 1: the channel's lock */
		xf__spin_unlock(&ch->lock);
		return xf__misuse_preempt_disabled("xf_chan_recv");
	}
	self->wait_data = msg;
	return wait_result(xf__waitq_wait(&ch->receivers, &ch->lock, self, timeout_ns,
					  XF_WAIT_ON_CHAN_RECV, ch));
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
