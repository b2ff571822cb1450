/*
 * sync.h - what src/sync/ offers the other rooms: the runtime's start-up
 * and the tests (each synchronisation object's own calls are public, in
 * xfiber.h).
 */
#ifndef XF_SYNC_SYNC_H
#define XF_SYNC_SYNC_H

#include <stdbool.h>

#include "xfiber.h"

#pragma GCC visibility push(hidden)

/* The C library's waits made from fibers (pthread.c and the files it
 * names), resolved at xf_init. */
void xf__pthread_interpose_resolve(void);

/* Whether fibers are linked on ch's wait queues (chan.c; tests). */
bool xf__chan_has_waiters(xf_chan *ch);

#pragma GCC visibility pop

#endif
