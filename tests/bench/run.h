/* run.h - running the xfiber command from a test: its exit status and what it printed. */
#ifndef XF_TESTS_BENCH_RUN_H
#define XF_TESTS_BENCH_RUN_H

#include <stddef.h>

struct run_result {
	int status;	   /* exit status; -1 if it died by a signal or overran */
	char out[1 << 17]; /* stdout, truncated */
	char err[1 << 14]; /* stderr, truncated */
};

/* Runs argv (argv[0] the program) with the extra environment strings env
 * (NULL-terminated, may be NULL), pinned to one CPU when one_cpu is set;
 * fails the test if it runs past timeout_s seconds. */
void run_cmd(char *const argv[], char *const env[], int one_cpu, int timeout_s,
	     struct run_result *r);

/* Lines in s (a last line without its newline counts). */
int count_lines(const char *s);

/* A temporary file name (the file exists, empty) under $TMPDIR or /tmp. */
void temp_path(char *out, size_t size, const char *suffix);

#endif
