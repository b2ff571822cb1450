/*
 * signal.c - preemption inside the signal handler, zero-copy.
 *
 * The kernel's discipline, per worker, as this file keeps it:
 *
 *   A fiber's registers live in a kernel signal frame on its own stack iff
 *   it was switched out by a preemption signal (fiber->preempted) and has
 *   not resumed; otherwise, while switched out, it holds only the
 *   callee-saved GPRs, MXCSR and the x87 control word in its switch frame
 *   (arch/context.h), because it left through a call, where the ABI makes
 *   every vector, opmask and tile register dead.
 *
 * Consequences: a preemption switches with an ordinary xf__context_switch
 * from inside the handler; the fiber resumes by returning from that
 * handler, and rt_sigreturn reloads everything from the frame the kernel
 * wrote.  The runtime itself never executes XSAVE or XRSTOR (the xsaves and
 * xrstors counters stay zero), nothing is copied twice, and a tick that
 * finds nothing else to run returns straight from the handler.  A debug
 * build checks the invariant at every resume (check_frame).
 *
 * WARNING: general-regs-only (src/preempt/).  The handler starts with the
 * extended state in init (the kernel saved the fiber's into the frame and
 * cleared it) and touches no vector register before the switch, so the
 * fiber it switches to - which left through a call - finds nothing live.
 *
 * The handler runs on the fiber's stack (no SA_ONSTACK): every fiber stack
 * reserves room for the frames (sched/stack.c).  SA_NODEFER keeps the
 * signal deliverable to whatever fiber runs next; a nested delivery finds
 * the soft mask raised and only marks the preemption pending.  A sender
 * faster than the deliveries nests frames until one does not fit, which the
 * overflow report names (sched/stack.c; docs/preemption.md says why the
 * signal is not blocked instead).
 *
 * Safe points: the handler does not switch when the soft mask is raised,
 * when the interrupted instruction lies in the switch assembly or this
 * handler (section xf_nopreempt_text) or in the sigreturn trampoline a
 * handler returns through, in libc, the dynamic loader,
 * libxfiber.so or an object marked with xf_preempt_unsafe_add(), or when
 * the interrupted code ran with another signal mask than the workers' (it
 * is inside some other handler).  It marks the preemption pending instead:
 * the next call into the runtime takes it, or the ticker's next signal.
 *
 * No migration while preempted: a fiber interrupted at an arbitrary
 * instruction resumes on the worker - the thread - it was interrupted on.
 * Thieves and the balancer leave preempted fibers alone (sched/worker.c).
 * Interrupted code may hold a thread-local address in a register - &errno
 * between __errno_location() and the load, say - and a resume on another
 * thread would make it another fiber's; the frame's uc_sigmask and uc_stack
 * would also be the first worker's.  Fibers still move between workers at
 * calls into the runtime, where the ABI and docs/runtime.md's TLS rules
 * apply.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "common/probes.h"
#include "common/fmt.h"
#include "io/io.h"
#include "preempt/preempt.h"
#include "sched/runq.h"
#include "sched/sched.h"
#include "xstate/xstate.h"

__thread uint32_t xf__preempt_word = XF_PREEMPT_NOT_PENDING;

#ifndef FP_XSTATE_MAGIC1
#define FP_XSTATE_MAGIC1 0x46505853u /* "FPXS": sw_reserved says an XSAVE image follows */
#endif
#define SW_RESERVED_OFFSET 464

/* Polls of a waiting fiber's futex word that send it to the back of the run
 * queue before it sleeps between polls instead, and that sleep's bounds. */
#define WAIT_REQUEUE_POLLS 4
#define WAIT_SLEEP_MIN_NS  (20 * 1000)
#define WAIT_SLEEP_MAX_NS  (1000 * 1000)


/* Extended-state bytes the kernel put in this frame, by its XSTATE_BV. */
static uint64_t frame_xstate_bytes(const ucontext_t *uc)
{
	const char *fp = (const char *)uc->uc_mcontext.fpregs;
	uint32_t magic;
	uint64_t bv;

	if (!fp)
		return 0;
	memcpy(&magic, fp + SW_RESERVED_OFFSET, sizeof(magic));
	if (magic != FP_XSTATE_MAGIC1)
		return XSAVE_LEGACY_SIZE; /* FXSAVE-format frame */
	memcpy(&bv, fp + XSAVE_HEADER_OFFSET, sizeof(bv));
	return XSAVE_EXTENDED_OFFSET +
	       xf__xstate_component_bytes(
		   bv & ~(XF_XFEATURE_MASK(XF_XFEATURE_X87) | XF_XFEATURE_MASK(XF_XFEATURE_SSE)));
}

