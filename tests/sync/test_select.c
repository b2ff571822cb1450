/*
 * test_select.c - xf_select: one case performed, fairly, with timeouts,
 * closed channels, rendezvous between two selects, many cases, plain
 * threads, and no message lost or taken twice under load.
 *
 * usage: test_select CASE WORKERS
 *   basic    readiness, timeouts, closed channels, bad input
 *   fair     two always-ready cases are chosen about equally
 *   pair     a select that sends meets a select that receives on an
 *            unbuffered channel, again and again, from both sides
 *   stress   producers select over several channels, consumers select
 *            over them too, with a timeout case and cancels on the side:
 *            every message arrives exactly once
 *   thread   plain threads select beside fibers
 *   destroy  the channel a select was woken on is destroyed as it returns
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"
#include "xfiber.h"

static unsigned nworkers;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static xf_select_case send_case(xf_chan *ch, long *v)
{
	return (xf_select_case){.chan = ch, .op = XF_SELECT_SEND, .msg = v};
}

static xf_select_case recv_case(xf_chan *ch, long *v)
{
	return (xf_select_case){.chan = ch, .op = XF_SELECT_RECV, .msg = v};
}

/* --- basic --- */

static void test_basic(void)
{
	xf_chan *a, *b;
	long x = 1, y = 0;
	size_t chosen = 99;
	uint64_t t0;

	CHECK_ERR(xf_chan_create(&a, sizeof(long), 1), 0);
	CHECK_ERR(xf_chan_create(&b, sizeof(long), 0), 0);
	xf_select_case c[3] = {recv_case(a, &y), recv_case(b, &y), {0}};

	/* Nothing ready: a try, and a timed wait. */
	CHECK_ERR(xf_select(c, 2, 0, &chosen), ETIMEDOUT);
	t0 = now_ns();
	CHECK_ERR(xf_select(c, 2, 2000000, &chosen), ETIMEDOUT);
	CHECK(now_ns() - t0 >= 2000000);
	/* A send case proceeds into the buffer. */
	c[2] = send_case(a, &x);
	CHECK_ERR(xf_select(c + 2, 1, 0, &chosen), 0);
	CHECK(chosen == 0 && c[2].result == 0);
	CHECK_ERR(xf_select(c, 2, XF_FOREVER, &chosen), 0);
	CHECK(chosen == 0 && y == 1 && c[0].result == 0);
	/* NULL channels are skipped; with nothing else, only the timeout. */
	c[1].chan = NULL;
	c[0].chan = NULL;
	CHECK_ERR(xf_select(c, 2, 1000, &chosen), ETIMEDOUT);
	CHECK_ERR(xf_select(c, 2, XF_FOREVER, &chosen), EINVAL);
	CHECK_ERR(xf_select(NULL, 0, 0, &chosen), ETIMEDOUT);
	/* Bad input. */
	c[0] = recv_case(a, NULL);
	CHECK_ERR(xf_select(c, 1, 0, &chosen), EINVAL);
	c[0] = (xf_select_case){.chan = a, .op = 3, .msg = &y};
	CHECK_ERR(xf_select(c, 1, 0, &chosen), EINVAL);
	c[0] = recv_case(a, &y);
	CHECK_ERR(xf_select(c, 1, 0, NULL), EINVAL);
	CHECK_ERR(xf_select(NULL, 1, 0, &chosen), EINVAL);
	/* A closed channel is ready: a receive drains first, then EPIPE. */
	CHECK_ERR(xf_chan_send(a, &x), 0);
	CHECK_ERR(xf_chan_close(a), 0);
	CHECK_ERR(xf_select(c, 1, XF_FOREVER, &chosen), 0);
	CHECK(c[0].result == 0 && y == 1);
	CHECK_ERR(xf_select(c, 1, XF_FOREVER, &chosen), 0);
	CHECK(chosen == 0 && c[0].result == EPIPE);
	c[0] = send_case(a, &x);
	CHECK_ERR(xf_select(c, 1, XF_FOREVER, &chosen), 0);
	CHECK(c[0].result == EPIPE);
	CHECK_ERR(xf_chan_destroy(a), 0);
	CHECK_ERR(xf_chan_destroy(b), 0);
}

