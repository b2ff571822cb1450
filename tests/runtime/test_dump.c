/*
 * test_dump.c - xf_dump names every fiber with its state and backtrace.
 *
 *   states   runtime_fiber_states (100 fibers in every state) dumps itself;
 *            each fiber appears once, in a state its kind allows, with its
 *            entry function in its own backtrace - a preempted one's
 *            through the kernel's signal frame - and the dump counts 100.
 *   signal   XFIBER_DUMP_SIGNAL=USR1: a USR1 dumps to standard error.
 *   badenv   XFIBER_DUMP_SIGNAL=NOPE: one line says so; the runtime runs.
 *   badfd    xf_dump(-1) and a closed descriptor: EBADF.
 *   idle     with no runtime: one line, 0.
 *   kernelwait  a fiber alone on its worker, in pthread_mutex_lock of a
 *            mutex another fiber holds: running, its thread in the kernel,
 *            and the dump says in what.
 *
 * usage: runtime_test_dump CASE [PATH of runtime_fiber_states]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fiber_states.h"
#include "testlib.h"
#include "xfiber.h"

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	CHECK(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	CHECK(buf && fread(buf, 1, (size_t)n, f) == (size_t)n);
	buf[n] = 0;
	fclose(f);
	return buf;
}

/* Whether state (what the dump wrote between the brackets) is one of the
 * '|'-separated prefixes in allowed. */
static int state_allowed(const char *state, const char *allowed)
{
	while (*allowed) {
		size_t n = strcspn(allowed, "|");

		if (!strncmp(state, allowed, n))
			return 1;
		allowed += n + (allowed[n] == '|');
	}
	return 0;
}

/* The block of the dump about fiber `name` (up to the blank line after
 * it), or NULL; fails if it appears twice. */
static char *fiber_block(const char *dump, const char *name)
{
	char key[64];
	const char *at, *end;
	char *block;

	snprintf(key, sizeof(key), " \"%s\" [", name);
	at = strstr(dump, key);
	if (!at)
		return NULL;
	if (strstr(at + 1, key))
		xf_test_fail("%s appears twice", name);
	while (at > dump && at[-1] != '\n')
		at--;
	end = strstr(at, "\n\n");
	block = strndup(at, end ? (size_t)(end - at) : strlen(at));
	CHECK(block);
	return block;
}

static void check_states(const char *states_prog)
{
	char path[] = "/tmp/xfiber-dump-XXXXXX";
	char cmd[4096], entry[64], *dump;
	int fd = mkstemp(path), status;
	unsigned preempted = 0;

	CHECK(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "%s dump %s", states_prog, path);
	status = system(cmd);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	dump = read_file(path);
	unlink(path);
	if (!strstr(dump, "xfiber: 100 live fibers\n"))
		xf_test_fail("no count of 100 live fibers:\n%s", dump);
	for (unsigned k = 0; fiber_kinds[k].name; k++)
		for (unsigned i = 0; i < fiber_kinds[k].count; i++) {
			char name[64];
			char *block;

			snprintf(name, sizeof(name), "%s-%u", fiber_kinds[k].name, i);
			block = fiber_block(dump, name);
			if (!block)
				xf_test_fail("%s is not in the dump:\n%s", name, dump);
			const char *state = strchr(strchr(block, '['), '[') + 1;
			if (!state_allowed(state, fiber_kinds[k].states))
				xf_test_fail("%s: state not %s:\n%s", name, fiber_kinds[k].states, block);
			preempted += !strncmp(state, "preempted", 9);
			/* Its own frames, down to its entry: the backtrace, not
			 * just the "entry" line, names it.  Running fibers have
			 * none. */
			snprintf(entry, sizeof(entry), "in %s_main+", fiber_kinds[k].name);
			if (strncmp(state, "running", 7) &&
			    (!strstr(block, "#") || !strstr(strstr(block, "#"), entry)))
				xf_test_fail("%s: no %s in its backtrace:\n%s", name, entry, block);
			free(block);
		}
	/* Two of the three spinners on worker 1 wait preempted. */
	if (preempted < 2)
		xf_test_fail("%u preempted fibers, expected at least 2:\n%s", preempted, dump);
	/* The caller's own backtrace, from xf_dump's caller. */
	char *main_block = fiber_block(dump, "main");
	CHECK(main_block && strstr(main_block, "the caller of xf_dump") &&
	      strstr(main_block, "in main+"));
	free(main_block);
	free(dump);
}

