/*
 * test_stall.c - a worker stuck in code that cannot be preempted is
 * reported, once, with the stuck fiber's backtrace (preempt/stall.c).
 *
 * A fiber pinned to worker 1 waits in the kernel in a raw read() of an
 * empty pipe - libc code, where preemption is deferred - while another
 * fiber pinned there waits to run (this one, the first fiber, stays on
 * worker 0).  With XFIBER_STALL_MS=300 the ticker must say so on stderr
 * within a few seconds: the worker, the fiber's name, its backtrace down to
 * its own function.  Then the pipe is written and everything ends normally.
 *
 * usage: test_stall report|off|badenv|mask
 *   report  the report appears, once, naming stuck_reader
 *   mask    a fiber spinning with SIGUSR2 blocked besides the workers' mask
 *           is never preempted: the report says so, and names the signal
 *   off     XFIBER_STALL_MS=off: nothing is said
 *   badenv  XFIBER_STALL_MS=soon: xf_init fails with EINVAL, saying why
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"
#include "xfiber.h"

static int pipefd[2];
static volatile int queued_ran;

/* Exported (ENABLE_EXPORTS): the report names it. */
void *stuck_reader(void *arg);
__attribute__((noinline)) void *stuck_reader(void *arg)
{
	char c;

	(void)arg;
	/* A raw system call: no fiber wait, the worker's thread itself blocks. */
	if (syscall(SYS_read, pipefd[0], &c, 1) != 1)
		xf_test_fail("read: %s", strerror(errno));
	return NULL;
}

static void *queued(void *arg)
{
	(void)arg;
	queued_ran = 1;
	return NULL;
}

static void stall_for(unsigned ms)
{
	xf_fiber *reader, *other;
	xf_attr attr = XF_ATTR_INIT;
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

	CHECK(pipe(pipefd) == 0);
	CHECK_ERR(xf_init(&(xf_config){.workers = 2, .slice_us = 100}), 0);
	attr.pinned = true;
	attr.worker = 1; /* the first fiber, this one, runs on worker 0 */
	attr.name = "stuck-reader";
	CHECK_ERR(xf_spawn(&reader, stuck_reader, NULL, &attr), 0);
	attr.name = NULL;
	xf_sleep_ns(20 * 1000 * 1000); /* it blocks */
	CHECK_ERR(xf_spawn(&other, queued, NULL, &attr), 0);
	/* Worker 0 goes on meanwhile. */
	nanosleep(&ts, NULL);
	CHECK(!queued_ran);
	CHECK(write(pipefd[1], "x", 1) == 1);
	CHECK_ERR(xf_join(reader, NULL), 0);
	CHECK_ERR(xf_join(other, NULL), 0);
	CHECK(queued_ran);
	CHECK_ERR(xf_shutdown(), 0);
}

static void child_report(void)
{
	setenv("XFIBER_STALL_MS", "300", 1);
	stall_for(2000);
}

static void child_off(void)
{
	setenv("XFIBER_STALL_MS", "off", 1);
	stall_for(1000);
}

static void child_badenv(void)
{
	setenv("XFIBER_STALL_MS", "soon", 1);
	CHECK_ERR(xf_init(&(xf_config){.workers = 1}), EINVAL);
}

static atomic_bool unmask;

/* Spins with SIGUSR2 blocked until told, then puts the mask back. */
static void *spins_masked(void *arg)
{
	sigset_t usr2, old;

	(void)arg;
	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	CHECK(pthread_sigmask(SIG_BLOCK, &usr2, &old) == 0);
	while (!atomic_load(&unmask))
		;
	CHECK(pthread_sigmask(SIG_SETMASK, &old, NULL) == 0);
	return NULL;
}

static void child_mask(void)
{
	xf_fiber *spinner, *other;
	xf_attr on1 = {.pinned = true, .worker = 1};
	struct timespec ts = {1, 500000000};

	setenv("XFIBER_STALL_MS", "300", 1);
	CHECK_ERR(xf_init(&(xf_config){.workers = 2, .slice_us = 100}), 0);
	CHECK_ERR(xf_spawn(&spinner, spins_masked, NULL, &on1), 0);
	xf_sleep_ns(20 * 1000 * 1000);
	CHECK_ERR(xf_spawn(&other, queued, NULL, &on1), 0);
	nanosleep(&ts, NULL);
	CHECK(!queued_ran); /* never preempted under that mask */
	atomic_store(&unmask, true);
	CHECK_ERR(xf_join(spinner, NULL), 0);
	CHECK_ERR(xf_join(other, NULL), 0);
	CHECK(queued_ran);
	CHECK_ERR(xf_shutdown(), 0);
}

static unsigned count(const char *s, const char *what)
{
	unsigned n = 0;

	for (; (s = strstr(s, what)); s++)
		n++;
	return n;
}

int main(int argc, char **argv)
{
	static char out[65536];
	int status;

	if (argc != 2)
		xf_test_fail("usage: test_stall report|off|badenv|mask");
	if (!strcmp(argv[1], "report")) {
		status = xf_test_run_child(child_report, out, sizeof(out));
		fputs(out, stdout);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		CHECK(count(out, "xfiber: worker 1 ") == 1); /* once per stall */
		CHECK(!strstr(out, "xfiber: worker 0 ")); /* the first fiber switched: no stall */
		CHECK(strstr(out, "has not switched for"));
		CHECK(strstr(out, "while others wait"));
		CHECK(strstr(out, "\"stuck-reader\" [running on worker 1"));
		CHECK(strstr(out, "in stuck_reader+")); /* the backtrace reaches its own code */
		CHECK(strstr(out, "    #0 ")); /* ... from the interrupted instruction */
		CHECK(strstr(out, "it runs code that cannot be preempted"));
		CHECK(!strstr(out, "signal mask"));
	} else if (!strcmp(argv[1], "mask")) {
		status = xf_test_run_child(child_mask, out, sizeof(out));
		fputs(out, stdout);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		CHECK(count(out, "xfiber: worker 1 ") == 1);
		CHECK(strstr(out, "it runs under a signal mask other than the workers'"));
		CHECK(strstr(out, "its signal mask blocks SIGUSR2 besides the workers' mask"));
	} else if (!strcmp(argv[1], "off")) {
		status = xf_test_run_child(child_off, out, sizeof(out));
		fputs(out, stdout);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		CHECK(!strstr(out, "xfiber: worker"));
	} else if (!strcmp(argv[1], "badenv")) {
		status = xf_test_run_child(child_badenv, out, sizeof(out));
		fputs(out, stdout);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		CHECK(strstr(out, "XFIBER_STALL_MS=soon"));
	} else {
		xf_test_fail("unknown case %s", argv[1]);
	}
	printf("%s: ok\n", argv[1]);
	return 0;
}
