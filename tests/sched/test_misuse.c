/*
 * test_misuse.c - small misuses of the API, each with its defined outcome.
 *
 * usage: test_misuse CASE
 *   forever     a timeout of UINT64_MAX (or one whose deadline would pass
 *               the clock's range) waits forever, not not at all
 *   destroy     destroying a semaphore or channel right after a timed
 *               waiter timed out is safe: EBUSY until that fiber has left
 *               it, never a use after free (the ASan build checks).  Half
 *               the rounds force the moment: the timeout is claimed as its
 *               timer would claim it, and the post and the destroy come
 *               before the waiter runs again
 *   deadlk      blocking or yielding with preemption disabled: EDEADLK and
 *               the caller's critical section intact (XFIBER_MISUSE=return),
 *               or an abort that names the call (the default of debug
 *               builds)
 *   steal       a steal request sent to a worker that went idle is
 *               answered, so the thief can ask again
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "preempt/preempt.h"
#include "sched/sched.h"
#include "sync/sync.h"
#include "testlib.h"
#include "xfiber.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* --- forever --- */

static xf_sem sem;
static xf_chan *chan;
static xf_mutex mtx;
static xf_cond cond;
static atomic_int posted;

static void *poster(void *arg)
{
	long v = 1;

	(void)arg;
	xf_sleep_ns(20 * 1000000);
	atomic_store(&posted, 1);
	CHECK_ERR(xf_sem_post(&sem), 0);
	CHECK_ERR(xf_chan_send(chan, &v), 0);
	xf_mutex_lock(&mtx);
	CHECK_ERR(xf_cond_signal(&cond), 0);
	xf_mutex_unlock(&mtx);
	return NULL;
}

static void test_forever(void)
{
	const uint64_t forevers[] = {UINT64_MAX, UINT64_MAX - 12345};
	xf_fiber *f;
	long v;

	CHECK_ERR(xf_init(&(xf_config){.workers = 2}), 0);
	CHECK_ERR(xf_chan_create(&chan, sizeof(long), 0), 0);
	for (int i = 0; i < 2; i++) {
		atomic_store(&posted, 0);
		CHECK_ERR(xf_sem_init(&sem, 0), 0);
		CHECK_ERR(xf_mutex_init(&mtx), 0);
		CHECK_ERR(xf_cond_init(&cond), 0);
		CHECK_ERR(xf_spawn(&f, poster, NULL, NULL), 0);
		CHECK_ERR(xf_sem_timedwait(&sem, forevers[i]), 0);
		/* The mutex before the message that lets the poster go on to
		 * signal: its signal then waits for this wait to release the
		 * mutex, and cannot come first and be lost (a run under qemu
		 * waited for good). */
		xf_mutex_lock(&mtx);
		CHECK_ERR(xf_chan_timed_recv(chan, &v, forevers[i]), 0);
		CHECK_ERR(xf_cond_timedwait(&cond, &mtx, forevers[i]), 0);
		xf_mutex_unlock(&mtx);
		if (!atomic_load(&posted))
			xf_test_fail("a wait of %llu ns ended before anything was posted",
				     (unsigned long long)forevers[i]);
		CHECK_ERR(xf_join(f, NULL), 0);
	}
	xf_chan_destroy(chan);
	CHECK_ERR(xf_shutdown(), 0);
	printf("forever: timeouts at the top of the range waited for their post\n");
}

/* --- destroy --- */

struct destroy_case {
	xf_sem *s;
	xf_chan *ch;
	atomic_bool done;
	int result;
	bool forced;	   /* the destroyer times the waiter out itself */
	xf_fiber *waiter;
};

static void *timed_waiter(void *arg)
{
	struct destroy_case *c = arg;
	long v;

	/* Timed out, mostly; the post may also win, when the timer fires late. */
	const uint64_t t = c->forced ? 10000000000ull : 1000;

	c->result = c->s ? xf_sem_timedwait(c->s, t) : xf_chan_timed_recv(c->ch, &v, t);
	atomic_store(&c->done, true);
	return NULL;
}

static bool queued(struct destroy_case *c)
{
	bool any;

	if (!c->s)
		return xf__chan_has_waiters(c->ch);
	xf_preempt_disable(); /* the queue's lock is a spinlock */
	while (atomic_exchange((_Atomic uint32_t *)&c->s->wq.lock, 1))
		;
	any = c->s->wq.head != NULL;
	atomic_store((_Atomic uint32_t *)&c->s->wq.lock, 0);
	xf_preempt_enable();
	return any;
}