/* --- fair --- */

static void test_fair(void)
{
	xf_chan *a, *b, *idle1, *idle2;
	long v = 5, y;
	unsigned count[4] = {0, 0, 0, 0};

	CHECK_ERR(xf_chan_create(&a, sizeof(long), 4), 0);
	CHECK_ERR(xf_chan_create(&b, sizeof(long), 4), 0);
	CHECK_ERR(xf_chan_create(&idle1, sizeof(long), 0), 0);
	CHECK_ERR(xf_chan_create(&idle2, sizeof(long), 0), 0);
	for (int i = 0; i < 20000; i++) {
		/* Two always ready, side by side, then two never ready: trying
		 * the cases in turn from a random start would pick a whenever
		 * the start is a or one of the idle ones - 3 times in 4. */
		xf_select_case c[4] = {recv_case(a, &y), recv_case(b, &y), recv_case(idle1, &y),
				       recv_case(idle2, &y)};
		size_t chosen;

		while (xf_chan_try_send(a, &v) == 0)
			;
		while (xf_chan_try_send(b, &v) == 0)
			;
		CHECK_ERR(xf_select(c, 4, XF_FOREVER, &chosen), 0);
		count[chosen]++;
	}
	printf("fair: %u and %u\n", count[0], count[1]);
	CHECK(count[2] == 0 && count[3] == 0);
	if (count[0] < 9000 || count[1] < 9000)
		xf_test_fail("an always-ready case was chosen %u times of 20000",
			     count[0] < count[1] ? count[0] : count[1]);
	while (xf_chan_try_recv(a, &y) == 0 || xf_chan_try_recv(b, &y) == 0)
		;
	CHECK_ERR(xf_chan_destroy(a), 0);
	CHECK_ERR(xf_chan_destroy(b), 0);
	CHECK_ERR(xf_chan_destroy(idle1), 0);
	CHECK_ERR(xf_chan_destroy(idle2), 0);
}

/* --- destroy --- */

/* A select woken by a send returns; the sender, seeing nobody wait any
 * more, destroys the channel at once.  The select must not touch that
 * channel after its wake (ASan, in make check, sees it if it does). */
static xf_chan *d_idle;

static void *destroy_selector(void *arg)
{
	long x, y;
	size_t chosen;
	xf_select_case c[2] = {recv_case(d_idle, &x), recv_case(arg, &y)};

	CHECK_ERR(xf_select(c, 2, XF_FOREVER, &chosen), 0);
	CHECK(chosen == 1 && y == 7);
	return NULL;
}

static void *destroy_sender(void *arg)
{
	for (long i = 0; i < (long)(intptr_t)arg; i++) {
		xf_chan *c;
		xf_fiber *f;
		long v = 7;

		CHECK_ERR(xf_chan_create(&c, sizeof(long), 0), 0);
		CHECK_ERR(xf_spawn(&f, destroy_selector, c, NULL), 0);
		CHECK_ERR(xf_chan_send(c, &v), 0);
		CHECK_ERR(xf_chan_destroy(c), 0);
		CHECK_ERR(xf_join(f, NULL), 0);
	}
	return NULL;
}

static void test_destroy(void)
{
	pthread_t t;

	CHECK_ERR(xf_chan_create(&d_idle, sizeof(long), 0), 0);
	destroy_sender((void *)(intptr_t)3000); /* from a fiber */
	CHECK(pthread_create(&t, NULL, destroy_sender, (void *)(intptr_t)3000) == 0);
	CHECK(pthread_join(t, NULL) == 0); /* from a plain thread */
	CHECK_ERR(xf_chan_destroy(d_idle), 0);
}