/* The debug-only half of the invariant: a resumed preempted fiber finds its
 * frame - on its own stack, still marked as an XSAVE frame. */
static void check_frame(const struct xf_fiber *f, const ucontext_t *uc)
{
	const char *fp = (const char *)uc->uc_mcontext.fpregs;
	const char *base = f->stack.base;

	XF_WARN_ON(!f->preempted);
	XF_WARN_ON(fp && !(f->flags & XF_FIBER_F_FIRST) &&
		   (fp < base || fp >= base + f->stack.size));
	(void)fp;
	(void)base;
}

/* Code where a preemption signal never switches, whatever the soft mask
 * says, lies in the section xf_nopreempt_text: the switch assembly, whose
 * xf_yield fast path runs at nesting 0 between its run-queue update and the
 * switch, and the handler's own entry, before it raises the mask and after
 * it lowers it again (signal_entry_x86_64_sysv_elf_gas.S). */
extern const char __start_xf_nopreempt_text[], __stop_xf_nopreempt_text[];

/* The sigreturn trampoline every handler returns through: the C library's
 * restorer (`mov $15, %rax; syscall`, 9 bytes), the kernel's sa_restorer;
 * sigreturn_pc is 0 if the kernel reported none.  A signal that lands there
 * finds the soft mask as the returning handler left it - lowered again,
 * nesting 0 if it interrupted xf_yield's fast path - and a pc in the C
 * library, which would pass for code outside the runtime, free to poll the
 * run queue; but the context that resumes is one frame further out, and
 * may be that fast path halfway through its run-queue update.  So the
 * trampoline counts as the runtime's own code (where()).  Read from the
 * kernel at installation, for the handler it really calls. */
#define XF_SIGRETURN_BYTES 9
#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000
#endif
static uintptr_t sigreturn_pc;

static void sigreturn_locate(void)
{
	struct {
		void *handler;
		unsigned long flags;
		void *restorer;
		uint64_t mask;
	} k; /* the kernel's struct sigaction on x86-64 */

	sigreturn_pc = 0;
	if (syscall(SYS_rt_sigaction, XF_PREEMPT_SIGNAL, NULL, &k, sizeof(k.mask)) == 0 &&
	    (k.flags & SA_RESTORER))
		sigreturn_pc = (uintptr_t)k.restorer;
}

static bool in_runtime_text(uintptr_t pc)
{
	return (pc >= (uintptr_t)__start_xf_nopreempt_text &&
		pc < (uintptr_t)__stop_xf_nopreempt_text) ||
	       pc - sigreturn_pc < XF_SIGRETURN_BYTES;
}

/* Where the signal found the fiber, and so what the handler may do. */
enum where {
	IN_RUNTIME, /* the soft mask raised, xf_nopreempt_text or the sigreturn
		     * trampoline: pending */
	NESTED,	    /* inside another signal handler: pending, touch nothing */
	UNSAFE,	    /* code that may hold a lock (safepoint.c): pending */
	SAFE,	    /* the program's own code: switch */
	WAITING,    /* waiting in the kernel inside a blocking call that holds no
		     * lock (f->blocking): switch, and poll before resuming */
};

/* A fiber inside a blocking pthread or C++ call (XF_BLOCKING_AT_WAIT,
 * sync/pthread.c) is switchable where it waits in the kernel: at a futex
 * wait that the kernel rewound for restart (the pc on the `syscall`
 * instruction, rax the call's number again - SA_RESTART), or right after a
 * wait the signal cut short with EINTR (a timed wait: the kernel restarts
 * those through restart_syscall, which only works on the same thread's
 * next system call, and returns EINTR to a handler instead). */
enum wait_kind { NOT_WAITING, WAIT_REWOUND, WAIT_CUT_SHORT };

static enum wait_kind wait_kind(const ucontext_t *uc, uintptr_t pc)
{
	const uint8_t *ip = (const uint8_t *)pc;
	const greg_t *r = uc->uc_mcontext.gregs;

	if (ip[0] == 0x0f && ip[1] == 0x05 && r[REG_RAX] == SYS_futex) {
		unsigned cmd = (unsigned)r[REG_RSI] & FUTEX_CMD_MASK;

		return cmd == FUTEX_WAIT || cmd == FUTEX_WAIT_BITSET ? WAIT_REWOUND : NOT_WAITING;
	}
	/* ip[-2] is readable when it lies on the same page. */
	if ((pc & 4095) >= 2 && ip[-2] == 0x0f && ip[-1] == 0x05 && r[REG_RAX] == -EINTR)
		return WAIT_CUT_SHORT;
	return NOT_WAITING;
}

