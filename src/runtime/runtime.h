/*
 * runtime.h - what src/runtime/ offers the other rooms, and its own files
 * each other: the lifecycle lock for those that read the workers from
 * outside (the dump), and fork's two halves.
 */
#ifndef XF_RUNTIME_RUNTIME_H
#define XF_RUNTIME_RUNTIME_H

#include <stdbool.h>

#include "runtime/hooks.h"

#pragma GCC visibility push(hidden)

/* The runtime's start and stop lock, held while something reads its
 * workers from outside (a dump): hold returns whether it runs; release
 * either way (runtime.c). */
bool xf__runtime_hold(void);
void xf__runtime_release(void);

/* Around a fork the runtime's locks are taken (prepare) and released in
 * the parent, made new in the child: the runtime's own (runtime.c), every
 * other module's through its hook (hooks.h), in fork.c's handlers. */
void xf__fork_handlers_register(void); /* once, at the first xf_init */
void xf__runtime_fork(enum xf__fork_phase phase);

#pragma GCC visibility pop

#endif
