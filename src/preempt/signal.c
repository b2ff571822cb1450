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
 * handler (section xf_nopreempt_text), in libc, the dynamic loader,
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
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "common/fmt.h"
#include "preempt/preempt.h"
#include "sched/runq.h"
#include "sched/sched.h"
#include "xstate/xstate.h"

__thread uint32_t xf__preempt_word = XF_PREEMPT_NOT_PENDING;

#ifndef FP_XSTATE_MAGIC1
#define FP_XSTATE_MAGIC1 0x46505853u /* "FPXS": sw_reserved says an XSAVE image follows */
#endif
#define SW_RESERVED_OFFSET 464
#define UNSAFE_MAX	   64

static struct {
	uintptr_t lo, hi;
} unsafe[UNSAFE_MAX];
static _Atomic unsigned unsafe_nr;
static bool system_objects_added;
static struct sigaction old_preempt, old_sigill;

static bool rip_unsafe(uintptr_t rip)
{
	unsigned n = atomic_load_explicit(&unsafe_nr, memory_order_acquire);

	for (unsigned i = 0; i < n; i++) {
		if (rip >= unsafe[i].lo && rip < unsafe[i].hi)
			return true;
	}
	return false;
}

static int add_range(uintptr_t lo, uintptr_t hi)
{
	unsigned n = atomic_load_explicit(&unsafe_nr, memory_order_relaxed);

	for (unsigned i = 0; i < n; i++) {
		if (unsafe[i].lo == lo && unsafe[i].hi == hi)
			return 0;
	}
	if (n == UNSAFE_MAX)
		return ENOSPC;
	unsafe[n].lo = lo;
	unsafe[n].hi = hi;
	atomic_store_explicit(&unsafe_nr, n + 1, memory_order_release);
	return 0;
}

static int add_object_text(struct dl_phdr_info *info)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		int err;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		err = add_range(info->dlpi_addr + ph->p_vaddr,
				info->dlpi_addr + ph->p_vaddr + ph->p_memsz);
		if (err)
			return err;
	}
	return 0;
}

/* Objects that may hold locks another fiber on the same thread needs. */
static int add_system_objects(struct dl_phdr_info *info, size_t size, void *data)
{
	/* libc, the loader, the unwinder, the C++ runtime, ourselves, the
	 * sanitizer runtimes, whose allocators keep per-thread caches, and the
	 * vDSO: its clock_gettime is called with locks held (ASan's allocator
	 * reads the clock inside its size-class lock - found as a deadlock). */
	static const char *const names[] = {
	    "/libc.so",	     "/ld-linux",     "/libpthread.so", "/libgcc_s.so",
	    "/libstdc++.so", "/libxfiber.so", "/libasan.so",	"/libubsan.so",
	    "/libtsan.so",   "/liblsan.so",   "linux-vdso.so",
	};
	(void)size;
	(void)data;
	for (size_t i = 0; i < XF_ARRAY_SIZE(names); i++) {
		if (info->dlpi_name && strstr(info->dlpi_name, names[i]))
			return add_object_text(info);
	}
	return 0;
}

struct find_object {
	uintptr_t addr;
	int err;
	bool found;
};

static int add_object_containing(struct dl_phdr_info *info, size_t size, void *data)
{
	struct find_object *q = data;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && q->addr >= lo && q->addr < lo + ph->p_memsz) {
			q->found = true;
			q->err = add_object_text(info);
			return 1;
		}
	}
	return 0;
}

int xf_preempt_unsafe_add(const void *addr)
{
	struct find_object q = {.addr = (uintptr_t)addr};

	if (!addr)
		return EINVAL;
	dl_iterate_phdr(add_object_containing, &q);
	return q.found ? q.err : EINVAL;
}

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
 * says, lies in the section xf_nopreempt_text: this handler's own code - a
 * second signal that lands in it before the disable or after the enable must
 * not switch, or the first frame would return on a worker it was not fixed
 * for - and the switch assembly, whose xf_yield fast path runs at nesting 0
 * between its run-queue update and the switch. */
#define HANDLER_TEXT __attribute__((section("xf_nopreempt_text"), noinline))
extern const char __start_xf_nopreempt_text[], __stop_xf_nopreempt_text[];

/* Inside the runtime: the soft mask is raised or the code is nopreempt. */
static bool in_runtime(uint32_t word, uintptr_t rip)
{
	return (word & XF_PREEMPT_NESTING) || (rip >= (uintptr_t)__start_xf_nopreempt_text &&
					       rip < (uintptr_t)__stop_xf_nopreempt_text);
}

/* Code that may hold a lock another fiber on this thread needs, or that is
 * inside some other signal handler. */