/* A rewound futex wait that would sleep again: its word still holds the
 * value it waits on.  The kernel read the word before it slept, and the
 * waiter keeps it alive until the wait ends. */
static bool wait_would_sleep(const ucontext_t *uc)
{
	const greg_t *r = uc->uc_mcontext.gregs;

	return *(volatile const uint32_t *)r[REG_RDI] == (uint32_t)r[REG_RDX];
}

static enum where where(uint32_t word, const ucontext_t *uc, uintptr_t pc,
			const struct xf_fiber *f)
{
	uint64_t mask;

	if ((word & XF_PREEMPT_NESTING) || in_runtime_text(pc))
		return IN_RUNTIME;
	/* Another handler runs: one of the application's (which may have
	 * interrupted the runtime itself at nesting 0, in xf_yield's fast path),
	 * or code under another signal mask than the workers'. */
	memcpy(&mask, &uc->uc_sigmask, sizeof(mask));
	if (mask != xf__rt.base_sigmask || xf__signal_in_app_handler(uc))
		return NESTED;
	if (xf__safepoint_code(pc) == XF_CODE_SAFE || f->blocking == XF_BLOCKING_SPIN)
		return SAFE;
	if (f->blocking == XF_BLOCKING_AT_WAIT && wait_kind(uc, pc) != NOT_WAITING)
		return WAITING;
	return UNSAFE;
}

/* A tick is the runtime's if it carries the tag, from this process; any
 * other SIGURG belongs to the application. */
static bool is_tick(const siginfo_t *si)
{
	return si->si_code == SI_QUEUE && si->si_pid == xf__rt.pid &&
	       ((uint64_t)si->si_value.sival_ptr & XF_TICK_TAG_MASK) == XF_TICK_TAG;
}

/* A tick the ticker aimed at the fiber it saw running (ticker.c): stale if
 * this worker has switched since, for the fiber it would hit now began its
 * slice after the ticker looked. */
static bool tick_is_stale(const struct xf__worker *w, const siginfo_t *si)
{
	uint64_t v = (uint64_t)si->si_value.sival_ptr;

	return !(v & XF_TICK_FORCED) && (v & XF_TICK_COUNT) != (w->stats.switches & XF_TICK_COUNT);
}

/* Blocks f, which waits in the kernel, for ns without letting it run: a
 * timed wait nobody else ends.  At nesting 1, as the handler is. */
static void sleep_waiting(struct xf__worker *w, struct xf_fiber *f, uint64_t ns)
{
	(void)w;
	atomic_store_explicit(&f->wait_state, XF_WAIT_WAITING, memory_order_relaxed);
	f->wait_timed = true;
	xf__wait_block(f, ns, NULL, XF_WAIT_ON_LOCK, NULL); /* returns at nesting 0 */
	xf__preempt_disable();
}

/* Switches f out from its signal frame, and - if it waits in the kernel on
 * a futex word that has not changed - keeps it out while other fibers can
 * run: resuming it would only put the worker to sleep in the kernel again.
 * It goes to the back of the queue a few times, then sleeps between polls.
 * Preempted, it resumes here on this worker (no migration, see above). */
static void preempt(struct xf__worker *w, struct xf_fiber *f, const ucontext_t *uc,
		    enum wait_kind waiting)
{
	struct xf__worker *preempted_on = w;
	uint64_t switches = w->stats.switches, sleep_ns = WAIT_SLEEP_MIN_NS;
	unsigned polls = 0;

