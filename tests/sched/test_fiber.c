/*
 * test_fiber.c - spawn, join, detach and exit semantics, results, and every
 * misuse of the fiber API returning its errno.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "testlib.h"
#include "xfiber.h"

static void *plain_thread_yields(void *arg)
{
	for (int i = 0; i < 3; i++)
		xf_yield();
	CHECK(xf_self() == NULL);
	return arg;
}

/* A 100 KiB local buffer, written and read back, with a call below it. */
static __attribute__((noinline)) uintptr_t sum_bytes(const unsigned char *p, size_t n)
{
	uintptr_t sum = 0;

	for (size_t i = 0; i < n; i++)
		sum += p[i];
	return sum;
}

static void *big_buffer(void *arg)
{
	unsigned char buf[100 * 1024];

	(void)arg;
	memset(buf, 3, sizeof(buf));
	return (void *)sum_bytes(buf, sizeof(buf));
}

static void *identity(void *arg)
{
	return arg;
}

/* Fills three quarters of a stack of arg bytes, every page of it: a stack
 * smaller than asked for overflows and the process aborts. */
static void *fill_stack(void *arg)
{
	size_t n = (size_t)arg / 4 * 3;
	unsigned char *buf = __builtin_alloca(n);

	memset(buf, 5, n);
	return (void *)sum_bytes(buf, n);
}

/* Stacks of other sizes than the default come from pools by size, more
 * sizes than are pooled included (those are mapped each time): each fiber
 * gets at least the size it asked for, round after round. */
static void check_sized_stacks(void)
{
	static const size_t sizes[] = {16 << 10, 64 << 10, 1 << 20,   24 << 10,	 40 << 10,
				       48 << 10, 96 << 10, 200 << 10, 512 << 10, 56 << 10};

	for (int round = 0; round < 3; round++) {
		xf_fiber *f[sizeof(sizes) / sizeof(sizes[0])];
		xf_attr attr = XF_ATTR_INIT;
		void *r;

		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			attr.stack_size = sizes[i];
			CHECK_ERR(xf_spawn(&f[i], fill_stack, (void *)sizes[i], &attr), 0);
		}
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			CHECK_ERR(xf_join(f[i], &r), 0);
			CHECK(r == (void *)(uintptr_t)(sizes[i] / 4 * 3 * 5));
		}
	}
}

static void *exits_early(void *arg)
{
	xf_yield();
	xf_exit((char *)arg + 1);
	return NULL; /* not reached */
}

static void *spawns_children(void *arg)
{
	uintptr_t depth = (uintptr_t)arg, sum = depth;
	xf_fiber *kids[2];
	void *r;

	if (!depth)
		return 0;
	for (int i = 0; i < 2; i++)
		CHECK_ERR(xf_spawn(&kids[i], spawns_children, (void *)(depth - 1), NULL), 0);
	for (int i = 0; i < 2; i++) {
		CHECK_ERR(xf_join(kids[i], &r), 0);
		sum += (uintptr_t)r;
	}
	return (void *)sum;
}

static atomic_int detached_done;

static void *detached_body(void *arg)
{
	(void)arg;
	xf_yield();
	atomic_fetch_add(&detached_done, 1);
	return NULL;
}

static xf_fiber *self_seen;

static void *self_join(void *arg)
{
	(void)arg;
	self_seen = xf_self();
	CHECK(xf_fiber_id(self_seen) > 1);
	CHECK_ERR(xf_join(xf_self(), NULL), EDEADLK);
	return NULL;
}

static void *joins_first(void *first)
{
	CHECK_ERR(xf_join(first, NULL), EINVAL);
	CHECK_ERR(xf_detach(first), EINVAL);
	CHECK_ERR(xf_shutdown(), EPERM); /* only the first fiber may */
	return NULL;
}

static void *blocker(void *arg)
{
	xf_sem *s = arg;
	CHECK_ERR(xf_sem_wait(s), 0);
	return (void *)42;
}

static void *reads_own_name(void *arg)
{
	const char *name = xf_fiber_name(xf_self());

	return name && !strcmp(name, arg) ? arg : NULL;
}

/* Names: from xf_attr, set later, cut at XF_NAME_MAX - 1 bytes, and the
 * first fiber's. */
