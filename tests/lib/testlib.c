/* testlib.c - see testlib.h. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <string.h>

#include "testlib.h"

void xf_test_skip(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("SKIP: ", stdout);
	vprintf(fmt, ap);
	fputc('\n', stdout);
	va_end(ap);
	fflush(stdout);
	exit(XF_TEST_SKIP);
}

void xf_test_fail_at(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "FAIL %s:%d: ", file, line);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

const char *xf_test_errname(int err)
{
	return err ? strerrorname_np(err) : "0";
}
