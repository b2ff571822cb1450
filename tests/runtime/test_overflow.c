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

int main(void)
{
	int pipefd[2], status;
	char out[1024] = {0};
	pid_t pid;
	ssize_t n;

	CHECK(pipe(pipefd) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		xf_fiber *f;
		dup2(pipefd[1], STDERR_FILENO);
		xf_init(&(xf_config){.workers = 1});
		xf_spawn(&f, overflow, NULL, NULL);
		xf_join(f, NULL);
		_exit(0); /* reached only if the overflow went unnoticed */
	}
	close(pipefd[1]);
	n = 0;
	for (ssize_t r; n < (ssize_t)sizeof(out) - 1; n += r) {
		r = read(pipefd[0], out + n, sizeof(out) - 1 - (size_t)n);
		if (r <= 0)
			break;
	}
	waitpid(pid, &status, 0);
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT)
		xf_test_fail("child did not abort (status 0x%x); it printed: %s", status, out);
	if (n <= 0 || !strstr(out, "fiber 2 overflowed its stack"))
		xf_test_fail("no overflow report; stderr was: %s", out);
	printf("overflow reported: %s", out);
	return 0;
}