static void check_names(void)
{
	static const char long_name[] = "a-name-of-forty-bytes-which-is-too-long!";
	xf_attr attr = XF_ATTR_INIT;
	xf_fiber *f;
	void *r;

	CHECK(xf_fiber_name(xf_self()) && !strcmp(xf_fiber_name(xf_self()), "main"));
	CHECK(xf_fiber_name(NULL) == NULL);
	CHECK_ERR(xf_fiber_set_name(NULL, "x"), EINVAL);
	attr.name = "acceptor";
	CHECK_ERR(xf_spawn(&f, reads_own_name, "acceptor", &attr), 0);
	CHECK_ERR(xf_join(f, &r), 0);
	CHECK(r != NULL);
	CHECK_ERR(xf_fiber_set_name(f, "x"), ESRCH); /* joined: no live fiber */
	CHECK(xf_fiber_name(f) == NULL);
	attr.name = long_name;
	CHECK_ERR(xf_spawn(&f, reads_own_name, "a-name-of-forty-bytes-which-is-", &attr), 0);
	CHECK(strlen(xf_fiber_name(f)) == XF_NAME_MAX - 1);
	CHECK_ERR(xf_join(f, &r), 0);
	CHECK(r != NULL);
	CHECK_ERR(xf_spawn(&f, reads_own_name, "", NULL), 0); /* no name: empty */
	CHECK_ERR(xf_fiber_set_name(f, "renamed"), 0);
	CHECK(!strcmp(xf_fiber_name(f), "renamed"));
	CHECK_ERR(xf_fiber_set_name(f, NULL), 0);
	CHECK(!strcmp(xf_fiber_name(f), ""));
	CHECK_ERR(xf_join(f, &r), 0);
	CHECK(r != NULL);
}

