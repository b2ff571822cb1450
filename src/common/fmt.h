/*
 * fmt.h - decimal formatting for signal handlers, where printf is not
 * async-signal-safe.
 */
#ifndef XF_COMMON_FMT_H
#define XF_COMMON_FMT_H

#include <stddef.h>
#include <stdint.h>

/* Writes v in decimal at out (no NUL; up to 20 bytes); returns its length. */
static inline size_t xf__fmt_u64(char *out, uint64_t v)
{
	char tmp[20];
	size_t n = 0, i = 0;

	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (n)
		out[i++] = tmp[--n];
	return i;
}

#endif
