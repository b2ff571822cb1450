/*
 * test_objects.c - mutex, cond, sem and chan under contention from fibers on
 * several workers: no lost wake-up, no double delivery, per-sender FIFO,
 * timed waits, and every misuse's errno.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testlib.h"
#include "xfiber.h"

#define FIBERS 8

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void join_all(xf_fiber **f, int n)
{
	for (int i = 0; i < n; i++)
		CHECK_ERR(xf_join(f[i], NULL), 0);
}

/* --- mutex --- */
static xf_mutex mtx = XF_MUTEX_INITIALIZER;
static uint64_t counter;

static void *mutex_worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < 20000; i++) {
		CHECK_ERR(xf_mutex_lock(&mtx), 0);
		uint64_t c = counter;
		if (i % 64 == 0)
			xf_yield(); /* switch while holding it: others must queue */
		counter = c + 1;
		CHECK_ERR(xf_mutex_unlock(&mtx), 0);
	}
	return NULL;
}

static void *mutex_misuse(void *arg)
{
	(void)arg;
	CHECK_ERR(xf_mutex_unlock(&mtx), EPERM); /* held by the first fiber */
	CHECK_ERR(xf_mutex_trylock(&mtx), EBUSY);
	return NULL;
}

static void test_mutex(void)
{
	xf_fiber *f[FIBERS];
	xf_mutex m;

	for (int i = 0; i < FIBERS; i++)
		CHECK_ERR(xf_spawn(&f[i], mutex_worker, NULL, NULL), 0);
	join_all(f, FIBERS);
	CHECK(counter == FIBERS * 20000);

	CHECK_ERR(xf_mutex_init(&m), 0);
	CHECK_ERR(xf_mutex_unlock(&m), EPERM);
	CHECK_ERR(xf_mutex_lock(&m), 0);
	CHECK_ERR(xf_mutex_lock(&m), EDEADLK);
	CHECK_ERR(xf_mutex_trylock(&m), EBUSY);
	CHECK_ERR(xf_mutex_destroy(&m), EBUSY);
	CHECK_ERR(xf_mutex_unlock(&m), 0);
	CHECK_ERR(xf_mutex_destroy(&m), 0);
	CHECK_ERR(xf_mutex_lock(NULL), EINVAL);
	CHECK_ERR(xf_mutex_lock(&mtx), 0);
	CHECK_ERR(xf_spawn(&f[0], mutex_misuse, NULL, NULL), 0);
	CHECK_ERR(xf_join(f[0], NULL), 0);
	CHECK_ERR(xf_mutex_unlock(&mtx), 0);
	printf("mutex: %d fibers x 20000 increments, exact\n", FIBERS);
}

/* --- cond: a bounded buffer --- */
#define SLOTS 4
static xf_cond not_full = XF_COND_INITIALIZER, not_empty = XF_COND_INITIALIZER;
static int buf[SLOTS], head, count;
static atomic_long consumed_sum;

