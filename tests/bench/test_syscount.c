/*
 * test_syscount.c - the bench's system call counter (tools/bench/
 * syscount.c) counts another process's calls, those of the threads it
 * starts after the count began included, and says why when it cannot.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/syscount.h"
#include "testlib.h"

#define CALLS 100000

static void *caller(void *arg)
{
	for (int i = 0; i < CALLS; i++)
		syscall(SYS_getppid);
	return arg;
}

int main(void)
{
	struct xf_syscount c;
	char note[200] = "";
	int go[2], done[2], err;
	uint64_t before, after;
	pthread_t t;
	pid_t pid;
	char b;

	CHECK(!pipe(go) && !pipe(done));
	pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		/* Waits to be counted, then makes CALLS calls itself and CALLS
		 * on a thread started only now. */
		if (read(go[0], &b, 1) != 1)
			_exit(1);
		pthread_create(&t, NULL, caller, NULL);
		caller(NULL);
		pthread_join(t, NULL);
		if (write(done[1], "d", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	err = xf_syscount_start(&c, pid, note, sizeof(note));
	if (err) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		CHECK(note[0]); /* the reason, in one line */
		if (err == EACCES || err == EPERM || err == ENOENT)
			xf_test_skip("%s", note);
		fprintf(stderr, "xf_syscount_start: %s\n", note);
		return 1;
	}
	before = xf_syscount_read(&c);
	CHECK(write(go[1], "g", 1) == 1);
	CHECK(read(done[0], &b, 1) == 1);
	after = xf_syscount_read(&c);
	xf_syscount_stop(&c);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	printf("counted %llu calls for %d made\n", (unsigned long long)(after - before), 2 * CALLS);
	/* Both threads' calls, and the few around them (read, clone, join,
	 * write): not far more. */
	CHECK(after - before >= 2 * CALLS);
	CHECK(after - before < 2 * CALLS + 1000);
	/* Of a process that is not there: an error and a reason. */
	note[0] = 0;
	CHECK(xf_syscount_start(&c, pid, note, sizeof(note)) != 0 && note[0]);
	return 0;
}
