/*
 * text.c - a report built in memory and written at once (text.h).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/text.h"

void xf__text_printf(struct xf__text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->failed)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->failed = true;
			return;
		}
		if ((size_t)n < t->cap - t->len) {
			t->len += (size_t)n;
			return;
		}
		size_t cap = 2 * t->cap + (size_t)n + 4096;
		char *buf = realloc(t->buf, cap);
		if (!buf) {
			t->failed = true;
			return;
		}
		t->buf = buf;
		t->cap = cap;
	}
}

void xf__text_address(struct xf__text *t, uintptr_t pc, bool before_insn)
{
	/* A return address is past its call: look up the call itself. */
	uintptr_t at = before_insn || !pc ? pc : pc - 1;
	Dl_info info;

	xf__text_printf(t, "0x%016lx", (unsigned long)pc);
	if (!dladdr((void *)at, &info) || !info.dli_fname) {
		xf__text_printf(t, " ?\n");
		return;
	}
	if (info.dli_sname)
		xf__text_printf(t, " in %s+0x%lx", info.dli_sname,
				(unsigned long)(pc - (uintptr_t)info.dli_saddr));
	xf__text_printf(t, " (%s+0x%lx)\n", info.dli_fname,
			(unsigned long)(pc - (uintptr_t)info.dli_fbase));
}

int xf__write_all(int fd, const char *buf, size_t len,
		  ssize_t (*write_fn)(int fd, const void *buf, size_t len))
{
	while (len) {
		ssize_t n = write_fn(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}
