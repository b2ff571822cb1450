/*
 * thread.c - plain threads that wait on the runtime's objects.
 *
 * A thread that is not a worker may block in a semaphore, a channel, a
 * select, a wait group, a mutex, a condition variable or a join, as a
 * fiber does - only its own thread sleeps, never a worker.  It waits
 * through a stand-in: a fiber structure of its own in thread-local storage
 * (XF_FIBER_F_THREAD), which wait queues link, wakers claim and time-outs
 * race exactly as they do a fiber's.  Only the two ends differ: the wait
 * is a futex wait on the stand-in's thread_woken, and the wake-up a store
 * of 1 there and a futex wake.
 *
 * The stand-in lives as long as its thread, but the thread may return from
 * its wait and go on as soon as it sees the 1: the waker stores it last,
 * and after it touches only the futex word's address, in the kernel, which
 * at worst wakes some later waiter on that address spuriously, as futex
 * waits allow.  A time-out claims the wait as a timer would; one that loses
 * the claim to a waker waits for that waker's 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sched/sched.h"

static __thread struct xf_fiber proxy __attribute__((aligned(64)));

struct xf_fiber *xf__thread_proxy(void)
{
	struct xf_fiber *p = &proxy;

	p->flags = XF_FIBER_F_THREAD;
	p->fork_gen = xf__rt.fork_gen; /* a wait queue's claim checks it */
	return p;
}

static long futex(_Atomic int *word, int op, int val, const struct timespec *t)
{
	return syscall(SYS_futex, word, op, val, t, NULL, FUTEX_BITSET_MATCH_ANY);
}

int xf__thread_block(struct xf_fiber *self, uint64_t timeout_ns, _Atomic uint32_t *unlock)
{
	struct timespec deadline;
	bool timed = false;
	int state;

	if (timeout_ns && timeout_ns != XF_FOREVER) {
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		if ((uint64_t)deadline.tv_sec + timeout_ns / 1000000000u < (uint64_t)INT64_MAX / 2) {
			deadline.tv_sec += (time_t)(timeout_ns / 1000000000u);
			deadline.tv_nsec += (long)(timeout_ns % 1000000000u);
			if (deadline.tv_nsec >= 1000000000) {
				deadline.tv_sec++;
				deadline.tv_nsec -= 1000000000;
			}
			timed = true;
		}
	}
	if (unlock)
		xf__spin_unlock_raw(unlock);
	xf__preempt_enable(); /* the caller's disable: nothing to preempt here */
	while (!atomic_load_explicit(&self->thread_woken, memory_order_acquire)) {
		long r = futex(&self->thread_woken, FUTEX_WAIT_BITSET_PRIVATE, 0,
			       timed ? &deadline : NULL);

		if (r && errno == ETIMEDOUT && timed) {
			if (xf__wait_claim(self, XF_WAIT_TIMEDOUT))
				break; /* nobody else will end this wait */
			timed = false; /* a waker won: its wake-up comes */
		}
	}
	state = atomic_load_explicit(&self->wait_state, memory_order_acquire);
	atomic_store_explicit(&self->thread_woken, 0, memory_order_relaxed); /* for the next wait */
	return state;
}

void xf__thread_wake(struct xf_fiber *f)
{
	atomic_store_explicit(&f->thread_woken, 1, memory_order_release);
	futex(&f->thread_woken, FUTEX_WAKE_PRIVATE, 1, NULL);
}
