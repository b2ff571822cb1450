/* run.c - see run.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run.h"
#include "testlib.h"

void temp_path(char *out, size_t size, const char *suffix)
{
	const char *dir = getenv("TMPDIR");
	int fd;

	snprintf(out, size, "%s/xfiber-bench-test-XXXXXX%s", dir && *dir ? dir : "/tmp", suffix);
	fd = mkstemps(out, (int)strlen(suffix));
	if (fd < 0)
		xf_test_fail("mkstemps %s: %s", out, strerror(errno));
	close(fd);
}

static void slurp(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, size - 1, f) : 0;

	buf[n] = 0;
	if (f)
		fclose(f);
	unlink(path);
}

void run_cmd(char *const argv[], char *const env[], int one_cpu, int timeout_s,
	     struct run_result *r)
{
	char out_path[256], err_path[256];
	struct timespec nap = {0, 10 * 1000 * 1000};
	int status;
	pid_t pid;

	temp_path(out_path, sizeof(out_path), ".out");
	temp_path(err_path, sizeof(err_path), ".err");
	pid = fork();
	if (pid < 0)
		xf_test_fail("fork: %s", strerror(errno));
	if (pid == 0) {
		int o = open(out_path, O_WRONLY | O_TRUNC), e = open(err_path, O_WRONLY | O_TRUNC);
		dup2(o, STDOUT_FILENO);
		dup2(e, STDERR_FILENO);
		for (int i = 0; env && env[i]; i++)
			putenv(env[i]);
		if (one_cpu) {
			cpu_set_t set;
			CPU_ZERO(&set);
			sched_getaffinity(0, sizeof(set), &set);
			for (int c = 0; c < CPU_SETSIZE; c++) {
				if (CPU_ISSET(c, &set)) {
					CPU_ZERO(&set);
					CPU_SET(c, &set);
					break;
				}
			}
			sched_setaffinity(0, sizeof(set), &set);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	for (int waited = 0;; waited++) {
		pid_t got = waitpid(pid, &status, WNOHANG);
		if (got == pid)
			break;
		if (waited > timeout_s * 100) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			xf_test_fail("'%s %s %s ...' hung: still running after %d s", argv[0],
				     argv[1] ? argv[1] : "", argv[1] && argv[2] ? argv[2] : "",
				     timeout_s);
		}
		nanosleep(&nap, NULL);
	}
	r->status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	slurp(out_path, r->out, sizeof(r->out));
	slurp(err_path, r->err, sizeof(r->err));
}

int count_lines(const char *s)
{
	size_t len = strlen(s);
	int n = 0;

	for (size_t i = 0; i < len; i++)
		n += s[i] == '\n';
	return n + (len && s[len - 1] != '\n');
}
