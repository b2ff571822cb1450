/* version.c - the version and commit recorded at build time (see cmake/build_info.cmake). */
#include "common/compiler.h"
#include "xfiber.h"

extern const char xf__version_string[];
extern const char xf__commit_string[];

const char *xf_version(void)
{
	return xf__version_string;
}

const char *xf_commit(void)
{
	return xf__commit_string;
}