static bool must_defer(const ucontext_t *uc, uintptr_t rip)
{
	uint64_t mask;

	if (rip_unsafe(rip))
		return true;
	memcpy(&mask, &uc->uc_sigmask, sizeof(mask));
	return mask != xf__rt.base_sigmask;
}

/* A tick the ticker aimed at the fiber it saw running (ticker.c): stale if
 * this worker has switched since, for the fiber it would hit now began its
 * slice after the ticker looked.  Any other preemption signal - tgkill,
 * another process's - is taken as it comes. */
static inline bool tick_is_stale(const struct xf__worker *w, const siginfo_t *si)
{
	return si->si_code == SI_QUEUE && si->si_pid == xf__rt.pid &&
	       si->si_value.sival_ptr != xf__tick_mark(w->stats.switches);
}

static HANDLER_TEXT void preempt_handler(int sig, siginfo_t *si, void *ucv)
{
	/* First the mask: from here on a nested preemption signal is deferred,
	 * whatever this handler calls.  Only the instructions before and after
	 * it are open, and they lie in this function's own section. */
	const uint32_t word = xf__preempt_word_get();
	ucontext_t *uc = ucv;
	const uintptr_t rip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	const bool inside = in_runtime(word, rip);
	struct xf__worker *w, *preempted_on;
	struct xf_fiber *f;
	uint64_t switches;
	int saved_errno;

	xf__preempt_disable();
	(void)sig;
	w = xf__this_worker();
	if (!w || (w->current->flags & XF_FIBER_F_IDLE))
		goto out; /* a worker between fibers: nothing to preempt */
	if (tick_is_stale(w, si)) {
		XF_STAT_INC(w, preemption_ticks_stale, 1);
		goto out;
	}
	saved_errno = *w->errno_ptr;
	if (inside || must_defer(uc, rip)) {
		/* Pending: taken at the enable that ends the critical section, or
		 * by the ticker's next signal. */
		xf__preempt_word_set(xf__preempt_word_get() & ~XF_PREEMPT_NOT_PENDING);
		XF_STAT_INC(w, preemptions_deferred, 1);
		/* Not inside the runtime, which may be in the middle of the run
		 * queue: hand queued work to idle workers even though this fiber
		 * cannot switch. */
		if (!inside)
			xf__runq_poll(w);
		goto restore_errno;
	}
	f = w->current;
	switches = w->stats.switches;
	f->preempted = true;
	preempted_on = w;
	xf__schedule(w, XF_PREV_REQUEUE);
	w = xf__this_worker(); /* perhaps another worker now */
	if (w == preempted_on && w->stats.switches == switches) {
		XF_STAT_INC(w, preemption_ticks_idle, 1); /* nothing else to run */
	} else {
		check_frame(f, uc);
		XF_STAT_INC(w, preemptions, 1);
		XF_STAT_INC(w, state_copies_avoided, 1);
		XF_STAT_INC(w, frame_xstate_bytes, frame_xstate_bytes(uc));
		/* Never elsewhere (see above); counted so a test can prove it. */
		if (w != preempted_on)
			XF_STAT_INC(w, preempted_migrations, 1);
		XF_WARN_ON(w != preempted_on);
	}
	f->preempted = false;
restore_errno:
	*w->errno_ptr = saved_errno;
out:
	xf__preempt_enable_no_resched();
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
	/* Die of SIGILL as before, or let the previous handler have it. */
	if (old_sigill.sa_flags & SA_SIGINFO && old_sigill.sa_sigaction) {
		old_sigill.sa_sigaction(sig, si, ucv);
		return;
	}
	signal(SIGILL, old_sigill.sa_handler == SIG_IGN ? SIG_DFL : old_sigill.sa_handler);
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
	struct sigaction sa = {.sa_sigaction = preempt_handler,
			       .sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER};
	struct sigaction ill = {.sa_sigaction = sigill_handler,
				.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_NODEFER};
	sigset_t set;
	uint64_t mask;

	/* Once per process, whatever xf_preempt_unsafe_add() marked before. */
	if (!system_objects_added) {
		dl_iterate_phdr(add_system_objects, NULL);
		system_objects_added = true;
	}
	sigemptyset(&sa.sa_mask);
	sigemptyset(&ill.sa_mask);
	if (sigaction(XF_PREEMPT_SIGNAL, &sa, &old_preempt) || sigaction(SIGILL, &ill, &old_sigill))
		return errno;
	/* Workers inherit this thread's mask, less the preemption signal. */
	xf__preempt_signal_unblock();
	pthread_sigmask(SIG_SETMASK, NULL, &set);
	memcpy(&mask, &set, sizeof(mask));
	xf__rt.base_sigmask = mask;
	return 0;
}

void xf__preempt_uninstall(void)
{
	sigaction(XF_PREEMPT_SIGNAL, &old_preempt, NULL);
	sigaction(SIGILL, &old_sigill, NULL);
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
