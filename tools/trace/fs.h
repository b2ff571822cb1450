/*
 * fs.h - tracefs for `xfiber trace`: find or mount it, create a trace
 * instance of our own, write its control files, and put everything back.
 *
 * Every change goes into the instance (instances/xfiber-PID), never into the
 * top level, so other tracefs users are not disturbed; removing the
 * instance removes its buffers, events and settings in one step.  Errors are
 * printed here as one line ("xfiber trace: ...") and returned as -1.
 */
#ifndef XF_TOOLS_TRACE_FS_H
#define XF_TOOLS_TRACE_FS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/tracefs.h"

/* Prints "xfiber trace: " and the message as one line on stderr. */
__attribute__((format(printf, 1, 2))) void xf_trace_error(const char *fmt, ...);

struct xf_tracefs {
	char root[PATH_MAX];	 /* where tracefs is mounted */
	bool mounted_here;	 /* we mounted it, so we unmount it */
	char instance[PATH_MAX]; /* root/instances/xfiber-PID, "" until created */
	const char *instance_name;
};

/* Finds the mounted tracefs, or mounts it at XF_TRACEFS_DEFAULT. */
int xf_tracefs_open(struct xf_tracefs *fs);

/* Removes instances/xfiber-PID left by an xfiber that was killed (SIGKILL)
 * before it could clean up, then creates ours with tracing off. */
int xf_tracefs_instance_create(struct xf_tracefs *fs);

/* Writes value to the file rel (relative to the instance). */
int xf_tracefs_write(const struct xf_tracefs *fs, const char *rel, const char *value);

/* Reads the file rel (relative to base) into buf, NUL-terminated; returns
 * the length or -1.  Quiet: a missing file is a normal answer here. */
long xf_tracefs_read(const char *base, const char *rel, char *buf, size_t size);

/* Stops tracing in the instance, removes it, and unmounts tracefs if we
 * mounted it.  Safe to call more than once and after a partial setup;
 * reports what it could not undo.  Returns 0 if everything was undone. */
int xf_tracefs_close(struct xf_tracefs *fs);

#endif
