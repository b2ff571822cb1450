/*
 * syscount.c - system calls of another process, counted (syscount.h).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bench/syscount.h"
#include "common/tracefs.h"

/* The tracepoint's id, from tracefs wherever it is mounted, or from one
 * mounted for the moment (a fresh VM mounts none): the counters need only
 * the id.  -1 with *err set if none. */
static long sys_enter_id(int *err)
{
	char root[256], path[320];
	bool mounted_here;
	long id = -1;
	FILE *f;

	*err = xf_tracefs_find_or_mount(root, sizeof(root), &mounted_here);
	if (*err)
		return -1;
	snprintf(path, sizeof(path), "%s/events/raw_syscalls/sys_enter/id", root);
	f = fopen(path, "r");
	if (!f || fscanf(f, "%ld", &id) != 1) {
		*err = f ? EINVAL : errno;
		id = -1;
	}
	if (f)
		fclose(f);
	if (mounted_here)
		umount(root);
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
	int err;
	long id = sys_enter_id(&err);
	DIR *dir;

	c->n = 0;
	if (id < 0) {
		snprintf(note, note_size, "no raw_syscalls:sys_enter tracepoint: %s%s",
			 strerror(err),
			 err == EPERM ? " (tracefs not mounted; root may mount it)" : "");
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