	XF_PROBE2(fiber__preempt, f->id, w->id);
	f->preempted = true;
	f->ran_long = true;
	xf__runq_fixed_update(w, f);
	/* Descriptors ready now wake their fibers onto this queue, ahead of f. */
	if (atomic_load_explicit(&xf__io_waiters, memory_order_relaxed))
		xf__poller_try(w);
	if (w->ring) /* and the requests its fibers queued go in (io/ring.c) */
		xf__ring_flush(w);
	xf__cxx_once_get(w, f->once_kept);
	/* Long work lets short go first: batch work, and unless the config
	 * asks for plain round robin any fiber, when fibers just woken wait
	 * (sched/schedule.c). */
	if ((xf__rt.round_robin && likely(!__atomic_load_n(&f->batch, __ATOMIC_RELAXED))) ||
	    waiting != NOT_WAITING || xf__fiber_holds_lock(f) || !xf__step_aside(w, f))
		xf__schedule(w, XF_PREV_REQUEUE);
	w = xf__this_worker();
	if (w == preempted_on && w->stats.switches == switches) {
		XF_STAT_INC(w, preemption_ticks_idle, 1); /* nothing else to run */
	} else {
		check_frame(f, uc);
		XF_STAT_INC(w, preemptions, 1);
		XF_STAT_INC(w, state_copies_avoided, 1);
		XF_STAT_INC(w, frame_xstate_bytes, frame_xstate_bytes(uc));
		if (waiting != NOT_WAITING)
			XF_STAT_INC(w, preemptions_waiting, 1);
		/* Never elsewhere (see above); counted so a test can prove it. */
		if (w != preempted_on)
			XF_STAT_INC(w, preempted_migrations, 1);
		XF_WARN_ON(w != preempted_on);
	}
	while (waiting == WAIT_REWOUND && w->runq.head && wait_would_sleep(uc)) {
		if (polls++ < WAIT_REQUEUE_POLLS) {
			xf__schedule(w, XF_PREV_REQUEUE);
		} else {
			sleep_waiting(w, f, sleep_ns);
			if (sleep_ns < WAIT_SLEEP_MAX_NS)
				sleep_ns *= 2;
		}
		w = xf__this_worker();
		XF_WARN_ON(w != preempted_on);
	}
	xf__cxx_once_set(w, f->once_kept);
	f->preempted = false;
	xf__runq_fixed_update(w, f);
}

/* w: this thread's worker, or NULL. */
static void handle(struct xf__worker *w, int sig, siginfo_t *si, void *ucv, uint32_t word)
{
	ucontext_t *uc = ucv;
	const uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	struct xf_fiber *f;
	enum where at;
	int saved_errno;

	if (!is_tick(si)) {
		xf__signal_foreign(sig, si, ucv);
		return;
	}
	if (w) /* for the ticker, which sends no more while one is unseen */
		atomic_fetch_add_explicit(&w->ticks_seen, 1, memory_order_relaxed);
	if (!w || (w->current->flags & XF_FIBER_F_IDLE))
		return; /* a worker between fibers: nothing to preempt */
	f = w->current;
	f->preempt_signals++; /* even a stale tick cuts a wait short */
	if ((uint64_t)si->si_value.sival_ptr & XF_TICK_REPORT) {
		saved_errno = *w->errno_ptr;
		xf__stall_capture(w, uc); /* the ticker found this worker stuck */
		*w->errno_ptr = saved_errno;
		return;
	}
	if (tick_is_stale(w, si)) {
		XF_STAT_INC(w, preemption_ticks_stale, 1);
		return;
	}
	saved_errno = *w->errno_ptr;
	at = where(word, uc, pc, f);
	if ((uint64_t)si->si_value.sival_ptr & XF_TICK_ANSWER) {
		/* Answer a steal request and go on with the fiber; inside the
		 * runtime or another handler, its next scheduling point will. */
		if (at != IN_RUNTIME && at != NESTED)
			xf__runq_poll(w);
		*w->errno_ptr = saved_errno;
		return;
	}
	switch (at) {
	case UNSAFE:
		/* Not inside the runtime, which may be in the middle of the run
		 * queue, nor inside another handler, which may have interrupted
		 * it: hand queued work to idle workers even though this fiber
		 * cannot switch. */
		xf__runq_poll(w);
		/* fallthrough */
	case IN_RUNTIME:
	case NESTED:
		/* Pending: taken at the enable that ends the critical section, or
		 * by the ticker's next signal. */
		xf__preempt_word_set(xf__preempt_word_get() & ~XF_PREEMPT_NOT_PENDING);
		XF_STAT_INC(w, preemptions_deferred, 1);
		XF_PROBE2(fiber__preempt__deferred, f->id, w->id);
		break;
	case SAFE:
		preempt(w, f, uc, NOT_WAITING);
		break;
	case WAITING:
		preempt(w, f, uc, wait_kind(uc, pc));
		break;
	}
	*w->errno_ptr = saved_errno;
}