/* Spins past the waiter's deadline so that its timer fires while it is
 * still queued here, then frees the object as soon as destroy allows. */
static void *destroyer(void *arg)
{
	struct destroy_case *c = arg;
	uint64_t t0;
	int err;

	/* Once the waiter is queued (or already gone), past its deadline,
	 * with scheduling points for its timer to fire at. */
	while (!atomic_load(&c->done) && !queued(c))
		xf_yield();
	if (c->forced) {
		/* What its timer does: claim the wait, take the timer out; the
		 * wake-up comes after the post and the destroy, as it would when
		 * the waiter's worker is slow to run it. */
		CHECK(xf__wait_claim(xf__handle_fiber(c->waiter), XF_WAIT_TIMEDOUT));
		xf__timer_cancel(xf__handle_fiber(c->waiter));
	} else {
		for (t0 = now_ns(); now_ns() - t0 < 200000;)
			xf_yield();
	}
	if (c->s) {
		xf_sem_post(c->s); /* finds the timed-out waiter, cannot claim it */
		xf_sem_trywait(c->s);
	}
	err = c->s ? xf_sem_destroy(c->s) : xf_chan_destroy(c->ch);
	if (c->forced) {
		if (err != EBUSY)
			xf_test_fail("destroyed with a timed-out waiter still to leave (%d)", err);
		xf__wake(xf__handle_fiber(c->waiter));
	}
	while (err == EBUSY) {
		xf_yield();
		err = c->s ? xf_sem_destroy(c->s) : xf_chan_destroy(c->ch);
	}
	CHECK_ERR(err, 0);
	if (c->s)
		free(c->s);
	return NULL;
}

static void test_destroy(void)
{
	xf_attr on0 = {.pinned = true, .worker = 0}, on1 = {.pinned = true, .worker = 1};
	unsigned timed_out = 0;

	CHECK_ERR(xf_init(&(xf_config){.workers = 2, .slice_us = 50}), 0);
	for (int round = 0; round < 400; round++) {
		struct destroy_case c = {.forced = round & 4};
		xf_fiber *w, *d;

		if (round & 1) {
			CHECK_ERR(xf_chan_create(&c.ch, sizeof(long), 0), 0);
		} else {
			c.s = malloc(sizeof(*c.s));
			CHECK_ERR(xf_sem_init(c.s, 0), 0);
		}
		CHECK_ERR(xf_spawn(&w, timed_waiter, &c, &on0), 0);
		c.waiter = w;
		CHECK_ERR(xf_spawn(&d, destroyer, &c, (round & 2) ? &on0 : &on1), 0);
		CHECK_ERR(xf_join(w, NULL), 0);
		CHECK_ERR(xf_join(d, NULL), 0);
		if (c.result != 0 && c.result != ETIMEDOUT)
			xf_test_fail("the timed wait returned %d", c.result);
		timed_out += c.result == ETIMEDOUT;
	}
	CHECK_ERR(xf_shutdown(), 0);
	if (timed_out < 100)
		xf_test_fail("only %u of 400 waits timed out before the destroy", timed_out);
	printf("destroy: 400 semaphores and channels destroyed beside waiters, %u of which "
	       "had timed out\n",
	       timed_out);
}

/* --- deadlk --- */

static void *nothing(void *arg)
{
	return arg;
}

static pthread_mutex_t held_by_other = PTHREAD_MUTEX_INITIALIZER;
static atomic_int other_holds;

/* Holds a pthread mutex and waits, as a fiber, to be told to let go. */
static void *pthread_holder(void *arg)
{
	pthread_mutex_lock(&held_by_other);
	atomic_store(&other_holds, 1);
	while (atomic_load(&other_holds) == 1)
		xf_yield();
	pthread_mutex_unlock(&held_by_other);
	return arg;
}

