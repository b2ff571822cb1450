/*
 * task.h - the tasks a benchmark runs: kernel threads or forked
 * processes, each pinned to a CPU, and memory both kinds can share.  Every
 * child process is tracked so the run watchdog can end it.
 */
#ifndef XF_TOOLS_BENCH_TASK_H
#define XF_TOOLS_BENCH_TASK_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct xf_bench_task {
	bool process;
	pid_t pid;
	pthread_t thread;
	int (*fn)(void *);
	void *arg;
	int cpu;
	int result; /* threads: fn's return value */
};

/* Starts fn(arg) in a new thread, or a forked process when process is true,
 * pinned to cpu (-1: the caller's CPUs).  0 or an errno value. */
int xf_bench_task_start(struct xf_bench_task *t, bool process, int cpu, int (*fn)(void *),
			void *arg);
/* Waits for the task; fn's return value (a process's exit status), or -1 if
 * it died abnormally. */
int xf_bench_task_wait(struct xf_bench_task *t);

/* Runs argv[0] (with the extra environment strings env, NULL-terminated) with
 * its standard output on *out_fd.  0 or an errno value (the exec's too).
 * The child is killed when the calling thread ends, even by SIGKILL of the
 * whole benchmark: wait for it on the thread that spawned it. */
int xf_bench_spawn(char *const argv[], char *const env[], pid_t *pid, int *out_fd);
/* Reads a spawned child's output (its *out_fd) into buf, NUL-terminated:
 * to its end, or with first_line only up to the first newline. */
void xf_bench_read_output(int fd, char *buf, size_t size, bool first_line);
/* Waits for a spawned child: its exit status, or -1. */
int xf_bench_spawn_wait(pid_t pid);

/* Kills every child process still tracked (from the watchdog; async-signal-safe). */
void xf_bench_kill_children(void);

/* The calling process's resident set in KiB (VmRSS); -1 if unknown. */
long xf_bench_rss_kb(void);

/* Zeroed memory shared with forked children (MAP_SHARED). NULL on failure. */
void *xf_bench_shared_alloc(size_t size);
void xf_bench_shared_free(void *p, size_t size);

/* Pins the calling thread to the n CPUs in cpus (n = 0: back to the CPUs it
 * had when the program started).  0 or an errno value. */
int xf_bench_pin(const int *cpus, int n);
/* The CPUs this process may run on: their count, and the first max of them. */
int xf_bench_allowed_cpus(int *cpus, int max);

#endif