int main(void)
{
	xf_config cfg = {.workers = 2};
	xf_attr attr = XF_ATTR_INIT;
	xf_fiber *f, *g;
	void *r;
	xf_sem sem = XF_SEM_INITIALIZER(0);

	/* Before xf_init: nothing runs. */
	CHECK_ERR(xf_spawn(&f, identity, NULL, NULL), EPERM);
	CHECK_ERR(xf_shutdown(), EPERM);
	CHECK_ERR(xf_sleep_ns(1), 0); /* a plain thread sleeps itself */
	CHECK(xf_self() == NULL);
	CHECK(xf_worker_id() == -1);
	xf_yield(); /* harmless outside the runtime */

	/* Bad configurations. */
	CHECK_ERR(xf_init(&(xf_config){.workers = XF_WORKERS_MAX + 1}), EINVAL);
	CHECK_ERR(xf_init(&(xf_config){.stack_size = 1024}), EINVAL);
	CHECK_ERR(xf_init(&(xf_config){.slice_us = 10}), EINVAL);

	CHECK_ERR(xf_init(&cfg), 0);
	CHECK_ERR(xf_init(&cfg), EBUSY);
	{
		/* A plain thread while the runtime runs: yield does nothing. */
		pthread_t t;
		CHECK_ERR(pthread_create(&t, NULL, plain_thread_yields, NULL), 0);
		CHECK_ERR(pthread_join(t, NULL), 0);
	}
	CHECK(xf_self() != NULL && xf_fiber_id(xf_self()) == 1);
	CHECK(xf_worker_id() == 0);
	check_names();

	/* Results through return and through xf_exit. */
	CHECK_ERR(xf_spawn(&f, identity, (void *)0x1234, NULL), 0);
	CHECK_ERR(xf_join(f, &r), 0);
	CHECK(r == (void *)0x1234);
	CHECK_ERR(xf_spawn(&f, exits_early, (void *)100, NULL), 0);
	CHECK_ERR(xf_join(f, &r), 0);
	CHECK(r == (void *)101);

	/* A tree of 2^6 fibers spawning and joining their children. */
	CHECK_ERR(xf_spawn(&f, spawns_children, (void *)6, NULL), 0);
	CHECK_ERR(xf_join(f, &r), 0);
	CHECK((uintptr_t)r == 6 + 2 * 5 + 4 * 4 + 8 * 3 + 16 * 2 + 32 * 1);

	/* Join a fiber that already finished, and one that has not. */
	CHECK_ERR(xf_spawn(&f, identity, (void *)7, NULL), 0);
	for (int i = 0; i < 10; i++)
		xf_yield();
	CHECK_ERR(xf_join(f, &r), 0);
	CHECK(r == (void *)7);
	CHECK_ERR(xf_spawn(&f, blocker, &sem, NULL), 0);
	CHECK_ERR(xf_spawn(&g, identity, NULL, NULL), 0);
	CHECK_ERR(xf_sem_post(&sem), 0);
	CHECK_ERR(xf_join(f, &r), 0);
	CHECK(r == (void *)42);
	CHECK_ERR(xf_join(g, NULL), 0);

	/* Detached: at spawn, after finishing, before finishing. */
	attr.detached = true;
	CHECK_ERR(xf_spawn(NULL, detached_body, NULL, &attr), 0);
	CHECK_ERR(xf_spawn(&f, identity, NULL, NULL), 0);
	for (int i = 0; i < 10; i++)
		xf_yield();
	CHECK_ERR(xf_detach(f), 0); /* finished by now: freed here */
	CHECK_ERR(xf_spawn(&f, detached_body, NULL, NULL), 0);
	CHECK_ERR(xf_detach(f), 0);
	while (atomic_load(&detached_done) < 2)
		xf_yield();

	/* Misuse. */
	CHECK_ERR(xf_spawn(&f, NULL, NULL, NULL), EINVAL);
	CHECK_ERR(xf_spawn(NULL, identity, NULL, NULL), EINVAL); /* joinable needs a handle */
	attr = (xf_attr)XF_ATTR_INIT;
	attr.stack_size = 100;
	CHECK_ERR(xf_spawn(&f, identity, NULL, &attr), EINVAL);
	attr = (xf_attr)XF_ATTR_INIT;
	attr.pinned = true;
	attr.worker = 2;
	CHECK_ERR(xf_spawn(&f, identity, NULL, &attr), EINVAL);
	attr.worker = -2;
	CHECK_ERR(xf_spawn(&f, identity, NULL, &attr), EINVAL);
	CHECK_ERR(xf_join(NULL, NULL), EINVAL);
	CHECK_ERR(xf_detach(NULL), EINVAL);
	CHECK_ERR(xf_spawn(&f, self_join, NULL, NULL), 0);
	CHECK_ERR(xf_join(f, NULL), 0);
	CHECK_ERR(xf_join(f, NULL), ESRCH); /* freed by the first join */
	CHECK_ERR(xf_detach(f), ESRCH);
	CHECK(xf_fiber_id(f) == 0);
	/* A handle kept past its fiber's end, whose structure a new fiber
	 * reuses, names no live fiber: it neither joins nor frees the new one
	 * (issue 28: it did both). */
	{
		xf_fiber *stale = f, *b;

		CHECK_ERR(xf_spawn(&b, identity, (void *)2, NULL), 0);
		CHECK(b != stale);
		CHECK_ERR(xf_join(stale, &r), ESRCH);
		CHECK_ERR(xf_detach(stale), ESRCH);
		CHECK(xf_fiber_id(stale) == 0 && xf_fiber_name(stale) == NULL);
		CHECK_ERR(xf_fiber_set_name(stale, "x"), ESRCH);
		CHECK_ERR(xf_join(b, &r), 0);
		CHECK(r == (void *)2);
	}
	CHECK_ERR(xf_spawn(&f, blocker, &sem, NULL), 0);
	CHECK_ERR(xf_detach(f), 0);
	CHECK_ERR(xf_detach(f), EINVAL); /* already detached */
	CHECK_ERR(xf_join(f, NULL), EINVAL);
	CHECK_ERR(xf_sem_post(&sem), 0);
	CHECK_ERR(xf_spawn(&f, joins_first, xf_self(), NULL), 0);
	CHECK_ERR(xf_join(f, NULL), 0);
	/* A custom stack size works. */
	attr = (xf_attr)XF_ATTR_INIT;
	attr.stack_size = 1024 * 1024;
	CHECK_ERR(xf_spawn(&f, identity, (void *)9, &attr), 0);
	CHECK_ERR(xf_join(f, &r), 0);
	CHECK(r == (void *)9);
	check_sized_stacks();
	/* The default stack holds a 100 KiB buffer, as a thread's would. */
	CHECK_ERR(xf_spawn(&f, big_buffer, NULL, NULL), 0);
	CHECK_ERR(xf_join(f, &r), 0);
	CHECK(r == (void *)(uintptr_t)(100 * 1024 * 3));
	/* A joinable fiber never joined: after the shutdown its handle names
	 * freed memory, which no call may read (a reviewer's join read it,
	 * and said 0; ASan saw the use after free). */
	CHECK_ERR(xf_spawn(&f, identity, (void *)3, NULL), 0);

	CHECK_ERR(xf_shutdown(), 0);
	CHECK_ERR(xf_shutdown(), EPERM);
	CHECK(xf_self() == NULL);
	xf_yield(); /* a plain thread again: harmless */
	CHECK_ERR(xf_join(f, &r), EPERM);
	CHECK_ERR(xf_detach(f), EPERM);
	CHECK_ERR(xf_cancel(f), EPERM);

	/* The runtime can start again after a shutdown. */
	CHECK_ERR(xf_init(&(xf_config){.workers = 1}), 0);
	CHECK_ERR(xf_spawn(&f, identity, (void *)5, NULL), 0);
	CHECK_ERR(xf_join(f, &r), 0);
	CHECK(r == (void *)5);
	CHECK_ERR(xf_shutdown(), 0);
	printf("fiber semantics ok\n");
	return 0;
}
