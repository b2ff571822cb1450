/*
 * stall.c - the stuck-worker report, after the kernel's hung-task detector.
 *
 * A worker that has not switched for XFIBER_STALL_MS (2,000 ms unless set)
 * while other fibers wait for it, and whose preemptions keep being
 * deferred, runs code the runtime may not preempt: a lock of the C library
 * that waits for itself, a blocking call the runtime does not know, a long
 * loop in libc or with preemption disabled.  Nothing else would ever say
 * so; its other fibers simply wait.  So the ticker, which sees it
 * (ticker.c), has one report per stall written to stderr: the worker, how
 * long, how many preemptions were deferred, and the fiber with its
 * backtrace, as xf_dump() shows a running fiber.  XFIBER_STALL_MS=off (or
 * 0) turns it off.  A worker that switches again may be reported again.
 *
 * The ticker must never wait for anything, or no worker is preempted while
 * it waits.  So it only gathers: the backtrace comes from the stuck thread
 * itself - a tick carrying XF_TICK_REPORT, whose handler (signal.c)
 * unwinds from its own frame across the kernel's signal frame into the
 * interrupted code and records return addresses - and the rest is copied
 * into a report that a thread of its own, the reporter, names (dladdr,
 * which takes the loader's lock: the stuck fiber may hold it, inside a
 * dlopen) and writes (stderr may be a full pipe).  A reporter that is
 * stuck itself only means the next reports are dropped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <unwind.h>

#include "common/text.h"
#include "preempt/preempt.h"
#include "sched/sched.h"

#define STALL_DEFAULT_MS   2000
#define STALL_MAX_MS	   (24ul * 3600 * 1000) /* a day */
/* Deferred preemptions that make a stall: the ticker re-sends one every
 * tick while others wait (thousands in a real stall); a fiber that merely
 * has not switched since the runtime started has seen one or two. */
#define STALL_DEFERRED_MIN 16
#define CAPTURE_WAIT_NS	   (200 * 1000 * 1000ull)
#define CAPTURE_RESEND_NS  (20 * 1000 * 1000ull) /* a standard signal merges with a pending one */

static uint64_t stall_ns = (uint64_t)STALL_DEFAULT_MS * 1000000u; /* 0: no reports */

/* One capture at a time, between the ticker and one worker's handler. */
enum { CAPTURE_FREE, CAPTURE_ASKED, CAPTURE_TAKING, CAPTURE_DONE };
static struct {
	_Atomic int state;
	unsigned worker;
	unsigned nr;
	uintptr_t pc[XF_STALL_FRAMES];
	uint64_t mask; /* the interrupted code's signal mask (first 64 signals) */
} capture;

/* The report being written, and the thread that writes it. */
static struct {
	pthread_t thread;
	bool started;
	_Atomic uint32_t wake; /* futex: bumped to post a report or to stop */
	_Atomic bool busy;     /* a report is posted and not yet written */
	_Atomic bool stopping;
	struct xf__stall_report r;
} reporter;

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
	if (errno || *end || env[0] < '0' || env[0] > '9' || ms > STALL_MAX_MS) {
		fprintf(stderr,
			"xfiber: XFIBER_STALL_MS=%s: say a number of milliseconds up to %lu (a day), "
			"or off (0 too): no stall reports\n",
			env, STALL_MAX_MS);
		return EINVAL;
	}
	stall_ns = (uint64_t)ms * 1000000u;
	return 0;
}