/* --- pair --- */

#define PAIRS 20000
static xf_chan *rv, *never, *never2; /* each side's own, which nobody serves */

static void *pair_sender(void *arg)
{
	long never_v = 0;

	(void)arg;
	for (long i = 0; i < PAIRS; i++) {
		xf_select_case c[2] = {recv_case(never2, &never_v), send_case(rv, &i)};
		size_t chosen;

		CHECK_ERR(xf_select(c, 2, XF_FOREVER, &chosen), 0);
		CHECK(chosen == 1 && c[1].result == 0);
	}
	return NULL;
}

static void test_pair(void)
{
	xf_fiber *s;
	long v, never_v = 0;

	CHECK_ERR(xf_chan_create(&rv, sizeof(long), 0), 0);
	CHECK_ERR(xf_chan_create(&never, sizeof(long), 0), 0);
	CHECK_ERR(xf_chan_create(&never2, sizeof(long), 0), 0);
	CHECK_ERR(xf_spawn(&s, pair_sender, NULL, NULL), 0);
	for (long i = 0; i < PAIRS; i++) {
		xf_select_case c[2] = {send_case(never, &never_v), recv_case(rv, &v)};
		size_t chosen;

		CHECK_ERR(xf_select(c, 2, XF_FOREVER, &chosen), 0);
		CHECK(chosen == 1 && v == i);
	}
	CHECK_ERR(xf_join(s, NULL), 0);
	CHECK_ERR(xf_chan_destroy(rv), 0);
	CHECK_ERR(xf_chan_destroy(never), 0);
	CHECK_ERR(xf_chan_destroy(never2), 0);
}

/* --- stress --- */

#define CHANS	  12 /* more than fit on the stack: the heap path */
#define PRODUCERS 4
#define CONSUMERS 4
#define PER_PRODUCER 5000

static xf_chan *chans[CHANS];
static atomic_long received_sum, received_n;
static atomic_int producers_left;
static xf_chan *done_ch;

static void *producer(void *arg)
{
	const long base = (long)(intptr_t)arg * PER_PRODUCER;

	for (long i = 0; i < PER_PRODUCER; i++) {
		long v = base + i;
		xf_select_case c[CHANS];
		size_t chosen;
		int err;

		for (int k = 0; k < CHANS; k++)
			c[k] = send_case(chans[k], &v);
		while ((err = xf_select(c, CHANS, 100000, &chosen)) == ETIMEDOUT)
			;
		CHECK_ERR(err, 0);
		CHECK_ERR(c[chosen].result, 0);
	}
	if (atomic_fetch_sub(&producers_left, 1) == 1)
		CHECK_ERR(xf_chan_close(done_ch), 0);
	return NULL;
}

static void *consumer(void *arg)
{
	(void)arg;
	for (;;) {
		long v, dummy;
		xf_select_case c[CHANS + 1];
		size_t chosen;
		int err;

		for (int k = 0; k < CHANS; k++)
			c[k] = recv_case(chans[k], &v);
		c[CHANS] = recv_case(done_ch, &dummy);
		err = xf_select(c, CHANS + 1, 1000000, &chosen);
		if (err == ETIMEDOUT)
			continue;
		CHECK_ERR(err, 0);
		if (chosen == CHANS) {
			/* Producers are done: drain what is left, then leave. */
			bool any = true;

			while (any) {
				any = false;
				for (int k = 0; k < CHANS; k++)
					while (xf_chan_try_recv(chans[k], &v) == 0) {
						atomic_fetch_add(&received_sum, v);
						atomic_fetch_add(&received_n, 1);
						any = true;
					}
			}
			return NULL;
		}
		CHECK_ERR(c[chosen].result, 0);
		atomic_fetch_add(&received_sum, v);
		atomic_fetch_add(&received_n, 1);
	}
}

