/*
 * runtime.h - what src/runtime/ offers the other rooms, and its own files
 * each other: fork's two halves, and the dump and its signal.
 */
#ifndef XF_RUNTIME_RUNTIME_H
#define XF_RUNTIME_RUNTIME_H

#include <stdbool.h>

#include "runtime/hooks.h"

#pragma GCC visibility push(hidden)

/* Around a fork the runtime's locks are taken (prepare) and released in
 * the parent, made new in the child: the runtime's own (runtime.c), every
 * other module's through its hook (hooks.h), in fork.c's handlers. */
void xf__fork_handlers_register(void); /* once, at the first xf_init */
void xf__runtime_fork(enum xf__fork_phase phase);

/* The thread that dumps on XFIBER_DUMP_SIGNAL, if the variable names one
 * (dump.c): started by xf_init, stopped by xf_shutdown. */
void xf__dump_signal_start(void);
void xf__dump_signal_stop(void);
/* xf_dump, written with write(2) rather than xf_write (dump.c). */
int xf__dump_unwaited(int fd);
/* In a fork's child: the parent's dump thread and pipe are not its own; the
 * signal dumps nothing there. */
void xf__dump_signal_fork_child(void);

#pragma GCC visibility pop

#endif
