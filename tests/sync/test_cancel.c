/*
 * test_cancel.c - xf_cancel ends every kind of cancellable wait with
 * ECANCELED, for good, and nothing else; a cancel racing a wake-up loses
 * nothing and wakes nobody twice.
 *
 * usage: test_cancel CASE WORKERS
 *   kinds   a fiber blocked in each cancellable call in turn is cancelled
 *           there (from a fiber, and from a plain thread), and its later
 *           calls fail at once; try calls, zero timeouts, mutexes and the C
 *           library's sleeps work on; a stale handle gets ESRCH
 *   race    waiters on a semaphore, posters and cancellers at once: every
 *           wait ends exactly once, and the units add up
 *   all     xf_cancel_all ends every fiber's wait but the caller's
 *   blocking  a queued job is withdrawn and never runs; a running one is
 *           waited for and its result kept
 *   disable a fiber that disabled cancellation is cancelled while it waits:
 *           the wait goes on, later calls work, until the outermost enable
 *   barrier xf_init registered the process for membarrier's expedited
 *           barrier, which xf_cancel and xf_dump use: registered by the
 *           first of them instead, with threads running, it waited an RCU
 *           grace period there (17 ms here), its worker blocked
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/membarrier.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
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

/* --- kinds --- */

enum kind {
	K_SLEEP,
	K_JOIN,
	K_COND,
	K_SEM,
	K_SEM_TIMED,
	K_CHAN_SEND,
	K_CHAN_RECV,
	K_CHAN_TIMED,
	K_FD_WAIT,
	K_READ,
	K_POLL,
	K_LIBC_POLL,
	K_SELECT,
	K_WG,
	K_N,
};
static const char *const kind_names[K_N] = {
    "xf_sleep_ns",	"xf_join",	"xf_cond_wait",	    "xf_sem_wait",    "xf_sem_timedwait",
    "xf_chan_send",	"xf_chan_recv", "xf_chan_timed_recv", "xf_fd_wait",	      "xf_read",
    "xf_poll",		"poll (libc)",	"xf_select",	    "xf_wg_wait"};

static xf_mutex mtx = XF_MUTEX_INITIALIZER;
static xf_cond cond = XF_COND_INITIALIZER;
static xf_sem sem = XF_SEM_INITIALIZER(0);
static xf_chan *full, *empty;
static int pipefd[2];
static xf_fiber *forever;
static xf_wg group = XF_WG_INITIALIZER;
static atomic_int entered;

static void *sleeps_forever(void *arg)
{
	(void)arg;
	while (xf_sleep_ns(1000000000ull) == 0)
		;
	return NULL;
}

/* One blocking call of kind k; its result, as an errno. */
static int call(enum kind k)
{
	struct pollfd p = {.fd = pipefd[0], .events = POLLIN};
	long v = 1;
	char c;
	int err;

	switch (k) {
	case K_SLEEP: return xf_sleep_ns(XF_FOREVER - 1);
	case K_JOIN: return xf_join(forever, NULL);
	case K_COND:
		CHECK_ERR(xf_mutex_lock(&mtx), 0);
		err = xf_cond_wait(&cond, &mtx);
		CHECK_ERR(xf_mutex_unlock(&mtx), 0); /* held again, even cancelled */
		return err;
	case K_SEM: return xf_sem_wait(&sem);
	case K_SEM_TIMED: return xf_sem_timedwait(&sem, XF_FOREVER);
	case K_CHAN_SEND: return xf_chan_send(full, &v);
	case K_CHAN_RECV: return xf_chan_recv(empty, &v);
	case K_CHAN_TIMED: return xf_chan_timed_recv(empty, &v, 60ull * 1000000000u);
	case K_FD_WAIT: return xf_fd_wait(pipefd[0], POLLIN, XF_FOREVER);
	case K_READ: return xf_read(pipefd[0], &c, 1) < 0 ? errno : 0;
	case K_POLL: return xf_poll(&p, 1, -1) < 0 ? errno : 0;
	case K_LIBC_POLL: return poll(&p, 1, -1) < 0 ? errno : 0;
	case K_SELECT: {
		xf_select_case sc[2] = {{empty, XF_SELECT_RECV, &v, 0}, {full, XF_SELECT_SEND, &v, 0}};
		size_t chosen;

		return xf_select(sc, 2, XF_FOREVER, &chosen);
	}
	case K_WG: return xf_wg_wait(&group);
	default: break;
	}
	return EINVAL;
}

struct victim {
	enum kind k;
	int first, second; /* the blocked call's result, and the next one's */
};

