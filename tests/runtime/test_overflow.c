/*
 * test_overflow.c - a fiber that overflows its stack is named on stderr
 * and the process aborts: never silent corruption.  Runs the overflow in a
 * child process and reads what it printed.
 */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"
#include "xfiber.h"

static volatile int depth_limit = 1 << 30; /* never reached: the stack ends first */

static int recurse(volatile char *prev, int depth)
{
	volatile char frame[1024];

	frame[0] = prev ? prev[0] + 1 : 0;
	if (depth >= depth_limit)
		return frame[0];
	return recurse(frame, depth + 1) + frame[1];
}

static void *overflow(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)recurse(NULL, 0);
}

static void child(void)
{
	xf_fiber *f;

	xf_init(&(xf_config){.workers = 1});
	xf_spawn(&f, overflow, NULL, NULL);
	xf_join(f, NULL); /* returns only if the overflow went unnoticed */
}

int main(void)
{
	char out[1024];
	int status = xf_test_run_child(child, out, sizeof(out));

	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT)
		xf_test_fail("child did not abort (status 0x%x); it printed: %s", status, out);
	if (!strstr(out, "fiber 2 overflowed its stack"))
		xf_test_fail("no overflow report; stderr was: %s", out);
	printf("overflow reported: %s", out);
	return 0;
}
