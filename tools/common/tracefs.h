/*
 * tracefs.h - where tracefs is, mounting it when nobody has: shared by
 * `xfiber trace` (trace/fs.c) and the system-call counts of `xfiber bench`
 * (bench/syscount.c).
 */
#ifndef XF_TOOLS_COMMON_TRACEFS_H
#define XF_TOOLS_COMMON_TRACEFS_H

#include <stdbool.h>
#include <stddef.h>

#define XF_TRACEFS_DEFAULT "/sys/kernel/tracing"

/* The first tracefs in the mount table, XF_TRACEFS_DEFAULT preferred, in
 * root; or, with none mounted, tracefs newly mounted at XF_TRACEFS_DEFAULT
 * (*mounted_here set: the caller unmounts it when done).  0, or the errno
 * of the mount: ENODEV for a kernel without tracefs, ENOENT when the
 * directory is missing, EPERM when not root. */
int xf_tracefs_find_or_mount(char *root, size_t size, bool *mounted_here);

/* Opens rel (e.g. "events/raw_syscalls/sys_enter/id") for reading in the
 * mounted tracefs, or, with none mounted, in one of its own that no path
 * reaches (fsopen, fsmount: Linux 5.2), gone when the descriptor closes -
 * so that nothing another tracefs user mounts or unmounts meanwhile is
 * touched.  The descriptor, or -1 with errno set. */
int xf_tracefs_open_file(const char *rel);

#endif
