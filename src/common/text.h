/*
 * text.h - a report built in memory and written at once: the dump
 * (runtime/dump.c) and the stall report (preempt/stall.c) format while
 * the world is stopped or a thread waits, and write only after.  Code
 * addresses are named as far as the dynamic symbols tell.
 */
#ifndef XF_COMMON_TEXT_H
#define XF_COMMON_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct xf__text {
	char *buf; /* free() it */
	size_t len, cap;
	bool failed; /* out of memory: what is there is cut short */
};

void xf__text_printf(struct xf__text *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* One code address and a newline, as "0x... in name+0xoff (object+0xoff)",
 * or as much of it as the dynamic symbols tell: the object and offset are
 * what addr2line takes for the rest.  before_insn: pc is the instruction
 * itself, not a return address past its call. */
void xf__text_address(struct xf__text *t, uintptr_t pc, bool before_insn);

/* Writes all of buf with write_fn (write, or xf_write from a fiber),
 * retrying after EINTR: 0 or an errno. */
int xf__write_all(int fd, const char *buf, size_t len,
		  ssize_t (*write_fn)(int fd, const void *buf, size_t len));

#endif
