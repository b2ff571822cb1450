/*
 * test_overflow.c - a fiber that runs out of stack is named on stderr and
 * the process aborts: never silent corruption, never a silent SIGSEGV.
 * Each case runs in a child process; the parent reads what it printed.
 *
 *   guard   user frames run into the guard below the stack;
 *   frame   the kernel finds no room for a signal frame: the fiber's frames
 *           reach deeper and deeper, and at each depth it sends itself the
 *           preemption signal, until one frame does not fit;
 *   flood   another thread sends the preemption signal faster than it can
 *           be handled, which nests handler frames (SA_NODEFER) until they
 *           do not fit - and keeps sending while the report runs.  On a
 *           machine where the sender cannot outpace the deliveries the
 *           child finishes instead, which is fine too; dying silently is not.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"
#include "xfiber.h"

static volatile int depth_limit = 1 << 30; /* guard: never reached, the stack ends first */
static volatile bool signal_at_bottom;

static int recurse(volatile char *prev, int depth)
{
	volatile char frame[1024];

	frame[0] = prev ? prev[0] + 1 : 0;
	if (depth >= depth_limit) {
		if (signal_at_bottom)
			syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), SIGURG);
		return frame[0];
	}
	return recurse(frame, depth + 1) + frame[1];
}

static void *overflow(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)recurse(NULL, 0);
}

static void *deeper_each_time(void *arg)
{
	(void)arg;
	signal_at_bottom = true;
	for (depth_limit = 0; depth_limit < 1 << 20; depth_limit++)
		recurse(NULL, 0);
	return NULL;
}

static void run_one_fiber(void *(*fn)(void *))
{
	xf_fiber *f;

	/* Cooperative: the only preemption signals are the test's own. */
	xf_init(&(xf_config){.workers = 1, .cooperative = true});
	xf_spawn(&f, fn, NULL, NULL);
	xf_join(f, NULL); /* returns only if the overflow went unnoticed */
}

static void child_guard(void)
{
	run_one_fiber(overflow);
}

static void child_frame(void)
{
	run_one_fiber(deeper_each_time);
}

static pid_t worker_tid;
static atomic_bool flood_stop;

static void *flood(void *arg)
{
	(void)arg;
	while (!atomic_load(&flood_stop))
		syscall(SYS_tgkill, getpid(), worker_tid, SIGURG);
	return NULL;
}

static void *spin(void *arg)
{
	volatile uint64_t x = 0;

	for (uint64_t i = 0; i < 200000000u; i++)
		x += i;
	return arg;
}

static void child_flood(void)
{
	xf_fiber *f[2];
	pthread_t t;

	worker_tid = (pid_t)syscall(SYS_gettid);
	xf_init(&(xf_config){.workers = 1});
	pthread_create(&t, NULL, flood, NULL);
	for (int i = 0; i < 2; i++)
		xf_spawn(&f[i], spin, NULL, NULL);
	for (int i = 0; i < 2; i++)
		xf_join(f[i], NULL);
	atomic_store(&flood_stop, true);
	pthread_join(t, NULL);
	xf_shutdown();
}

/* Aborted after naming the fiber (any, if NULL) and the cause (if given). */
static bool reported(int status, const char *out, const char *fiber, const char *why)
{
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT &&
	       strstr(out, fiber ? fiber : " overflowed its stack") && (!why || strstr(out, why));
}

int main(void)
{
	static const char no_room[] = "no room left for a signal frame";
	static const char fiber2[] = "fiber 2 overflowed its stack";
	char out[1024];
	int status;

	status = xf_test_run_child(child_guard, out, sizeof(out));
	if (!reported(status, out, fiber2, NULL) || strstr(out, no_room))
		xf_test_fail("guard: no overflow report (status 0x%x); stderr was: %s", status,
			     out);
	printf("guard: %s", out);

	status = xf_test_run_child(child_frame, out, sizeof(out));
	if (!reported(status, out, fiber2, no_room))
		xf_test_fail("frame: no report of the signal frame (status 0x%x); stderr was: %s",
			     status, out);
	printf("frame: %s", out);

	status = xf_test_run_child(child_flood, out, sizeof(out));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		printf("flood: the sender did not outpace the deliveries; the child finished\n");
	else if (reported(status, out, NULL, no_room)) /* either fiber: they take turns */
		printf("flood: %s", out);
	else
		xf_test_fail("flood: the child died without a report (status 0x%x); stderr was: %s",
			     status, out);
	return 0;
}
