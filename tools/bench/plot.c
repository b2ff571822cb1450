/* plot.c - runs bench/plot.py with a Python that has matplotlib, within a time bound. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/plot.h"

extern char **environ;

#define PLOT_TIMEOUT_S 120

#ifndef XF_BENCH_PLOT_SCRIPT
#define XF_BENCH_PLOT_SCRIPT ""
#endif
/* The Python that `make` found or set up for the plots (bench/plot-python.sh);
 * empty when the system's python3 already has matplotlib. */
#ifndef XF_BENCH_PYTHON
#define XF_BENCH_PYTHON ""
#endif

static char python[4096];

/* Runs argv (PATH searched) with stdout and, if quiet, stderr on /dev/null;
 * its exit status, or -1 if it could not run, died or overran the bound. */
static int run(char *const argv[], int quiet)
{
	posix_spawn_file_actions_t fa;
	struct timespec nap = {0, 20 * 1000 * 1000};
	int status, waited = 0;
	pid_t pid;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
	if (quiet)
		posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
	if (posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ)) {
		posix_spawn_file_actions_destroy(&fa);
		return -1;
	}
	posix_spawn_file_actions_destroy(&fa);
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
		if (r < 0 && errno != EINTR)
			return -1;
		if (waited++ > PLOT_TIMEOUT_S * 50) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -1;
		}
		nanosleep(&nap, NULL);
	}
}

static const char *script(void)
{
	const char *env = getenv("XFIBER_PLOT_SCRIPT");

	return env && *env ? env : XF_BENCH_PLOT_SCRIPT;
}

int xf_bench_plot_check(char *err, size_t err_size)
{
	/* XFIBER_PYTHON picks one; else the one the build was given, the
	 * python3 on PATH, then the system's, which is where apt-get puts
	 * python3-matplotlib. */
	const char *forced = getenv("XFIBER_PYTHON");
	const char *candidates[3];
	size_t n = 0;
	bool any_python = false;

	if (forced && *forced) {
		candidates[n++] = forced;
	} else {
		if (*XF_BENCH_PYTHON)
			candidates[n++] = XF_BENCH_PYTHON;
		candidates[n++] = "python3";
		candidates[n++] = "/usr/bin/python3";
	}

	if (!*script() || access(script(), R_OK)) {
		snprintf(err, err_size,
			 "--plot needs bench/plot.py, which is not at '%s' "
			 "(set XFIBER_PLOT_SCRIPT)",
			 script());
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		char *probe[] = {(char *)candidates[i], "-c", "import matplotlib", NULL};
		char *version[] = {(char *)candidates[i], "--version", NULL};
		int rc = run(probe, 1);

		if (rc == 0) {
			snprintf(python, sizeof(python), "%s", candidates[i]);
			return 0;
		}
		any_python |= run(version, 1) == 0;
	}
	snprintf(err, err_size,
		 "--plot needs Python 3 with matplotlib: %s (apt-get install python3-matplotlib, "
		 "or pip install matplotlib)",
		 any_python ? "matplotlib is not installed" : "python3 was not found");
	return -1;
}

int xf_bench_plot(const char *json, const char *png, char *err, size_t err_size)
{
	char *argv[] = {python, (char *)script(), (char *)json, (char *)png, NULL};
	int rc;

	if (!python[0] && xf_bench_plot_check(err, err_size))
		return -1;
	rc = run(argv, 0);
	if (rc) {
		snprintf(err, err_size, "plotting failed: %s %s exited with status %d", python,
			 script(), rc);
		return -1;
	}
	return 0;
}
