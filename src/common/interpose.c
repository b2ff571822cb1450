/* interpose.c - finding the definitions libxfiber's own replace (interpose.h). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/interpose.h"

void *xf__interpose_next(const char *name, const char *version)
{
	void *p = version ? dlvsym(RTLD_NEXT, name, version) : NULL;

	if (!p)
		p = dlsym(RTLD_NEXT, name);
	if (!p) {
		static const char msg[] = "xfiber: the C library lacks a function xfiber wraps: ";
		if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0 ||
		    write(STDERR_FILENO, name, strlen(name)) < 0 || write(STDERR_FILENO, "\n", 1) < 0) {
			/* nowhere to report to */
		}
		abort();
	}
	return p;
}
