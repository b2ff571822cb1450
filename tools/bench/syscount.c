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
#include "common/tracefs.h"

/* The tracepoint's id, from tracefs (common/tracefs.c: a fresh VM mounts
 * none, and one of our own is then made for the moment); the counters need
 * nothing else from it.  -1 with *err set if none. */
static long sys_enter_id(int *err)
{
	int fd = xf_tracefs_open_file("events/raw_syscalls/sys_enter/id");
	char buf[32];
	ssize_t n;
	long id;

	if (fd < 0) {
		*err = errno;
		return -1;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	*err = n < 0 ? errno : EINVAL;
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	id = strtol(buf, NULL, 10);
	return id > 0 ? id : -1;
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
	int err;
	long id = sys_enter_id(&err);
	DIR *dir;

	c->n = 0;
	if (id < 0) {
		snprintf(note, note_size, "no raw_syscalls:sys_enter tracepoint: %s%s",
			 strerror(err),
			 err == EPERM || err == EACCES ? " (tracefs needs root)" : "");
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
			err = errno;
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