static void *victim_main(void *arg)
{
	struct victim *v = arg;

	atomic_fetch_add(&entered, 1);
	v->first = call(v->k);
	v->second = call(v->k);
	return NULL;
}

static void *cancel_from_thread(void *arg)
{
	CHECK_ERR(xf_cancel(arg), 0);
	return NULL;
}

static void test_kinds(void)
{
	xf_fiber *f;
	void *r;

	CHECK_ERR(xf_chan_create(&full, sizeof(long), 1), 0);
	CHECK_ERR(xf_chan_create(&empty, sizeof(long), 0), 0);
	CHECK(pipe(pipefd) == 0);
	CHECK_ERR(xf_spawn(&forever, sleeps_forever, NULL, NULL), 0);
	CHECK_ERR(xf_wg_add(&group, 1), 0);
	{
		long v = 0;
		CHECK_ERR(xf_chan_send(full, &v), 0); /* now full */
	}
	for (int from_thread = 0; from_thread < 2; from_thread++)
		for (enum kind k = 0; k < K_N; k++) {
			struct victim v = {.k = k};
			int spins = 0;

			atomic_store(&entered, 0);
			CHECK_ERR(xf_spawn(&f, victim_main, &v, NULL), 0);
			while (!atomic_load(&entered))
				xf_yield();
			/* Well into its wait (a cancel before it would do too). */
			while (spins++ < 20)
				xf_sleep_ns(100000);
			if (from_thread) {
				pthread_t t;
				CHECK(pthread_create(&t, NULL, cancel_from_thread, f) == 0);
				CHECK(pthread_join(t, NULL) == 0);
			} else {
				CHECK_ERR(xf_cancel(f), 0);
			}
			CHECK_ERR(xf_join(f, NULL), 0);
			if (v.first != ECANCELED || v.second != ECANCELED)
				xf_test_fail("%s (cancelled from a %s): %s, then %s", kind_names[k],
					     from_thread ? "thread" : "fiber",
					     xf_test_errname(v.first), xf_test_errname(v.second));
			CHECK_ERR(xf_cancel(f), ESRCH); /* joined: gone */
		}
	/* Nothing was taken or left behind: the channel is still full, the
	 * pipe empty, the mutex free. */
	{
		long v;
		char c;
		CHECK_ERR(xf_chan_try_recv(full, &v), 0);
		CHECK_ERR(xf_chan_try_recv(full, &v), EAGAIN);
		CHECK(read(pipefd[0], &c, 0) == 0);
		CHECK_ERR(xf_mutex_trylock(&mtx), 0);
		CHECK_ERR(xf_mutex_unlock(&mtx), 0);
	}
	CHECK_ERR(xf_cancel(forever), 0);
	CHECK_ERR(xf_join(forever, &r), 0);
	CHECK_ERR(xf_chan_destroy(full), 0);
	CHECK_ERR(xf_chan_destroy(empty), 0);
	close(pipefd[0]);
	close(pipefd[1]);
}

/* What a cancelled fiber can still do. */
static void *cancelled_self(void *arg)
{
	xf_chan *ch;
	xf_sem s = XF_SEM_INITIALIZER(1);
	xf_mutex m = XF_MUTEX_INITIALIZER;
	struct timespec ts = {0, 1000000};
	long v = 7;
	uint64_t t0;

	(void)arg;
	CHECK(!xf_cancelled());
	CHECK_ERR(xf_cancel(xf_self()), 0);
	CHECK(xf_cancelled());
	CHECK_ERR(xf_chan_create(&ch, sizeof(long), 1), 0);
	CHECK_ERR(xf_chan_try_send(ch, &v), 0);	       /* try calls work */
	CHECK_ERR(xf_chan_timed_send(ch, &v, 0), ETIMEDOUT); /* so do zero timeouts */
	CHECK_ERR(xf_chan_send(ch, &v), ECANCELED);
	CHECK_ERR(xf_chan_recv(ch, &v), ECANCELED); /* may wait: cancelled */
	CHECK_ERR(xf_chan_try_recv(ch, &v), 0);
	CHECK(v == 7);
	CHECK_ERR(xf_sem_trywait(&s), 0);
	CHECK_ERR(xf_sem_timedwait(&s, 0), ETIMEDOUT);
	CHECK_ERR(xf_mutex_lock(&m), 0); /* not cancellable, as pthread_mutex_lock */
	CHECK_ERR(xf_mutex_unlock(&m), 0);
	CHECK_ERR(xf_sleep_ns(1000), ECANCELED);
	t0 = now_ns();
	CHECK(nanosleep(&ts, NULL) == 0); /* the C library's sleeps are not */
	CHECK(now_ns() - t0 >= 1000000);
	CHECK_ERR(xf_chan_destroy(ch), 0);
	return NULL;
}

