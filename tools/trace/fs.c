/* fs.c - see fs.h. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trace/fs.h"

#define INSTANCE_PREFIX "xfiber-"

void xf_trace_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("xfiber trace: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static int join(char *out, size_t size, const char *base, const char *rel)
{
	int n = snprintf(out, size, "%s/%s", base, rel);

	return n < 0 || (size_t)n >= size ? -1 : 0;
}

int xf_tracefs_open(struct xf_tracefs *fs)
{
	int err;

	memset(fs, 0, sizeof(*fs));
	err = xf_tracefs_find_or_mount(fs->root, sizeof(fs->root), &fs->mounted_here);
	if (!err)
		return 0;
	if (err == ENODEV)
		xf_trace_error("this kernel has no tracefs (built without CONFIG_TRACING)");
	else if (err == ENOENT)
		xf_trace_error("tracefs is not mounted and %s does not exist to mount it on",
			       fs->root);
	else
		xf_trace_error("tracefs is not mounted and mounting it on %s failed: %s", fs->root,
			       strerror(err));
	return -1;
}

/* An instance named xfiber-PID whose PID no longer exists was left behind. */
static void remove_stale_instances(const char *instances)
{
	DIR *dir = opendir(instances);
	struct dirent *d;

	if (!dir)
		return;
	while ((d = readdir(dir))) {
		char path[PATH_MAX], *end;
		long pid;

		if (strncmp(d->d_name, INSTANCE_PREFIX, strlen(INSTANCE_PREFIX)))
			continue;
		pid = strtol(d->d_name + strlen(INSTANCE_PREFIX), &end, 10);
		if (*end || pid <= 0 || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		if (join(path, sizeof(path), instances, d->d_name) == 0 && rmdir(path) == 0)
			fprintf(stderr, "xfiber trace: removed %s, left by a killed xfiber\n",
				path);
	}
	closedir(dir);
}

int xf_tracefs_instance_create(struct xf_tracefs *fs)
{
	char instances[PATH_MAX], name[64];

	if (join(instances, sizeof(instances), fs->root, "instances")) {
		xf_trace_error("tracefs path too long");
		return -1;
	}
	remove_stale_instances(instances);
	snprintf(name, sizeof(name), INSTANCE_PREFIX "%d", (int)getpid());
	if (join(fs->instance, sizeof(fs->instance), instances, name)) {
		xf_trace_error("tracefs path too long");
		fs->instance[0] = 0;
		return -1;
	}
	if (mkdir(fs->instance, 0755)) {
		xf_trace_error("cannot create the trace instance %s: %s", fs->instance,
			       strerror(errno));
		fs->instance[0] = 0;
		return -1;
	}
	fs->instance_name = strrchr(fs->instance, '/') + 1;
	/* A new instance starts with tracing on; nothing may record until
	 * the filters are in place. */
	return xf_tracefs_write(fs, "tracing_on", "0");
}

int xf_tracefs_write(const struct xf_tracefs *fs, const char *rel, const char *value)
{
	char path[PATH_MAX];
	size_t len = strlen(value);
	ssize_t n;
	int fd;

	if (join(path, sizeof(path), fs->instance, rel)) {
		xf_trace_error("tracefs path too long");
		return -1;
	}
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0) {
		xf_trace_error("cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	n = write(fd, value, len);
	if (n != (ssize_t)len) {
		xf_trace_error("cannot write '%s' to %s: %s", value, path,
			       n < 0 ? strerror(errno) : "short write");
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

long xf_tracefs_read(const char *base, const char *rel, char *buf, size_t size)
{
	char path[PATH_MAX];
	size_t used = 0;
	int fd;

	if (size == 0 || join(path, sizeof(path), base, rel))
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while (used + 1 < size) {
		ssize_t n = read(fd, buf + used, size - 1 - used);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		used += (size_t)n;
	}
	close(fd);
	buf[used] = 0;
	return (long)used;
}

int xf_tracefs_close(struct xf_tracefs *fs)
{
	int ret = 0;

	if (fs->instance[0]) {
		/* Stop first: if the directory cannot go, nothing is left recording. */
		if (xf_tracefs_write(fs, "tracing_on", "0"))
			ret = -1;
		if (rmdir(fs->instance)) {
			xf_trace_error(
			    "cannot remove the trace instance %s: %s (tracing in it is off)",
			    fs->instance, strerror(errno));
			ret = -1;
		}
		fs->instance[0] = 0;
	}
	if (fs->mounted_here) {
		if (umount(fs->root)) {
			xf_trace_error("cannot unmount tracefs from %s again: %s", fs->root,
				       strerror(errno));
			ret = -1;
		}
		fs->mounted_here = false;
	}
	return ret;
}