void xf__preempt_handler(int sig, siginfo_t *si, void *ucv, uint32_t word)
{
	struct xf__worker *w = xf__this_worker();
	/* Counted on the context it lands on, which it returns to (a
	 * preempted fiber resumes here, on this thread): how many of that
	 * stack's frames are this handler's, for the overflow report. */
	struct xf_fiber *f = w ? w->current : NULL;

	if (f)
		f->handler_nesting++;
	handle(w, sig, si, ucv, word);
	if (f)
		f->handler_nesting--;
}

/* --- AMX without permission: name the fiber, say what to set --- */

static bool is_amx_instruction(const uint8_t *ip)
{
	/* AMX instructions are VEX-encoded (C4) in opcode map 0F38 (mmmmm = 2):
	 * LDTILECFG/STTILECFG/TILERELEASE/TILEZERO 49, TILELOADD(T1)/TILESTORED
	 * 4B, TDP* 5C/5E/6C. */
	return ip[0] == 0xc4 && (ip[1] & 0x1f) == 2 &&
	       (ip[3] == 0x49 || ip[3] == 0x4b || ip[3] == 0x5c || ip[3] == 0x5e || ip[3] == 0x6c);
}

static void say(const char *s)
{
	if (write(STDERR_FILENO, s, strlen(s)) < 0) {
		/* nowhere left to report to */
	}
}

static void sigill_handler(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	struct xf__worker *w = xf__this_worker();
	const uint8_t *ip = (const uint8_t *)uc->uc_mcontext.gregs[REG_RIP];

	if (w && is_amx_instruction(ip)) {
		char id[24];

		id[xf__fmt_u64(id, w->current->id)] = 0;
		say("xfiber: fiber ");
		say(id);
		if (xf__xstate.info.has_amx)
			say(" used AMX tiles without permission: set xf_config.amx = true "
			    "(or call xf_xstate_request_amx()) before any fiber uses tiles\n");
		else
			say(" used an AMX instruction, but this CPU or kernel has no AMX\n");
	}
	/* Die of SIGILL as before, or let the application's handler have it. */
	xf__signal_forward(sig, si, ucv);
}

/* Async-signal-safe: the overflow report calls it from its handler. */
void xf__preempt_signal_unblock(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, XF_PREEMPT_SIGNAL);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

int xf__preempt_install(void)
{
	sigset_t set;
	uint64_t mask;
	int err = xf__safepoints_build();

	if (err)
		return err;
	sigemptyset(&set);
	err = xf__signal_take(XF_PREEMPT_SIGNAL, xf__preempt_entry, SA_RESTART | SA_NODEFER, &set);
	if (!err) {
		err = xf__signal_take(SIGILL, sigill_handler, SA_NODEFER, &set);
		if (err)
			xf__signal_give_back(XF_PREEMPT_SIGNAL);
	}
	if (err) {
		xf__safepoints_release();
		return err;
	}
	sigreturn_locate();
	/* Workers inherit this thread's mask, less the preemption signal. */
	xf__preempt_signal_unblock();
	pthread_sigmask(SIG_SETMASK, NULL, &set);
	memcpy(&mask, &set, sizeof(mask));
	xf__rt.base_sigmask = mask;
	return 0;
}

void xf__preempt_uninstall(void)
{
	xf__signal_give_back(XF_PREEMPT_SIGNAL);
	xf__signal_give_back(SIGILL);
	xf__safepoints_release();
}

void xf__preempt_worker_enter(struct xf__worker *w)
{
	/* The ticker reads it from its own thread. */
	__atomic_store_n(&w->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELAXED);
}

/* --- the soft mask's public face and slow path --- */

void xf__preempt_slow(void)
{
	struct xf__worker *w = xf__this_worker();

	xf__preempt_word_set(XF_PREEMPT_NOT_PENDING);
	if (w && !(w->current->flags & XF_FIBER_F_IDLE))
		xf_yield();
}

void xf__preempt_slow_for(const void *caller)
{
	if (caller && xf__safepoint_code((uintptr_t)caller) == XF_CODE_SAFE) {
		xf__preempt_slow();
		return;
	}
	/* Deferred as a tick landing in that code would be: the slice is
	 * over, and the ticker sends one again every half slice until the
	 * fiber switches or a tick lands where it may. */
	xf__preempt_word_set(XF_PREEMPT_NOT_PENDING);
}

void xf_preempt_disable(void)
{
	xf__preempt_disable();
}

void xf_preempt_enable(void)
{
	/* An unbalanced enable would wrap the nesting and disable preemption
	 * for good: refuse it. */
	if (!(xf__preempt_word_get() & XF_PREEMPT_NESTING))
		return;
	xf__preempt_enable();
}