static void test_self(void)
{
	xf_fiber *f;

	CHECK_ERR(xf_spawn(&f, cancelled_self, NULL, NULL), 0);
	CHECK_ERR(xf_join(f, NULL), 0);
	CHECK_ERR(xf_cancel(NULL), ESRCH);
	CHECK_ERR(xf_cancel(f), ESRCH); /* a stale handle */
}

/* --- race --- */

#define RACE_WAITERS 8
#define RACE_ROUNDS  400

static xf_sem race_sem = XF_SEM_INITIALIZER(0);
static atomic_long got, cancelled, posted;
static xf_fiber *waiters[RACE_WAITERS];
static atomic_int alive;

static void *race_waiter(void *arg)
{
	(void)arg;
	for (;;) {
		int err = xf_sem_wait(&race_sem);

		if (err == ECANCELED) {
			atomic_fetch_add(&cancelled, 1);
			break;
		}
		CHECK_ERR(err, 0);
		atomic_fetch_add(&got, 1);
	}
	atomic_fetch_sub(&alive, 1);
	return NULL;
}

static void *race_poster(void *arg)
{
	(void)arg;
	for (int i = 0; i < RACE_ROUNDS * 4; i++) {
		CHECK_ERR(xf_sem_post(&race_sem), 0);
		atomic_fetch_add(&posted, 1);
		if (i % 16 == 0)
			xf_yield();
	}
	return NULL;
}

static void test_race(void)
{
	xf_fiber *poster;
	uint64_t left;

	for (int round = 0; round < RACE_ROUNDS / 40; round++) {
		atomic_store(&alive, RACE_WAITERS);
		for (int i = 0; i < RACE_WAITERS; i++)
			CHECK_ERR(xf_spawn(&waiters[i], race_waiter, NULL, NULL), 0);
		CHECK_ERR(xf_spawn(&poster, race_poster, NULL, NULL), 0);
		/* Cancels land among the posts: on waiters queued, woken, or
		 * between two waits. */
		for (int i = 0; i < RACE_WAITERS; i++) {
			xf_sleep_ns(20000 * (uint64_t)(i % 3));
			CHECK_ERR(xf_cancel(waiters[i]), 0);
		}
		CHECK_ERR(xf_join(poster, NULL), 0);
		for (int i = 0; i < RACE_WAITERS; i++)
			CHECK_ERR(xf_join(waiters[i], NULL), 0);
		CHECK(atomic_load(&alive) == 0);
	}
	CHECK_ERR(xf_sem_getvalue(&race_sem, &left), 0);
	if ((uint64_t)atomic_load(&got) + left != (uint64_t)atomic_load(&posted))
		xf_test_fail("%ld units posted, %ld taken, %lu left", atomic_load(&posted),
			     atomic_load(&got), (unsigned long)left);
	CHECK(atomic_load(&cancelled) == (RACE_ROUNDS / 40) * RACE_WAITERS);
	printf("race: %ld posted, %ld taken, %lu left, %ld waits cancelled\n",
	       atomic_load(&posted), atomic_load(&got), (unsigned long)left,
	       atomic_load(&cancelled));
}

/* --- all --- */

static void *waits_on_chan(void *arg)
{
	long v;

	return (void *)(intptr_t)xf_chan_recv(arg, &v);
}

static void test_all(void)
{
	xf_chan *ch;
	xf_fiber *f[50];
	void *r;

	CHECK_ERR(xf_chan_create(&ch, sizeof(long), 0), 0);
	for (int i = 0; i < 50; i++)
		CHECK_ERR(xf_spawn(&f[i], i % 2 ? waits_on_chan : sleeps_forever, ch, NULL), 0);
	xf_sleep_ns(5000000);
	CHECK_ERR(xf_cancel_all(), 0);
	CHECK(!xf_cancelled()); /* but the caller */
	for (int i = 0; i < 50; i++) {
		CHECK_ERR(xf_join(f[i], &r), 0);
		if (i % 2)
			CHECK((intptr_t)r == ECANCELED);
	}
	CHECK_ERR(xf_chan_destroy(ch), 0);
}

/* --- blocking --- */

static atomic_int job_ran;
static xf_sem job_go = XF_SEM_INITIALIZER(0);
static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;

static void *job(void *arg)
{
	atomic_fetch_add(&job_ran, 1);
	pthread_mutex_lock(&gate); /* held by the test until it lets go */
	pthread_mutex_unlock(&gate);
	return arg;
}

