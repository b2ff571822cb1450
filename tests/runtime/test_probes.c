/*
 * test_probes.c - the runtime's USDT probes (src/common/probes.h).
 *
 *   runtime_test_probes exist   readelf -n on this program (the library is
 *                               linked in) lists every probe of the provider
 *   runtime_test_probes count   bpftrace, attached to this process, counts
 *                               the fibers it spawns and the ones that end:
 *                               skipped, with the reason, where bpftrace is
 *                               missing, the user is not root, or the
 *                               kernel refuses the attach
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/probes.h"
#include "testlib.h"
#include "xfiber.h"

#define FIBERS 100

static const char *const probes[] = {
    "fiber__create", "fiber__exit", "fiber__switch", "fiber__preempt", "fiber__preempt__deferred",
    "fiber__block",  "fiber__wake", "fiber__steal",  "io__wait",	   "io__ready",
    "preempt__tick",
};

static void check_exist(void)
{
	char cmd[64], line[512], *notes = NULL;
	size_t len = 0;
	FILE *out;

	if (!XF_PROBES_BUILT)
		xf_test_skip("built without <sys/sdt.h> (Debian systemtap-sdt-dev): no probes");
	snprintf(cmd, sizeof(cmd), "readelf -n /proc/%d/exe", (int)getpid());
	out = popen(cmd, "r");
	CHECK(out != NULL);
	while (fgets(line, sizeof(line), out)) {
		size_t n = strlen(line);

		notes = realloc(notes, len + n + 1);
		CHECK(notes != NULL);
		memcpy(notes + len, line, n + 1);
		len += n;
	}
	if (pclose(out) != 0 || !notes)
		xf_test_skip("readelf (binutils) did not run");
	for (size_t i = 0; i < sizeof(probes) / sizeof(*probes); i++) {
		char want[64];

		snprintf(want, sizeof(want), "Name: %s\n", probes[i]);
		if (!strstr(notes, want))
			xf_test_fail("no probe xfiber:%s in readelf -n", probes[i]);
	}
	CHECK(strstr(notes, "Provider: xfiber"));
	free(notes);
	printf("exist: all %zu probes are in the ELF notes\n", sizeof(probes) / sizeof(*probes));
}

static void *nothing(void *arg)
{
	return arg;
}

/* Reads what bpftrace printed so far (non-blocking after the first wait). */
static void read_some(int fd, char *buf, size_t size, size_t *len, int timeout_s)
{
	time_t until = time(NULL) + timeout_s;

	while (*len + 1 < size && time(NULL) <= until) {
		fd_set set;
		struct timeval tv = {0, 100000};
		ssize_t n;

		FD_ZERO(&set);
		FD_SET(fd, &set);
		if (select(fd + 1, &set, NULL, NULL, &tv) <= 0)
			continue;
		n = read(fd, buf + *len, size - 1 - *len);
		if (n <= 0)
			break;
		*len += (size_t)n;
		buf[*len] = 0;
		if (strstr(buf, "Attaching") && strstr(buf, "probes"))
			return;
	}
}

static void check_count(void)
{
	char exe[1024], prog[4096], pid[16], out[8192] = "";
	char *args[] = {"bpftrace", "-p", pid, "-e", prog, NULL};
	xf_fiber *f[FIBERS];
	size_t len = 0;
	int fds[2], status;
	long created = -1, exited = -1;
	ssize_t n;
	pid_t child;
	char *at;

	if (!XF_PROBES_BUILT)
		xf_test_skip("built without <sys/sdt.h> (Debian systemtap-sdt-dev): no probes");
	if (geteuid() != 0)
		xf_test_skip("bpftrace needs root");
	if (access("/usr/bin/bpftrace", X_OK))
		xf_test_skip("no bpftrace (Debian bpftrace)");
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	CHECK(n > 0);
	exe[n] = 0;
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	snprintf(prog, sizeof(prog),
		 "usdt:%s:xfiber:fiber__create { @created = count(); } "
		 "usdt:%s:xfiber:fiber__exit { @exited = count(); }",
		 exe, exe);
	CHECK(pipe(fds) == 0);
	child = fork();
	CHECK(child >= 0);
	if (child == 0) {
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		execv("/usr/bin/bpftrace", args);
		_exit(127);
	}
	close(fds[1]);
	read_some(fds[0], out, sizeof(out), &len, 30);
	if (!strstr(out, "Attaching")) {
		kill(child, SIGKILL);
		waitpid(child, &status, 0);
		xf_test_skip("bpftrace did not attach: %.200s", out);
	}
	usleep(200000); /* attached means the uprobes are in place */
	CHECK_ERR(xf_init(&(xf_config){.workers = 2}), 0);
	for (int i = 0; i < FIBERS; i++)
		CHECK_ERR(xf_spawn(&f[i], nothing, NULL, NULL), 0);
	for (int i = 0; i < FIBERS; i++)
		CHECK_ERR(xf_join(f[i], NULL), 0);
	CHECK_ERR(xf_shutdown(), 0);
	kill(child, SIGINT); /* bpftrace prints its maps and exits */
	for (int tenths = 0; waitpid(child, &status, WNOHANG) == 0; tenths++) {
		if (tenths == 150) {
			kill(child, SIGKILL); /* never hang the suite on the tracer */
			waitpid(child, &status, 0);
			xf_test_fail("bpftrace did not exit 15 s after SIGINT");
		}
		usleep(100000);
	}
	while (len + 1 < sizeof(out) && (n = read(fds[0], out + len, sizeof(out) - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = 0;
	if ((at = strstr(out, "@created: ")))
		created = strtol(at + 10, NULL, 10);
	if ((at = strstr(out, "@exited: ")))
		exited = strtol(at + 9, NULL, 10);
	if (created != FIBERS || exited != FIBERS)
		xf_test_fail("bpftrace counted %ld creates and %ld exits, not %d: %s", created,
			     exited, FIBERS, out);
	printf("count: bpftrace saw %ld fibers created and %ld ended\n", created, exited);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "exist"))
		check_exist();
	else if (argc > 1 && !strcmp(argv[1], "count"))
		check_count();
	else
		xf_test_fail("usage: runtime_test_probes exist|count");
	return 0;
}