static void *producer(void *arg)
{
	int base = (int)(intptr_t)arg;
	for (int i = 1; i <= 5000; i++) {
		CHECK_ERR(xf_mutex_lock(&mtx), 0);
		while (count == SLOTS)
			CHECK_ERR(xf_cond_wait(&not_full, &mtx), 0);
		buf[(head + count++) % SLOTS] = base + i;
		CHECK_ERR(xf_cond_signal(&not_empty), 0);
		CHECK_ERR(xf_mutex_unlock(&mtx), 0);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	for (int i = 0; i < 5000; i++) {
		CHECK_ERR(xf_mutex_lock(&mtx), 0);
		while (count == 0)
			CHECK_ERR(xf_cond_wait(&not_empty, &mtx), 0);
		atomic_fetch_add(&consumed_sum, buf[head]);
		head = (head + 1) % SLOTS;
		count--;
		CHECK_ERR(xf_cond_signal(&not_full), 0);
		CHECK_ERR(xf_mutex_unlock(&mtx), 0);
	}
	return arg;
}

static void test_cond(void)
{
	xf_fiber *f[FIBERS];
	long want = 0;
	uint64_t t0;
	xf_cond c;

	for (int i = 0; i < FIBERS / 2; i++) {
		CHECK_ERR(xf_spawn(&f[i], producer, (void *)(intptr_t)(i * 100000), NULL), 0);
		CHECK_ERR(xf_spawn(&f[FIBERS / 2 + i], consumer, NULL, NULL), 0);
		for (int k = 1; k <= 5000; k++)
			want += i * 100000 + k;
	}
	join_all(f, FIBERS);
	CHECK(atomic_load(&consumed_sum) == want);
	CHECK(count == 0);

	CHECK_ERR(xf_cond_init(&c), 0);
	CHECK_ERR(xf_cond_wait(&c, &mtx), EPERM); /* mutex not held */
	CHECK_ERR(xf_mutex_lock(&mtx), 0);
	t0 = now_ns();
	CHECK_ERR(xf_cond_timedwait(&c, &mtx, 20 * 1000 * 1000), ETIMEDOUT);
	CHECK(now_ns() - t0 >= 20 * 1000 * 1000);
	CHECK_ERR(xf_mutex_trylock(&mtx), EBUSY); /* re-acquired after the timeout */
	CHECK_ERR(xf_mutex_unlock(&mtx), 0);
	CHECK_ERR(xf_cond_destroy(&c), 0);
	CHECK_ERR(xf_cond_signal(NULL), EINVAL);
	printf("cond: bounded buffer exact; timed wait expired after >= 20 ms\n");
}

/* --- sem --- */
static xf_sem sem = XF_SEM_INITIALIZER(0);
static atomic_int sem_taken;

static void *sem_taker(void *arg)
{
	for (int i = 0; i < 1000; i++) {
		CHECK_ERR(xf_sem_wait(&sem), 0);
		atomic_fetch_add(&sem_taken, 1);
	}
	return arg;
}

static void test_sem(void)
{
	xf_fiber *f[FIBERS];
	uint64_t v, t0;

	for (int i = 0; i < FIBERS; i++)
		CHECK_ERR(xf_spawn(&f[i], sem_taker, NULL, NULL), 0);
	for (int i = 0; i < FIBERS * 1000; i++) {
		CHECK_ERR(xf_sem_post(&sem), 0);
		if (i % 7 == 0)
			xf_yield();
	}
	join_all(f, FIBERS);
	CHECK(atomic_load(&sem_taken) == FIBERS * 1000);
	CHECK_ERR(xf_sem_getvalue(&sem, &v), 0);
	CHECK(v == 0);
	CHECK_ERR(xf_sem_trywait(&sem), EAGAIN);
	t0 = now_ns();
	CHECK_ERR(xf_sem_timedwait(&sem, 10 * 1000 * 1000), ETIMEDOUT);
	CHECK(now_ns() - t0 >= 10 * 1000 * 1000);
	CHECK_ERR(xf_sem_post(&sem), 0);
	CHECK_ERR(xf_sem_timedwait(&sem, 10 * 1000 * 1000), 0);
	CHECK_ERR(xf_sem_init(&sem, UINT64_MAX), 0);
	CHECK_ERR(xf_sem_post(&sem), EOVERFLOW);
	CHECK_ERR(xf_sem_init(&sem, 0), 0);
	CHECK_ERR(xf_sem_wait(NULL), EINVAL);
	printf("sem: %d posts, each taken once; timed wait ok\n", FIBERS * 1000);
}

/* --- chan --- */
#define SENDERS 4
#define RECEIVERS 4
#define PER_SENDER 20000

struct msg {
	uint32_t sender, seq;
};

static xf_chan *chan;
static atomic_uchar *seen; /* [SENDERS * PER_SENDER] */

static void *chan_sender(void *arg)
{
	uint32_t id = (uint32_t)(uintptr_t)arg;
	for (uint32_t i = 0; i < PER_SENDER; i++) {
		struct msg m = {id, i};
		CHECK_ERR(xf_chan_send(chan, &m), 0);
	}
	return NULL;
}

static void *chan_receiver(void *arg)
{
	uint32_t last[SENDERS];
	struct msg m;
	int err;

	memset(last, 0xff, sizeof(last));
	while ((err = xf_chan_recv(chan, &m)) == 0) {
		if (m.sender >= SENDERS || m.seq >= PER_SENDER)
			xf_test_fail("garbage message %u/%u", m.sender, m.seq);
		if (last[m.sender] != UINT32_MAX && m.seq <= last[m.sender])
			xf_test_fail("sender %u: seq %u after %u (FIFO broken)", m.sender, m.seq,
				     last[m.sender]);
		last[m.sender] = m.seq;
		if (atomic_fetch_add(&seen[m.sender * PER_SENDER + m.seq], 1))
			xf_test_fail("message %u/%u delivered twice", m.sender, m.seq);
	}
	CHECK_ERR(err, EPIPE);
	return arg;
}

static void chan_round(size_t capacity)
{
	xf_fiber *s[SENDERS], *r[RECEIVERS];

	CHECK_ERR(xf_chan_create(&chan, sizeof(struct msg), capacity), 0);
	memset(seen, 0, SENDERS * PER_SENDER);
	for (int i = 0; i < RECEIVERS; i++)
		CHECK_ERR(xf_spawn(&r[i], chan_receiver, NULL, NULL), 0);
	for (int i = 0; i < SENDERS; i++)
		CHECK_ERR(xf_spawn(&s[i], chan_sender, (void *)(uintptr_t)i, NULL), 0);
	join_all(s, SENDERS);
	CHECK_ERR(xf_chan_close(chan), 0);
	join_all(r, RECEIVERS);
	for (int i = 0; i < SENDERS * PER_SENDER; i++) {
		if (seen[i] != 1)
			xf_test_fail("capacity %zu: message %d/%d delivered %d times", capacity,
				     i / PER_SENDER, i % PER_SENDER, seen[i]);
	}
	CHECK_ERR(xf_chan_destroy(chan), 0);
	printf("chan capacity %zu: %d messages, each once, FIFO per sender\n", capacity,
	       SENDERS * PER_SENDER);
}

static void *blocked_receiver(void *arg)
{
	int v;
	CHECK_ERR(xf_chan_recv(arg, &v), EPIPE);
	return NULL;
}

static void test_chan(void)
{
	xf_chan *c;
	xf_fiber *f;
	int v = 1;
	uint64_t t0;

	seen = calloc(SENDERS * PER_SENDER, 1);
	CHECK(seen);
	chan_round(16);
	chan_round(1);
	chan_round(0);
	free((void *)seen);

	CHECK_ERR(xf_chan_create(NULL, 4, 1), EINVAL);
	CHECK_ERR(xf_chan_create(&c, 0, 1), EINVAL);
	CHECK_ERR(xf_chan_create(&c, sizeof(int), 1), 0);
	CHECK_ERR(xf_chan_try_recv(c, &v), EAGAIN);
	CHECK_ERR(xf_chan_try_send(c, &v), 0);
	CHECK_ERR(xf_chan_try_send(c, &v), EAGAIN);
	t0 = now_ns();
	CHECK_ERR(xf_chan_timed_send(c, &v, 10 * 1000 * 1000), ETIMEDOUT);
	CHECK(now_ns() - t0 >= 10 * 1000 * 1000);
	CHECK_ERR(xf_chan_recv(c, &v), 0);
	t0 = now_ns();
	CHECK_ERR(xf_chan_timed_recv(c, &v, 10 * 1000 * 1000), ETIMEDOUT);
	CHECK(now_ns() - t0 >= 10 * 1000 * 1000);
	CHECK_ERR(xf_chan_send(c, &v), 0);
	CHECK_ERR(xf_chan_close(c), 0);
	CHECK_ERR(xf_chan_close(c), EPIPE);
	CHECK_ERR(xf_chan_send(c, &v), EPIPE);
	CHECK_ERR(xf_chan_recv(c, &v), 0); /* drains what was buffered */
	CHECK_ERR(xf_chan_recv(c, &v), EPIPE);
	CHECK_ERR(xf_chan_destroy(c), 0);

	/* Destroy refuses while a fiber waits; close releases it. */
	CHECK_ERR(xf_chan_create(&c, sizeof(int), 0), 0);
	CHECK_ERR(xf_spawn(&f, blocked_receiver, c, NULL), 0);
	xf_sleep_ns(5 * 1000 * 1000);
	CHECK_ERR(xf_chan_destroy(c), EBUSY);
	CHECK_ERR(xf_chan_close(c), 0);
	CHECK_ERR(xf_join(f, NULL), 0);
	CHECK_ERR(xf_chan_destroy(c), 0);
	CHECK_ERR(xf_chan_send(NULL, &v), EINVAL);
	printf("chan: try, timed, close and destroy errors ok\n");
}

/* --- sleep --- */
static void test_sleep(void)
{
	uint64_t t0 = now_ns();

	CHECK_ERR(xf_sleep_ns(15 * 1000 * 1000), 0);
	CHECK(now_ns() - t0 >= 15 * 1000 * 1000);
	CHECK_ERR(xf_sleep_ns(0), 0);
	printf("sleep: >= 15 ms\n");
}

int main(void)
{
	CHECK_ERR(xf_init(&(xf_config){.workers = 2}), 0);
	test_mutex();
	test_cond();
	test_sem();
	test_chan();
	test_sleep();
	CHECK_ERR(xf_shutdown(), 0);
	return 0;
}