static void deadlk_returns(void)
{
	xf_sem s = XF_SEM_INITIALIZER(0);
	xf_chan *ch;
	xf_mutex m = XF_MUTEX_INITIALIZER, m2 = XF_MUTEX_INITIALIZER;
	xf_cond c = XF_COND_INITIALIZER;
	xf_fiber *f, *holder;
	long v = 0;
	uint64_t switches;
	xf_stats st;

	CHECK_ERR(xf_init(&(xf_config){.workers = 1, .cooperative = true}), 0);
	CHECK_ERR(xf_chan_create(&ch, sizeof(long), 0), 0);
	CHECK_ERR(xf_spawn(&f, nothing, NULL, NULL), 0);
	CHECK_ERR(xf_mutex_lock(&m2), 0);
	xf_preempt_disable();
	CHECK_ERR(xf_stats_get(&st), 0);
	switches = st.total.switches;
	CHECK_ERR(xf_sleep_ns(1000), EDEADLK);
	CHECK_ERR(xf_sem_wait(&s), EDEADLK);
	CHECK_ERR(xf_sem_timedwait(&s, 1000), EDEADLK);
	CHECK_ERR(xf_chan_send(ch, &v), EDEADLK);
	CHECK_ERR(xf_chan_recv(ch, &v), EDEADLK);
	CHECK_ERR(xf_join(f, NULL), EDEADLK);
	CHECK_ERR(xf_mutex_lock(&m), 0); /* free: no blocking, no misuse */
	CHECK_ERR(xf_cond_wait(&c, &m), EDEADLK);
	CHECK_ERR(xf_mutex_unlock(&m), 0);
	xf_yield(); /* reported, and no switch */
	CHECK_ERR(xf_stats_get(&st), 0);
	if (st.total.switches != switches)
		xf_test_fail("a refused call switched anyway");
	/* The section is still closed: a nested enable/disable keeps it. */
	if (!(xf__preempt_word_get() & XF_PREEMPT_NESTING))
		xf_test_fail("a refused call dropped the caller's disable");
	xf_preempt_enable();
	CHECK_ERR(xf_mutex_unlock(&m2), 0);

	/* A pthread mutex another fiber of this worker holds would never be
	 * released while this one keeps preemption off: refused, not a hang. */
	CHECK_ERR(xf_spawn(&holder, pthread_holder, NULL, NULL), 0);
	while (!atomic_load(&other_holds))
		xf_yield();
	xf_preempt_disable();
	CHECK_ERR(pthread_mutex_lock(&held_by_other), EDEADLK);
	xf_preempt_enable();
	atomic_store(&other_holds, 2);
	CHECK_ERR(xf_join(holder, NULL), 0);
	CHECK_ERR(xf_join(f, NULL), 0);
	xf_chan_destroy(ch);
	CHECK_ERR(xf_shutdown(), 0);
}

static void deadlk_aborts(void)
{
	CHECK_ERR(xf_init(&(xf_config){.workers = 1}), 0);
	xf_preempt_disable();
	xf_sleep_ns(1000); /* aborts here */
	_exit(0);
}

static void test_deadlk(void)
{
	char out[16384]; /* under qemu (make check-cpus) its warnings come first */
	int status;

	setenv("XFIBER_MISUSE", "return", 1);
	deadlk_returns();
	setenv("XFIBER_MISUSE", "abort", 1);
	status = xf_test_run_child(deadlk_aborts, out, sizeof(out));
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT ||
	    !strstr(out, "called xf_sleep_ns with preemption disabled"))
		xf_test_fail("blocking with preemption disabled did not abort with a message "
			     "(status 0x%x): %s",
			     status, out);
	printf("deadlk: EDEADLK with the section kept; or an abort naming the call\n");
}

/* --- steal --- */

static void test_steal(void)
{
	struct xf__worker *thief, *victim;
	uint64_t t0;

	CHECK_ERR(xf_init(&(xf_config){.workers = 3, .spin_us = 1}), 0);
	thief = &xf__rt.workers[1];
	victim = &xf__rt.workers[2];
	for (t0 = now_ns(); !atomic_load(&victim->parked) || !atomic_load(&thief->parked);)
		if (now_ns() - t0 > 5000000000ull)
			xf_test_fail("workers 1 and 2 did not go idle");
	CHECK(xf__steal_request(thief, victim));
	for (t0 = now_ns(); atomic_load(&thief->steal_pending);)
		if (now_ns() - t0 > 2000000000ull)
			xf_test_fail("an idle victim did not answer a steal request in 2 s");
	CHECK_ERR(xf_shutdown(), 0);
	printf("steal: an idle worker answered a steal request\n");
}

int main(int argc, char **argv)
{
	if (argc != 2)
		xf_test_fail("usage: test_misuse forever|destroy|deadlk|steal");
	if (!strcmp(argv[1], "forever"))
		test_forever();
	else if (!strcmp(argv[1], "destroy"))
		test_destroy();
	else if (!strcmp(argv[1], "deadlk"))
		test_deadlk();
	else if (!strcmp(argv[1], "steal"))
		test_steal();
	else
		xf_test_fail("unknown case %s", argv[1]);
	return 0;
}
