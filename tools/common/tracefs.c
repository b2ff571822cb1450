/* tracefs.c - see tracefs.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <mntent.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "common/tracefs.h"

static bool find_mounted(char *root, size_t size)
{
	FILE *mounts = setmntent("/proc/self/mounts", "r");
	struct mntent *m;
	bool found = false;

	if (!mounts)
		return false;
	while ((m = getmntent(mounts))) {
		if (strcmp(m->mnt_type, "tracefs"))
			continue;
		if (!found || !strcmp(m->mnt_dir, XF_TRACEFS_DEFAULT)) {
			snprintf(root, size, "%s", m->mnt_dir);
			found = true;
		}
	}
	endmntent(mounts);
	return found;
}

int xf_tracefs_find_or_mount(char *root, size_t size, bool *mounted_here)
{
	*mounted_here = false;
	if (find_mounted(root, size))
		return 0;
	snprintf(root, size, "%s", XF_TRACEFS_DEFAULT);
	if (mount("tracefs", root, "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
		return errno;
	*mounted_here = true;
	return 0;
}

int xf_tracefs_open_file(const char *rel)
{
	char root[256], path[512];
	int fs, mnt, fd, err;

	if (find_mounted(root, sizeof(root))) {
		snprintf(path, sizeof(path), "%s/%s", root, rel);
		return open(path, O_RDONLY | O_CLOEXEC);
	}
	fs = fsopen("tracefs", FSOPEN_CLOEXEC);
	if (fs < 0)
		return -1;
	if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0)) {
		err = errno;
		close(fs);
		errno = err;
		return -1;
	}
	mnt =
	    fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	err = errno;
	close(fs);
	if (mnt < 0) {
		errno = err;
		return -1;
	}
	fd = openat(mnt, rel, O_RDONLY | O_CLOEXEC);
	err = errno;
	close(mnt);
	errno = err;
	return fd;
}
