/*
 * fiber_states.c - 100 fibers in every state a fiber can be in, for the
 * tools that look inside a running program: xf_dump (test_dump.c) and the
 * gdb extension (tests/gdb/).  Two workers, 1 ms slices:
 *
 *   main        1   running on worker 0 (it calls what looks)
 *   spinner     3   pinned to worker 1, CPU-bound: one runs, two preempted
 *   yielder    16   pinned to worker 0, yielding: runnable (or preempted)
 *   locker     15   blocked on a mutex main holds
 *   receiver   15   blocked on an empty channel
 *   sleeper    15   sleeping an hour
 *   reader     15   blocked in xf_read of a pipe nobody writes
 *   waiter     10   blocked on a semaphore at 0
 *   conder      5   blocked on a condition variable
 *   joiner      5   blocked joining a sleeper
 *
 * Each fiber is named after its kind ("locker-3") and enters through a
 * function named after it (locker_main).
 *
 * usage: runtime_fiber_states dump FILE   xf_dump to FILE, then exit 0
 *        runtime_fiber_states ready       call states_ready() (a debugger's
 *                                         breakpoint), then exit 0
 *        runtime_fiber_states crash       crash (SIGSEGV) in main: a core
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "xfiber.h"

#include "fiber_states.h"

/* On its own, without the test library: it is also built against
 * libxfiber.so (tests/gdb). */
#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);  \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)
#define CHECK_ERR(call, want) CHECK((call) == (want))

static xf_mutex mutex = XF_MUTEX_INITIALIZER;
static xf_mutex cond_mutex = XF_MUTEX_INITIALIZER;
static xf_cond cond = XF_COND_INITIALIZER;
static xf_sem sem = XF_SEM_INITIALIZER(0);
static xf_chan *chan;
static int pipe_fds[2];
static xf_fiber *sleepers[15];
static atomic_int arrived;
static volatile uint64_t spin_sink;

/* Exported (ENABLE_EXPORTS), so that a dump names them. */
void *spinner_main(void *arg);
void *yielder_main(void *arg);
void *locker_main(void *arg);
void *receiver_main(void *arg);
void *sleeper_main(void *arg);
void *reader_main(void *arg);
void *waiter_main(void *arg);
void *conder_main(void *arg);
void *joiner_main(void *arg);

static void arrive(void)
{
	atomic_fetch_add(&arrived, 1);
}

__attribute__((noinline)) void *spinner_main(void *arg)
{
	(void)arg;
	arrive();
	for (;;)
		spin_sink++;
	return NULL;
}

__attribute__((noinline)) void *yielder_main(void *arg)
{
	(void)arg;
	arrive();
	for (;;)
		xf_yield();
	return NULL;
}

__attribute__((noinline)) void *locker_main(void *arg)
{
	(void)arg;
	arrive();
	xf_mutex_lock(&mutex);
	xf_mutex_unlock(&mutex);
	return NULL;
}

__attribute__((noinline)) void *receiver_main(void *arg)
{
	int msg;

	(void)arg;
	arrive();
	xf_chan_recv(chan, &msg);
	return NULL;
}

__attribute__((noinline)) void *sleeper_main(void *arg)
{
	(void)arg;
	arrive();
	xf_sleep_ns(3600ull * 1000 * 1000 * 1000);
	return NULL;
}

__attribute__((noinline)) void *reader_main(void *arg)
{
	char byte;

	(void)arg;
	arrive();
	if (xf_read(pipe_fds[0], &byte, 1) < 0)
		perror("xf_read");
	return NULL;
}

__attribute__((noinline)) void *waiter_main(void *arg)
{
	(void)arg;
	arrive();
	xf_sem_wait(&sem);
	return NULL;
}

__attribute__((noinline)) void *conder_main(void *arg)
{
	(void)arg;
	xf_mutex_lock(&cond_mutex);
	arrive();
	xf_cond_wait(&cond, &cond_mutex);
	xf_mutex_unlock(&cond_mutex);
	return NULL;
}

__attribute__((noinline)) void *joiner_main(void *arg)
{
	arrive();
	xf_join(arg, NULL);
	return NULL;
}

static void *(*const entries[])(void *) = {
	spinner_main, yielder_main, locker_main,  receiver_main, sleeper_main,
	reader_main,  waiter_main,  conder_main, joiner_main,
};

static void spawn_kind(unsigned k)
{
	const struct fiber_kind *kind = &fiber_kinds[k];

	for (unsigned i = 0; i < kind->count; i++) {
		char name[XF_NAME_MAX];
		xf_attr attr = XF_ATTR_INIT;
		xf_fiber *f;
		void *arg = NULL;

		snprintf(name, sizeof(name), "%s-%u", kind->name, i);
		attr.name = name;
		attr.detached = entries[k] != sleeper_main;
		if (entries[k] == spinner_main || entries[k] == yielder_main) {
			attr.pinned = true;
			attr.worker = entries[k] == spinner_main ? 1 : 0;
		}
		if (entries[k] == joiner_main)
			arg = sleepers[i];
		CHECK_ERR(xf_spawn(&f, entries[k], arg, &attr), 0);
		if (entries[k] == sleeper_main)
			sleepers[i] = f;
	}
}

/* Where a debugger stops: every fiber is in its state. */
void states_ready(void);
__attribute__((noinline, used)) void states_ready(void)
{
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	xf_config cfg = {.workers = 2, .slice_us = 1000};
	const char *mode = argc > 1 ? argv[1] : "";
	unsigned total = 1;
	xf_stats stats;

	if (strcmp(mode, "ready") && strcmp(mode, "crash") && (strcmp(mode, "dump") || argc < 3)) {
		fprintf(stderr, "usage: %s dump FILE | ready | crash\n", argv[0]);
		return 2;
	}
	CHECK_ERR(xf_init(&cfg), 0);
	CHECK(pipe(pipe_fds) == 0);
	CHECK_ERR(xf_chan_create(&chan, sizeof(int), 0), 0);
	xf_mutex_lock(&mutex);
	for (unsigned k = 0; fiber_kinds[k].name; k++) {
		spawn_kind(k);
		total += fiber_kinds[k].count;
	}
	CHECK(total == STATES_FIBERS);
	/* Everyone on its way, the spinners preempted a few times, and a
	 * moment for the last to block. */
	while (atomic_load(&arrived) < (int)total - 1)
		xf_sleep_ns(1000 * 1000);
	do {
		xf_sleep_ns(20 * 1000 * 1000);
		CHECK_ERR(xf_stats_get(&stats), 0);
	} while (stats.total.preemptions < 10);
	xf_mutex_lock(&cond_mutex); /* every conder waits: it let go */
	xf_mutex_unlock(&cond_mutex);

	if (!strcmp(mode, "dump")) {
		int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);

		CHECK(fd >= 0);
		CHECK_ERR(xf_dump(fd), 0);
		close(fd);
	} else if (!strcmp(mode, "ready")) {
		states_ready();
	} else {
		states_ready();
		volatile int *nowhere = (int *)(uintptr_t)atoi("8"); /* opaque to the compiler */

		*nowhere = 1; /* the crash */
	}
	fflush(stdout);
	_exit(0); /* the others wait forever: no shutdown */
}