uint64_t xf__stall_threshold_ns(void)
{
	return stall_ns;
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

/* Realigns the stack: the unwinder (libgcc) keeps SSE values in aligned
 * stack slots, and qemu 7.2's user mode (make check-cpus) may enter a
 * signal handler with the stack off the ABI's alignment - the handler
 * itself, general registers only, never noticed; the unwinder faulted
 * (docs/cpus.md). */
__attribute__((force_align_arg_pointer)) void xf__stall_capture(const struct xf__worker *w,
								const void *ucv)
{
	const ucontext_t *uc = ucv;
	int asked = CAPTURE_ASKED;
	struct unwind u = {false};

	if (capture.worker != w->id ||
	    !atomic_compare_exchange_strong(&capture.state, &asked, CAPTURE_TAKING))
		return;
	memcpy(&capture.mask, &uc->uc_sigmask, sizeof(capture.mask));
	capture.nr = 0;
	_Unwind_Backtrace(record_frame, &u);
	atomic_store_explicit(&capture.state, CAPTURE_DONE, memory_order_release);
}

/* Writes the report to stderr, naming its frames as the dump does; from
 * the reporter thread. */
static void stall_write(const struct xf__stall_report *r)
{
	struct xf__text o = {0};

	xf__text_printf(
	    &o,
	    "xfiber: worker %u (thread %d) %s: it runs %s (XFIBER_STALL_MS=off silences this)\n",
	    r->worker, r->tid, r->what,
	    r->mask_added ? "under a signal mask other than the workers'"
			  : "code that cannot be preempted");
	xf__text_printf(&o, "fiber %lu", (unsigned long)r->fiber_id);
	if (r->name[0])
		xf__text_printf(&o, " \"%s\"", r->name);
	xf__text_printf(&o, " [running on worker %u (thread %d)]:\n", r->worker, r->tid);
	for (unsigned i = 0; i < r->nr; i++) {
		xf__text_printf(&o, "    #%-2u ", i);
		xf__text_address(&o, r->pc[i], i == 0); /* the first: the interrupted instruction */
	}
	if (!r->nr)
		xf__text_printf(&o, "    (no backtrace: the thread did not answer)\n");
	if (r->fn) {
		xf__text_printf(&o, "    entry ");
		xf__text_address(&o, (uintptr_t)r->fn, true);
	}
	if (r->spawn_site) {
		xf__text_printf(&o, "    spawned at ");
		xf__text_address(&o, (uintptr_t)r->spawn_site, false);
	}
	if (r->mask_added) {
		/* The handler defers every tick under another mask than the
		 * workers' (signal.c): say so, or the report blames the code. */
		xf__text_printf(&o, "    its signal mask blocks");
		for (int sig = 1; sig <= 64; sig++) {
			const char *abbrev = sigabbrev_np(sig); /* NULL for real-time ones */

			if (!(r->mask_added >> (sig - 1) & 1))
				continue;
			if (abbrev)
				xf__text_printf(&o, " SIG%s", abbrev);
			else
				xf__text_printf(&o, " %d", sig);
		}
		xf__text_printf(&o, " besides the workers' mask: no fiber is preempted under "
				    "another mask. A fiber changed it (pthread_sigmask, or a "
				    "longjmp out of a handler, where siglongjmp would have "
				    "restored it): docs/runtime.md\n");
	}
	xf__text_printf(&o, "\n");
	if (o.buf)
		xf__write_all(STDERR_FILENO, o.buf, o.len, write);
	free(o.buf);
}

/* --- the reporter thread --- */

static long futex(_Atomic uint32_t *word, int op, uint32_t val)
{
	return syscall(SYS_futex, word, op, val, NULL, NULL, 0);
}

static void *reporter_main(void *arg)
{
	sigset_t all;

	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL); /* never run a handler here */
	for (;;) {
		uint32_t seen = atomic_load(&reporter.wake);

		if (atomic_load(&reporter.stopping))
			break;
		if (atomic_load_explicit(&reporter.busy, memory_order_acquire)) {
			stall_write(&reporter.r);
			atomic_store_explicit(&reporter.busy, false, memory_order_release);
			continue;
		}
		futex(&reporter.wake, FUTEX_WAIT_PRIVATE, seen);
	}
	return NULL;
}

static void reporter_post(void)
{
	atomic_store_explicit(&reporter.busy, true, memory_order_release);
	atomic_fetch_add(&reporter.wake, 1);
	futex(&reporter.wake, FUTEX_WAKE_PRIVATE, 1);
}

int xf__stall_start(void)
{
	int err = xf__stall_configure();

	if (err || !stall_ns)
		return err;
	atomic_store(&reporter.stopping, false);
	atomic_store(&reporter.busy, false);
	err = pthread_create(&reporter.thread, NULL, reporter_main, NULL);
	reporter.started = !err;
	return err;
}

