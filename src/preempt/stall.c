/*
 * stall.c - the stuck-worker report, after the kernel's hung-task detector.
 *
 * A worker that has not switched for XFIBER_STALL_MS (2,000 ms unless set)
 * while other fibers wait for it, and whose preemptions keep being
 * deferred, is stuck inside code the runtime may not preempt: a lock of
 * the C library that waits for itself, a blocking call the runtime does not
 * know, a long loop in libc.  Nothing else would ever say so; its other
 * fibers simply never run again.  So the ticker, which sees it (ticker.c),
 * writes one report per stall to stderr: the worker, how long, how many
 * preemptions were deferred, and the fiber with its backtrace, as
 * xf_dump() shows a running fiber.  XFIBER_STALL_MS=off (or 0) turns it
 * off.  A worker that switches again may be reported again later.
 *
 * The backtrace is the stuck thread's own: the ticker asks for it with a
 * tick carrying XF_TICK_REPORT, whose handler (signal.c) unwinds from its
 * own frame across the kernel's signal frame - libgcc follows the
 * restorer's CFI - into the interrupted code, and only records return
 * addresses; the ticker waits for them up to CAPTURE_WAIT_NS, then names
 * them (sched/debug.c).  A thread that never runs the handler (the signal
 * blocked) gets a report without one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unwind.h>

#include "preempt/preempt.h"
#include "sched/sched.h"

#define STALL_DEFAULT_MS 2000
/* Deferred preemptions that make a stall: the ticker re-sends one every
 * tick while others wait (thousands in a real stall); a fiber that merely
 * has not switched since the runtime started has seen one or two. */
#define STALL_DEFERRED_MIN 16
#define CAPTURE_WAIT_NS	 (200 * 1000 * 1000ull)

static uint64_t stall_ns; /* 0: no reports */

/* One capture at a time, between the ticker and one worker's handler. */
enum { CAPTURE_FREE, CAPTURE_ASKED, CAPTURE_TAKING, CAPTURE_DONE };
static struct {
	_Atomic int state;
	unsigned worker;
	unsigned nr;
	uintptr_t pc[XF_STALL_FRAMES];
} capture;

int xf__stall_configure(void)
{
	const char *env = getenv("XFIBER_STALL_MS");
	char *end;
	unsigned long ms;

	stall_ns = (uint64_t)STALL_DEFAULT_MS * 1000000u;
	if (!env || !*env)
		return 0;
	if (!strcmp(env, "off")) {
		stall_ns = 0;
		return 0;
	}
	errno = 0;
	ms = strtoul(env, &end, 10);
	if (errno || *end || env[0] == '-' || ms > 24ul * 3600 * 1000) {
		fprintf(stderr,
			"xfiber: XFIBER_STALL_MS=%s: say a number of milliseconds (0 or off: no "
			"stall reports)\n",
			env);
		return EINVAL;
	}
	stall_ns = (uint64_t)ms * 1000000u;
	return 0;
}

/* --- in the stuck thread's handler: async-signal context --- */

struct unwind {
	bool interrupted; /* past the signal frame: the interrupted code's frames */
};

static _Unwind_Reason_Code record_frame(struct _Unwind_Context *ctx, void *arg)
{
	struct unwind *u = arg;
	int before_insn = 0;
	uintptr_t pc = _Unwind_GetIPInfo(ctx, &before_insn);

	/* The handler's own frames first; the frame just beyond the kernel's
	 * is the interrupted instruction, which the unwinder marks as one
	 * (before_insn). */
	if (!u->interrupted && !before_insn)
		return _URC_NO_REASON;
	u->interrupted = true;
	if (!pc || capture.nr == XF_STALL_FRAMES)
		return _URC_END_OF_STACK;
	capture.pc[capture.nr++] = pc;
	return _URC_NO_REASON;
}

void xf__stall_capture(const struct xf__worker *w)
{
	int asked = CAPTURE_ASKED;
	struct unwind u = {false};

	if (capture.worker != w->id ||
	    !atomic_compare_exchange_strong(&capture.state, &asked, CAPTURE_TAKING))
		return;
	capture.nr = 0;
	_Unwind_Backtrace(record_frame, &u);
	atomic_store_explicit(&capture.state, CAPTURE_DONE, memory_order_release);
}

/* --- in the ticker --- */

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {0, (long)ns};

	nanosleep(&ts, NULL);
}

/* Asks w's thread for the backtrace of what it runs; the number of frames
 * in capture.pc, 0 if it did not answer in time. */
static unsigned capture_from(struct xf__worker *w, pid_t tid)
{
	int asked = CAPTURE_ASKED;
	uint64_t waited = 0;

	capture.worker = w->id;
	capture.nr = 0;
	atomic_store(&capture.state, CAPTURE_ASKED);
	if (xf__tick_send(tid, XF_TICK_TAG | XF_TICK_FORCED | XF_TICK_REPORT)) {
		atomic_store(&capture.state, CAPTURE_FREE);
		return 0;
	}
	while (atomic_load_explicit(&capture.state, memory_order_acquire) != CAPTURE_DONE) {
		/* Withdrawn if the handler has not begun by then; once it has,
		 * its unwinding ends soon. */
		if (waited >= CAPTURE_WAIT_NS &&
		    atomic_compare_exchange_strong(&capture.state, &asked, CAPTURE_FREE))
			return 0;
		sleep_ns(1000000);
		waited += 1000000;
	}
	atomic_store(&capture.state, CAPTURE_FREE);
	return capture.nr;
}

void xf__stall_check(struct xf__worker *w, struct xf_fiber *cur, pid_t tid, uint64_t now,
		     bool others_wait)
{
	uint64_t deferred = __atomic_load_n(&w->stats.preemptions_deferred, __ATOMIC_RELAXED);
	unsigned nr;
	char what[160];

	if (!stall_ns || w->stall_reported || !others_wait || now - w->tick_since_ns < stall_ns ||
	    deferred - w->tick_deferred < STALL_DEFERRED_MIN)
		return;
	w->stall_reported = true;
	nr = capture_from(w, tid);
	snprintf(what, sizeof(what),
		 "has run one fiber for %lu ms without a switch while others wait; %lu "
		 "preemptions deferred",
		 (unsigned long)((now - w->tick_since_ns) / 1000000u),
		 (unsigned long)(deferred - w->tick_deferred));
	xf__stall_write(w, cur, what, capture.pc, nr);
}
