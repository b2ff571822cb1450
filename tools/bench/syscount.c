/*
 * syscount.c - system calls of another process, counted (syscount.h).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bench/syscount.h"

/* The tracepoint's id, from tracefs wherever it is mounted; -1 if none. */
static long sys_enter_id(void)
{
	static const char *const paths[] = {
	    "/sys/kernel/tracing/events/raw_syscalls/sys_enter/id",
	    "/sys/kernel/debug/tracing/events/raw_syscalls/sys_enter/id",
	};
	long id = -1;

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]) && id < 0; i++) {
		FILE *f = fopen(paths[i], "r");

		if (!f)
			continue;
		if (fscanf(f, "%ld", &id) != 1)
			id = -1;
		fclose(f);
	}
	return id;
}

int xf_syscount_start(struct xf_syscount *c, pid_t pid, char *note, size_t note_size)
{
	struct perf_event_attr attr = {
	    .type = PERF_TYPE_TRACEPOINT,
	    .size = sizeof(attr),
	    .inherit = 1, /* and the threads it starts from now on */
	};
	char path[64];
	struct dirent *d;
	long id = sys_enter_id();
	DIR *dir;

	c->n = 0;
	if (id < 0) {
		snprintf(note, note_size,
			 "no raw_syscalls:sys_enter tracepoint (tracefs not mounted)");
		return ENOENT;
	}
	attr.config = (unsigned long)id;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir) {
		snprintf(note, note_size, "%s: %s", path, strerror(errno));
		return errno;
	}
	while ((d = readdir(dir)) && c->n < XF_SYSCOUNT_THREADS_MAX) {
		int tid = atoi(d->d_name), fd;

		if (tid <= 0)
			continue;
		fd = (int)syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			int err = errno;

			if (err == ESRCH)
				continue; /* gone meanwhile */
			closedir(dir);
			xf_syscount_stop(c);
			snprintf(note, note_size,
				 "cannot count system calls: perf_event_open: %s (root, or "
				 "kernel.perf_event_paranoid <= -1)",
				 strerror(err));
			return err;
		}
		c->fds[c->n++] = fd;
	}
	closedir(dir);
	return 0;
}

uint64_t xf_syscount_read(const struct xf_syscount *c)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < c->n; i++) {
		uint64_t v;

		if (read(c->fds[i], &v, sizeof(v)) == (ssize_t)sizeof(v))
			sum += v;
	}
	return sum;
}

void xf_syscount_stop(struct xf_syscount *c)
{
	for (unsigned i = 0; i < c->n; i++)
		close(c->fds[i]);
	c->n = 0;
}
