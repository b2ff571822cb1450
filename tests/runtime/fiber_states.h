/* fiber_states.h - what fiber_states.c sets up, for those who check it. */
#ifndef XF_TESTS_FIBER_STATES_H
#define XF_TESTS_FIBER_STATES_H

#define STATES_FIBERS 100 /* main included */

struct fiber_kind {
	const char *name; /* fibers are "name-N", entered through name_main */
	unsigned count;
	const char *states; /* the states they may be found in, '|'-separated */
};

/* Ends with a NULL name. */
extern const struct fiber_kind fiber_kinds[];

#endif