struct blocker {
	int err;
	void *result;
};

static void *calls_blocking(void *arg)
{
	struct blocker *b = arg;

	b->err = xf_blocking(job, (void *)42, &b->result);
	return NULL;
}

static void test_blocking(void)
{
	/* More jobs than helpers may run at once: the later ones wait queued. */
	enum { N = 64 };
	static struct blocker b[N];
	xf_fiber *f[N];
	int ran_before, withdrawn = 0, kept = 0;

	(void)job_go;
	pthread_mutex_lock(&gate);
	for (int i = 0; i < N; i++)
		CHECK_ERR(xf_spawn(&f[i], calls_blocking, &b[i], NULL), 0);
	xf_sleep_ns(50000000);
	ran_before = atomic_load(&job_ran);
	for (int i = 0; i < N; i++)
		CHECK_ERR(xf_cancel(f[i]), 0);
	pthread_mutex_unlock(&gate);
	for (int i = 0; i < N; i++) {
		CHECK_ERR(xf_join(f[i], NULL), 0);
		CHECK_ERR(b[i].err, ECANCELED);
		if (b[i].result == (void *)42)
			kept++;
		else
			withdrawn++;
	}
	/* Each job ran, with its result kept, or was withdrawn and never ran. */
	CHECK(kept == atomic_load(&job_ran));
	CHECK(kept >= ran_before);
	printf("blocking: %d jobs running were waited for, %d queued were withdrawn\n", kept,
	       withdrawn);
}

/* --- disable --- */

static xf_sem d_ready, d_go;
static _Atomic int d_step;

static void *disabled_waiter(void *arg)
{
	(void)arg;
	CHECK_ERR(xf_cancel_enable(), EINVAL); /* not disabled */
	CHECK_ERR(xf_cancel_disable(), 0);
	xf_sem_post(&d_ready);
	CHECK_ERR(xf_sem_wait(&d_go), 0); /* cancelled meanwhile: waits on */
	CHECK(xf_cancelled());
	atomic_store(&d_step, 1);
	CHECK_ERR(xf_sleep_ns(1000000), 0);
	CHECK_ERR(xf_cancel_disable(), 0); /* nested */
	CHECK_ERR(xf_cancel_enable(), 0);
	CHECK_ERR(xf_sleep_ns(1000), 0); /* still disabled: one level left */
	CHECK_ERR(xf_cancel_enable(), 0);
	CHECK_ERR(xf_sleep_ns(1000000), ECANCELED); /* the first call after */
	CHECK_ERR(xf_sem_wait(&d_go), ECANCELED);
	atomic_store(&d_step, 2);
	return NULL;
}

static void test_disable(void)
{
	xf_fiber *f;

	xf_sem_init(&d_ready, 0);
	xf_sem_init(&d_go, 0);
	CHECK_ERR(xf_spawn(&f, disabled_waiter, NULL, NULL), 0);
	CHECK_ERR(xf_sem_wait(&d_ready), 0);
	xf_sleep_ns(2000000); /* it waits */
	CHECK_ERR(xf_cancel(f), 0);
	xf_sleep_ns(10000000);
	CHECK(atomic_load(&d_step) == 0); /* the cancel did not end its wait */
	xf_sem_post(&d_go);
	CHECK_ERR(xf_join(f, NULL), 0);
	CHECK(atomic_load(&d_step) == 2);
}

static void test_barrier(void)
{
	long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);

	if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED))
		xf_test_skip("membarrier has no private expedited barrier here");
	/* EPERM when nobody registered. */
	CHECK(syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0);
}

int main(int argc, char **argv)
{
	if (argc != 3)
		xf_test_fail("usage: test_cancel kinds|race|all|blocking|disable|barrier WORKERS");
	nworkers = (unsigned)atoi(argv[2]);
	alarm(50);
	CHECK_ERR(xf_init(&(xf_config){.workers = nworkers, .slice_us = 100, .blocking_threads = 4}),
		  0);
	if (!strcmp(argv[1], "kinds")) {
		test_kinds();
		test_self();
	} else if (!strcmp(argv[1], "race")) {
		test_race();
	} else if (!strcmp(argv[1], "all")) {
		test_all();
	} else if (!strcmp(argv[1], "blocking")) {
		test_blocking();
	} else if (!strcmp(argv[1], "disable")) {
		test_disable();
	} else if (!strcmp(argv[1], "barrier")) {
		test_barrier();
	} else {
		xf_test_fail("unknown case %s", argv[1]);
	}
	CHECK_ERR(xf_shutdown(), 0);
	printf("%s: ok\n", argv[1]);
	return 0;
}