static void run_signal(void)
{
	xf_config cfg = {.workers = 2};

	CHECK_ERR(xf_init(&cfg), 0);
	raise(SIGUSR1);
	/* The dump thread writes it; give it the time it needs. */
	for (int i = 0; i < 200; i++)
		xf_sleep_ns(10 * 1000 * 1000);
	CHECK_ERR(xf_shutdown(), 0);
}

static void run_badenv(void)
{
	CHECK_ERR(xf_init(NULL), 0);
	CHECK_ERR(xf_shutdown(), 0);
}

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;

static void *lock_held(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&held);
	pthread_mutex_unlock(&held);
	return NULL;
}

static void check_kernel_wait(void)
{
	xf_attr on1 = XF_ATTR_INIT;
	xf_fiber *f;
	char path[] = "/tmp/xfiber-dump-XXXXXX", proc[64];
	int fd = mkstemp(path);
	char *dump, *block;

	CHECK(fd >= 0);
	unlink(path);
	CHECK_ERR(xf_init(&(xf_config){.workers = 2}), 0);
	pthread_mutex_lock(&held);
	on1.pinned = true;
	on1.worker = 1;
	on1.name = "kernel-waiter";
	CHECK_ERR(xf_spawn(&f, lock_held, NULL, &on1), 0);
	xf_sleep_ns(100 * 1000 * 1000); /* it has reached the kernel's wait */
	CHECK_ERR(xf_dump(fd), 0);
	pthread_mutex_unlock(&held);
	CHECK_ERR(xf_join(f, NULL), 0);
	CHECK_ERR(xf_shutdown(), 0);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	dump = read_file(proc);
	CHECK(dump);
	block = fiber_block(dump, "kernel-waiter");
	if (!block || !strstr(block, "[running on worker 1 (thread ") ||
	    !strstr(block, "), in a pthread, C11 or C++ lock or wait]"))
		xf_test_fail("the fiber in pthread_mutex_lock is not described so:\n%s", dump);
	printf("kernelwait: %.*s\n", (int)strcspn(block, "\n"), block);
	free(block);
	free(dump);
	close(fd);
}

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "";
	char out[1 << 16];
	int status;

	if (!strcmp(c, "states") && argc > 2) {
		check_states(argv[2]);
	} else if (!strcmp(c, "signal")) {
		setenv("XFIBER_DUMP_SIGNAL", "USR1", 1);
		status = xf_test_run_child(run_signal, out, sizeof(out));
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		if (!strstr(out, "\"main\" [") || !strstr(out, "xfiber: 1 live fibers"))
			xf_test_fail("no dump on SIGUSR1:\n%s", out);
	} else if (!strcmp(c, "badenv")) {
		setenv("XFIBER_DUMP_SIGNAL", "NOPE", 1);
		status = xf_test_run_child(run_badenv, out, sizeof(out));
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		if (!strstr(out, "XFIBER_DUMP_SIGNAL=NOPE: not a signal"))
			xf_test_fail("no word on a bad XFIBER_DUMP_SIGNAL:\n%s", out);
		setenv("XFIBER_DUMP_SIGNAL", "SIGURG", 1);
		status = xf_test_run_child(run_badenv, out, sizeof(out));
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		if (!strstr(out, "the runtime preempts with it"))
			xf_test_fail("the preemption signal taken for dumps:\n%s", out);
	} else if (!strcmp(c, "badfd")) {
		int fds[2];

		CHECK_ERR(xf_dump(-1), EBADF);
		CHECK(pipe(fds) == 0);
		close(fds[1]);
		CHECK_ERR(xf_dump(fds[1]), EBADF);
		close(fds[0]);
	} else if (!strcmp(c, "kernelwait")) {
		check_kernel_wait();
	} else if (!strcmp(c, "idle")) {
		int fds[2];
		ssize_t n;

		CHECK(pipe(fds) == 0);
		CHECK_ERR(xf_dump(fds[1]), 0);
		n = read(fds[0], out, sizeof(out) - 1);
		CHECK(n > 0);
		out[n] = 0;
		CHECK(!strcmp(out, "xfiber: no runtime\n"));
	} else {
		fprintf(stderr,
			"usage: %s states PROG | signal | badenv | badfd | idle | kernelwait\n",
			argv[0]);
		return 2;
	}
	return 0;
}
