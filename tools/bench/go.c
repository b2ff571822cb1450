/*
 * go.c - running the Go peer (go.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench/go.h"
#include "bench/task.h"

#ifdef XF_BENCH_GO
const char *xf_bench_go_missing(void)
{
	return access(XF_BENCH_GO, X_OK) ? "the Go peer " XF_BENCH_GO " is missing: rebuild xfiber"
					 : NULL;
}

int xf_bench_go_run(const char *mode, uint64_t n, unsigned long long *count, double *ns,
		    char *note, size_t note_size)
{
	char iters[32], out[256];
	char *argv[] = {XF_BENCH_GO, "-mode", (char *)mode, "-n", iters, NULL};
	char *env[] = {"GOMAXPROCS=1", NULL};
	pid_t pid;
	int fd, err, status;

	snprintf(iters, sizeof(iters), "%llu", (unsigned long long)n);
	/* The child inherits this thread's pinning. */
	err = xf_bench_spawn(argv, env, &pid, &fd);
	if (err) {
		snprintf(note, note_size, "cannot run %s: %s", XF_BENCH_GO, strerror(err));
		return err;
	}
	xf_bench_read_output(fd, out, sizeof(out), false);
	close(fd);
	status = xf_bench_spawn_wait(pid);
	*count = 0;
	*ns = 0;
	if (status || sscanf(out, "%llu %lf", count, ns) != 2 || *ns <= 0 || !*count) {
		snprintf(note, note_size, "%s -mode %s failed (exit status %d)", XF_BENCH_GO, mode,
			 status);
		return EIO;
	}
	return 0;
}
#else
const char *xf_bench_go_missing(void)
{
	return "Go was not found when xfiber was built (Debian golang-go: make deps, or put go "
	       "on PATH), then rebuild";
}

int xf_bench_go_run(const char *mode, uint64_t n, unsigned long long *count, double *ns,
		    char *note, size_t note_size)
{
	(void)mode;
	(void)n;
	*count = 0;
	*ns = 0;
	snprintf(note, note_size, "xfiber was built without Go");
	return ENOTSUP;
}
#endif