void xf__stall_stop(void)
{
	if (!reporter.started)
		return;
	atomic_store(&reporter.stopping, true);
	atomic_fetch_add(&reporter.wake, 1);
	futex(&reporter.wake, FUTEX_WAKE_PRIVATE, 1);
	/* A reporter stuck in a write to a full pipe, or on the loader's
	 * lock, is left behind rather than waited for. */
	for (int i = 0; i < 100 && atomic_load(&reporter.busy); i++) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	if (atomic_load(&reporter.busy))
		pthread_detach(reporter.thread);
	else
		pthread_join(reporter.thread, NULL);
	reporter.started = false;
}

void xf__stall_forget(void)
{
	reporter.started = false; /* a fork's child: the thread is the parent's */
	atomic_store(&reporter.busy, false);
	atomic_store(&capture.state, CAPTURE_FREE);
}

/* --- in the ticker --- */

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {0, (long)ns};

	nanosleep(&ts, NULL);
}

/* Asks w's thread for the backtrace of what it runs, into capture.pc;
 * the number of frames, 0 if it did not answer in time. */
static unsigned capture_from(struct xf__worker *w, pid_t tid)
{
	int asked = CAPTURE_ASKED;
	uint64_t waited = 0;

	capture.worker = w->id;
	capture.nr = 0;
	atomic_store(&capture.state, CAPTURE_ASKED);
	while (atomic_load_explicit(&capture.state, memory_order_acquire) != CAPTURE_DONE) {
		/* Sent again now and then: a standard signal sent while an
		 * ordinary tick is pending merges into that one. */
		if (waited % CAPTURE_RESEND_NS == 0 &&
		    atomic_load(&capture.state) == CAPTURE_ASKED &&
		    xf__tick_send(tid, XF_TICK_TAG | XF_TICK_FORCED | XF_TICK_REPORT))
			break;
		/* Withdrawn if the handler has not begun by then; once it has,
		 * its unwinding ends soon. */
		if (waited >= CAPTURE_WAIT_NS)
			break;
		sleep_ns(1000000);
		waited += 1000000;
	}
	if (atomic_compare_exchange_strong(&capture.state, &asked, CAPTURE_FREE))
		return 0;
	while (atomic_load_explicit(&capture.state, memory_order_acquire) != CAPTURE_DONE)
		sleep_ns(100000); /* taking: it ends */
	atomic_store(&capture.state, CAPTURE_FREE);
	return capture.nr;
}

void xf__stall_check(struct xf__worker *w, struct xf_fiber *cur, pid_t tid, uint64_t now,
		     bool others_wait)
{
	uint64_t deferred = __atomic_load_n(&w->stats.preemptions_deferred, __ATOMIC_RELAXED);
	struct xf__stall_report *r = &reporter.r;
	const char *name;
	unsigned nr;

	if (!stall_ns || !reporter.started || w->stall_reported || !others_wait ||
	    now - w->tick_since_ns < stall_ns || deferred - w->tick_deferred < STALL_DEFERRED_MIN ||
	    atomic_load_explicit(&reporter.busy, memory_order_acquire))
		return;
	w->stall_reported = true;
	nr = capture_from(w, tid);
	/* The stall may have ended meanwhile: then there is nothing to say. */
	if (__atomic_load_n(&w->stats.switches, __ATOMIC_RELAXED) != w->tick_switches)
		return;
	r->worker = w->id;
	r->tid = tid;
	r->fiber_id = cur->id;
	name = __atomic_load_n(&cur->name, __ATOMIC_ACQUIRE);
	if (name)
		snprintf(r->name, sizeof(r->name), "%s", name);
	else
		r->name[0] = 0;
	r->fn = (const void *)(uintptr_t)cur->fn;
	r->spawn_site = cur->spawn_site;
	snprintf(r->what, sizeof(r->what),
		 "has not switched for %lu ms while others wait; %lu preemptions deferred",
		 (unsigned long)((xf__now_ns() - w->tick_since_ns) / 1000000u),
		 (unsigned long)(deferred - w->tick_deferred));
	r->nr = nr;
	memcpy(r->pc, capture.pc, nr * sizeof(r->pc[0]));
	r->mask_added = nr ? capture.mask & ~xf__rt.base_sigmask : 0;
	reporter_post();
}