static void test_stress(void)
{
	xf_fiber *p[PRODUCERS], *c[CONSUMERS];
	const long n = (long)PRODUCERS * PER_PRODUCER;

	for (int k = 0; k < CHANS; k++)
		CHECK_ERR(xf_chan_create(&chans[k], sizeof(long), k % 3), 0);
	CHECK_ERR(xf_chan_create(&done_ch, sizeof(long), 0), 0);
	atomic_store(&producers_left, PRODUCERS);
	for (int i = 0; i < CONSUMERS; i++)
		CHECK_ERR(xf_spawn(&c[i], consumer, NULL, NULL), 0);
	for (int i = 0; i < PRODUCERS; i++)
		CHECK_ERR(xf_spawn(&p[i], producer, (void *)(intptr_t)i, NULL), 0);
	for (int i = 0; i < PRODUCERS; i++)
		CHECK_ERR(xf_join(p[i], NULL), 0);
	for (int i = 0; i < CONSUMERS; i++)
		CHECK_ERR(xf_join(c[i], NULL), 0);
	if (atomic_load(&received_n) != n || atomic_load(&received_sum) != n * (n - 1) / 2)
		xf_test_fail("%ld of %ld messages received, sum %ld", atomic_load(&received_n), n,
			     atomic_load(&received_sum));
	for (int k = 0; k < CHANS; k++)
		CHECK_ERR(xf_chan_destroy(chans[k]), 0);
	CHECK_ERR(xf_chan_destroy(done_ch), 0);
}

/* --- thread --- */

static xf_chan *t_in, *t_out;

static void *thread_selects(void *arg)
{
	(void)arg;
	for (long i = 0; i < 2000; i++) {
		long v;
		xf_select_case c[2] = {recv_case(t_in, &v), recv_case(never, &v)};
		size_t chosen;

		CHECK_ERR(xf_select(c, 2, XF_FOREVER, &chosen), 0);
		CHECK(chosen == 0 && v == i);
		c[0] = send_case(t_out, &v);
		CHECK_ERR(xf_select(c, 1, XF_FOREVER, &chosen), 0);
	}
	return NULL;
}

static void test_thread(void)
{
	pthread_t t;

	CHECK_ERR(xf_chan_create(&t_in, sizeof(long), 0), 0);
	CHECK_ERR(xf_chan_create(&t_out, sizeof(long), 1), 0);
	CHECK_ERR(xf_chan_create(&never, sizeof(long), 0), 0);
	CHECK(pthread_create(&t, NULL, thread_selects, NULL) == 0);
	for (long i = 0; i < 2000; i++) {
		long v;

		CHECK_ERR(xf_chan_send(t_in, &i), 0);
		CHECK_ERR(xf_chan_recv(t_out, &v), 0);
		CHECK(v == i);
	}
	CHECK(pthread_join(t, NULL) == 0);
	CHECK_ERR(xf_chan_destroy(t_in), 0);
	CHECK_ERR(xf_chan_destroy(t_out), 0);
	CHECK_ERR(xf_chan_destroy(never), 0);
}

int main(int argc, char **argv)
{
	if (argc != 3)
		xf_test_fail("usage: test_select basic|fair|pair|stress|thread|destroy WORKERS");
	nworkers = (unsigned)atoi(argv[2]);
	alarm(50);
	CHECK_ERR(xf_init(&(xf_config){.workers = nworkers, .slice_us = 100}), 0);
	if (!strcmp(argv[1], "basic"))
		test_basic();
	else if (!strcmp(argv[1], "fair"))
		test_fair();
	else if (!strcmp(argv[1], "pair"))
		test_pair();
	else if (!strcmp(argv[1], "stress"))
		test_stress();
	else if (!strcmp(argv[1], "thread"))
		test_thread();
	else if (!strcmp(argv[1], "destroy"))
		test_destroy();
	else
		xf_test_fail("unknown case %s", argv[1]);
	CHECK_ERR(xf_shutdown(), 0);
	printf("%s: ok\n", argv[1]);
	return 0;
}
