/* stats.c - xf_stats_get: the per-worker counters, summed. */
#include <errno.h>
#include <string.h>

#include "io/io.h"
#include "sched/sched.h"

#define FIELDS(X)                                                                                  \
	X(switches)                                                                                \
	X(preemptions)                                                                             \
	X(preemptions_deferred)                                                                    \
	X(preemption_ticks_idle)                                                                   \
	X(xsaves)                                                                                  \
	X(xrstors)                                                                                 \
	X(state_copies_avoided)                                                                    \
	X(preempted_migrations)                                                                    \
	X(tiles_released)                                                                          \
	X(frame_xstate_bytes)                                                                      \
	X(preemption_ticks_stale)                                                                  \
	X(preemptions_waiting)                                                                     \
	X(io_waits)                                                                                \
	X(poller_calls)                                                                            \
	X(io_events)                                                                               \
	X(blocking_jobs)                                                                           \
	X(batch_stepped_aside)                                                                     \
	X(batch_starved)                                                                           \
	X(woken_first)

_Static_assert(sizeof(xf_worker_stats) == 19 * sizeof(uint64_t),
	       "a counter added to xf_worker_stats must be added to FIELDS too");

int xf_stats_get(xf_stats *out)
{
	if (!out)
		return EINVAL;
	if (!atomic_load(&xf__rt.running))
		return EPERM;
	memset(out, 0, sizeof(*out));
	out->nr_workers = xf__rt.nr_workers;
	for (unsigned i = 0; i < xf__rt.nr_workers; i++) {
		const xf_worker_stats *s = &xf__rt.workers[i].stats;
		xf_worker_stats *o = &out->workers[i];
#define COPY(f)                                                                                    \
	o->f = __atomic_load_n(&s->f, __ATOMIC_RELAXED);                                           \
	out->total.f += o->f;
		FIELDS(COPY)
#undef COPY
	}
	/* The ticker's own polls count in the total only. */
#define ADD(f) out->total.f += __atomic_load_n(&xf__rt.ticker_stats.f, __ATOMIC_RELAXED);
	FIELDS(ADD)
#undef ADD
	xf__stacks_stats(out);
	out->fibers_made = xf__fibers_made();
	xf__io_backend_stats(out);
	return 0;
}
