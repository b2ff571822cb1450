/* fiber_states_kinds.c - the kinds of fiber_states.c, in spawn order. */
#include <stddef.h>

#include "fiber_states.h"

const struct fiber_kind fiber_kinds[] = {
	{"spinner", 3, "running|preempted"},
	{"yielder", 16, "runnable|preempted"},
	{"locker", 15, "blocked on mutex"},
	{"receiver", 15, "blocked on channel receive"},
	{"sleeper", 15, "sleeping"},
	{"reader", 15, "blocked on I/O"},
	{"waiter", 10, "blocked on semaphore"},
	{"conder", 5, "blocked on condition variable"},
	{"joiner", 5, "blocked on join"},
	{NULL, 0, NULL},
};
