/*
 * test_spawn.c - the bench's child processes (tools/bench/task.c,
 * xf_bench_spawn): the output is the caller's to read, an exec that fails
 * is an errno, and a child never outlives the benchmark, even one killed
 * with SIGKILL - whose watchdog cannot then stop it (servers left spinning
 * skewed every later measurement).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/task.h"
#include "testlib.h"

static void output(void)
{
	char *argv[] = {"/bin/sh", "-c", "echo \"$XF_SPAWN_TEST\"", NULL};
	char *env[] = {"XF_SPAWN_TEST=first", NULL};
	char buf[64];
	pid_t pid;
	int fd;

	CHECK_ERR(xf_bench_spawn(argv, env, &pid, &fd), 0);
	xf_bench_read_output(fd, buf, sizeof(buf), false);
	close(fd);
	CHECK(xf_bench_spawn_wait(pid) == 0);
	if (strcmp(buf, "first\n"))
		xf_test_fail("output: read \"%s\", want \"first\\n\"", buf);
}

static void missing(void)
{
	char *argv[] = {"/nonexistent/xfiber-server", NULL};
	pid_t pid = 0;
	int fd = -1;

	CHECK_ERR(xf_bench_spawn(argv, NULL, &pid, &fd), ENOENT);
}

/* A benchmark (a child of ours) spawns a long sleep and is killed with
 * SIGKILL: the sleep must go too.  We are the subreaper, so the orphan
 * comes to us, and we learn how it ended. */
static void orphan(void)
{
	int report[2];
	pid_t bench, server = 0;
	struct timespec t0, t1;
	int status;

	CHECK(!prctl(PR_SET_CHILD_SUBREAPER, 1));
	CHECK(!pipe(report));
	bench = fork();
	CHECK(bench >= 0);
	if (!bench) {
		char *argv[] = {"/bin/sleep", "30", NULL};
		pid_t pid;
		int fd;

		if (xf_bench_spawn(argv, NULL, &pid, &fd) ||
		    write(report[1], &pid, sizeof(pid)) != sizeof(pid))
			_exit(1);
		pause();
		_exit(0);
	}
	CHECK(read(report[0], &server, sizeof(server)) == sizeof(server));
	CHECK(!kill(bench, SIGKILL));
	CHECK(waitpid(bench, NULL, 0) == bench);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK(waitpid(server, &status, 0) == server);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
		xf_test_fail("orphan: the server outlived its benchmark (status %#x)", status);
	printf("orphan: the server died with its benchmark, %.1f ms later\n",
	       (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
}

int main(int argc, char **argv)
{
	if (argc != 2)
		xf_test_fail("usage: test_spawn output|missing|orphan");
	if (!strcmp(argv[1], "output"))
		output();
	else if (!strcmp(argv[1], "missing"))
		missing();
	else if (!strcmp(argv[1], "orphan"))
		orphan();
	else
		xf_test_fail("unknown case %s", argv[1]);
	return 0;
}
