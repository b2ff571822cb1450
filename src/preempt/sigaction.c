/*
 * sigaction.c - the application's signal handlers, beside the runtime's.
 *
 * The runtime handles three signals while it runs: SIGURG, which carries
 * preemption, SIGSEGV (the stack-overflow report) and SIGILL (the report of
 * AMX used without permission).  The application may want them too - SIGURG
 * for out-of-band socket data, SIGSEGV for a crash reporter - before or
 * after xf_init().  So sigaction() and signal() are interposed
 * (common/interpose.h), and this file keeps, for every signal, the
 * disposition the application asked for: its view.
 *
 *   - A signal the runtime has taken (xf__signal_take) keeps the runtime's
 *     handler in the kernel; the application's disposition is only
 *     recorded, and the runtime's handler passes it everything that is not
 *     its own (xf__signal_forward): a SIGURG without the runtime's tag, a
 *     SIGSEGV that is no stack overflow.  xf__signal_give_back() puts the
 *     application's disposition into the kernel again at xf_shutdown.
 *   - Any other signal's handler is installed through a trampoline, which
 *     marks the thread as inside an application handler for as long as it
 *     runs.  A preemption signal that interrupts such a handler must leave
 *     everything alone - the handler may itself have interrupted the
 *     runtime, in xf_yield's fast path, which runs at nesting 0 - and this
 *     is how the preemption handler knows (xf__signal_in_app_handler), even
 *     for a handler installed with SA_NODEFER and an empty mask, which the
 *     interrupted signal mask would not betray.  The trampoline also counts
 *     deliveries, which tells a retried sleep whether an application signal
 *     interrupted it (sched/sleep.c).
 *
 * The marks are a small per-thread stack of (context, stack pointer) at
 * each handler's entry; one whose handler left by longjmp() is recognised
 * as stale - the interrupted stack pointer lies above it, or another
 * context runs - and dropped.
 *
 * Not interposed: sigset(), and the C library's own internal uses of
 * sigaction.  A handler installed through them runs without the trampoline:
 * nested preemption signals then rely on its signal mask alone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <ucontext.h>

#include "common/interpose.h"
#include "preempt/preempt.h"
#include "sched/sched.h"
#include "runtime/hooks.h"

#define APP_NESTING_MAX 8

static struct {
	pthread_mutex_t lock;
	struct sigaction actions[NSIG]; /* the application's view, per signal */
	bool known[NSIG];		/* actions[] read from the kernel or set since */
	bool taken[NSIG];		/* the runtime's handler is in the kernel */
} sig = {.lock = PTHREAD_MUTEX_INITIALIZER};

static __thread struct {
	unsigned depth;
	struct {
		const void *context; /* the fiber or thread that ran the handler */
		uintptr_t sp;	     /* its stack pointer at entry */
	} marks[APP_NESTING_MAX];
	uint64_t delivered;
} app;

XF_INTERPOSE(int, sigaction, (int signo, const struct sigaction *act, struct sigaction *old));

static int real_sigaction(int signo, const struct sigaction *act, struct sigaction *old)
{
	return XF_REAL(sigaction)(signo, act, old);
}

/* --- application handlers, through the trampoline --- */

/* Inlined at every optimisation level: the trampoline must run no code
 * outside xf_nopreempt_text before the mark is set and after it is gone. */
#define ALWAYS_INLINE inline __attribute__((always_inline))

static ALWAYS_INLINE const void *this_context(void)
{
	struct xf_fiber *f = xf__current();

	return f ? (const void *)f : (const void *)&app;
}

/*
 * Drops the marks of handlers that left by longjmp(), seen from code in
 * context ctx whose stack pointer is sp: the top mark is stale if another
 * context runs or sp lies above it, and so is every handler nested inside
 * a stale one, recorded or not (past APP_NESTING_MAX).  Returns whether a
 * live mark remains.  Pruned at each handler's entry too: a fiber alone on
 * its worker gets no ticks, and a handler left by siglongjmp nine times
 * over once pushed the count past the marks for good - every later tick
 * was taken for one inside a handler, and the worker was never preempted
 * again.
 */
static ALWAYS_INLINE bool app_prune(const void *ctx, uintptr_t sp)
{
	while (app.depth) {
		unsigned top = (app.depth < APP_NESTING_MAX ? app.depth : APP_NESTING_MAX) - 1;

		if (app.marks[top].context == ctx && sp < app.marks[top].sp)
			return true;
		app.depth = top;
	}
	return false;
}

/* An application handler starts below frame, the caller's frame address;
 * it interrupted code whose stack pointer uc holds (NULL: not known). */
static ALWAYS_INLINE void app_enter(void *frame, const void *ucv)
{
	const ucontext_t *uc = ucv;
	const void *ctx = this_context();
	unsigned d;

	if (uc)
		app_prune(ctx, (uintptr_t)uc->uc_mcontext.gregs[REG_RSP]);
	d = app.depth;
	if (d < APP_NESTING_MAX) {
		app.marks[d].context = ctx;
		app.marks[d].sp = (uintptr_t)frame;
	}
	app.depth = d + 1;
	app.delivered++;
}

static ALWAYS_INLINE void app_leave(void)
{
	if (app.depth)
		app.depth--;
}

/* Calls the handler a (the application's view of signo) names. */
static void call_app_handler(const struct sigaction *a, int signo, siginfo_t *si, void *uc)
{
	if (a->sa_flags & SA_SIGINFO)
		a->sa_sigaction(signo, si, uc);
	else
		a->sa_handler(signo);
}

static bool is_function(const struct sigaction *a)
{
	return !(a->sa_flags & SA_SIGINFO) ? a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN
					   : a->sa_sigaction != NULL;
}

/* Every application handler runs through this.  It lies in
 * xf_nopreempt_text, like the runtime's own entry: a preemption signal that
 * lands in it before the mark or after it is deferred all the same. */
static __attribute__((section("xf_nopreempt_text"))) void trampoline(int signo, siginfo_t *si,
								      void *uc)
{
	void (*handler)(int, siginfo_t *, void *) = sig.actions[signo].sa_sigaction;
	int flags = sig.actions[signo].sa_flags;

	/* The kernel has already reset a SA_RESETHAND handler: so does the view. */
	if (flags & SA_RESETHAND) {
		sig.actions[signo].sa_handler = SIG_DFL;
		sig.actions[signo].sa_flags &= ~SA_SIGINFO;
	}
	app_enter(__builtin_frame_address(0), uc);
	if (flags & SA_SIGINFO)
		handler(signo, si, uc);
	else if ((sighandler_t)(void *)handler != SIG_DFL && (sighandler_t)(void *)handler != SIG_IGN)
		((sighandler_t)(void *)handler)(signo);
	app_leave();
}

bool xf__signal_in_app_handler(const void *ucv)
{
	const ucontext_t *uc = ucv;

	return app_prune(this_context(), (uintptr_t)uc->uc_mcontext.gregs[REG_RSP]);
}

uint64_t xf__signal_app_count(void)
{
	return app.delivered;
}

/* --- the view --- */

/* Fills in the view of signo from the kernel, the first time; lock held. */
static void know(int signo)
{
	if (sig.known[signo])
		return;
	if (real_sigaction(signo, NULL, &sig.actions[signo]) == 0)
		sig.known[signo] = true;
}

/* What the kernel should hold for the view a. */
static struct sigaction kernel_action(const struct sigaction *a)
{
	struct sigaction k = *a;

	if (is_function(a)) {
		k.sa_sigaction = trampoline;
		k.sa_flags |= SA_SIGINFO;
	}
	return k;
}

XF_INTERPOSE(int, sigaction, (int signo, const struct sigaction *act, struct sigaction *old))
{
	int err = 0;

	if (signo <= 0 || signo >= NSIG || signo == SIGKILL || signo == SIGSTOP)
		return real_sigaction(signo, act, old); /* the kernel's EINVAL */
	pthread_mutex_lock(&sig.lock);
	know(signo);
	if (old)
		*old = sig.actions[signo];
	if (act) {
		struct sigaction k = kernel_action(act);

		/* A signal the runtime has taken keeps its handler: the view
		 * changes, the kernel does not. */
		if (sig.taken[signo] || real_sigaction(signo, &k, NULL) == 0) {
			sig.actions[signo] = *act;
			sig.known[signo] = true;
		} else {
			err = errno;
		}
	}
	pthread_mutex_unlock(&sig.lock);
	if (err) {
		xf__errno_set(err);
		return -1;
	}
	return 0;
}

static sighandler_t set_handler(int signo, sighandler_t handler, int flags)
{
	struct sigaction sa = {.sa_handler = handler, .sa_flags = flags}, old;

	sigemptyset(&sa.sa_mask);
	if (sigaction(signo, &sa, &old))
		return SIG_ERR;
	return (old.sa_flags & SA_SIGINFO) ? (sighandler_t)(void *)old.sa_sigaction
					   : old.sa_handler;
}

/* glibc's signal(): BSD semantics. */
XF_REPLACE(sighandler_t, signal, (int signo, sighandler_t handler))
{
	return set_handler(signo, handler, SA_RESTART);
}

sighandler_t bsd_signal(int signo, sighandler_t handler); /* not declared by default */
XF_REPLACE(sighandler_t, bsd_signal, (int signo, sighandler_t handler))
{
	return set_handler(signo, handler, SA_RESTART);
}

XF_REPLACE(sighandler_t, sysv_signal, (int signo, sighandler_t handler))
{
	return set_handler(signo, handler, SA_RESETHAND | SA_NODEFER);
}

/* --- signals the runtime takes --- */

int xf__signal_take(int signo, void (*handler)(int, siginfo_t *, void *), int flags,
		    const sigset_t *mask)
{
	struct sigaction sa = {.sa_sigaction = handler, .sa_flags = flags | SA_SIGINFO};
	int err = 0;

	sa.sa_mask = *mask;
	pthread_mutex_lock(&sig.lock);
	know(signo);
	if (real_sigaction(signo, &sa, NULL))
		err = errno;
	else
		sig.taken[signo] = true;
	pthread_mutex_unlock(&sig.lock);
	return err;
}

void xf__signal_give_back(int signo)
{
	pthread_mutex_lock(&sig.lock);
	if (sig.taken[signo]) {
		struct sigaction k = kernel_action(&sig.actions[signo]);

		real_sigaction(signo, &k, NULL);
		sig.taken[signo] = false;
	}
	pthread_mutex_unlock(&sig.lock);
}

/* Signals whose default action is to do nothing. */
static bool ignored_by_default(int signo)
{
	return signo == SIGURG || signo == SIGCHLD || signo == SIGWINCH || signo == SIGCONT;
}

void xf__signal_forward(int signo, siginfo_t *si, void *uc)
{
	/* Read without the lock, which a signal handler may not take: a
	 * torn read would need a sigaction() racing this very signal. */
	struct sigaction a = sig.actions[signo];
	sigset_t block, old;

	if (!is_function(&a)) {
		if (a.sa_handler == SIG_IGN || ignored_by_default(signo))
			return;
		/* The default action: die of it.  A fault dies as it returns
		 * and runs the instruction again; a sent signal is sent again. */
		{
			struct sigaction dfl = {.sa_handler = SIG_DFL};

			sigemptyset(&dfl.sa_mask);
			real_sigaction(signo, &dfl, NULL);
		}
		if (si->si_code <= 0) {
			sigemptyset(&block);
			sigaddset(&block, signo);
			pthread_sigmask(SIG_UNBLOCK, &block, NULL);
			raise(signo);
		}
		return;
	}
	if (a.sa_flags & SA_RESETHAND) {
		sig.actions[signo].sa_handler = SIG_DFL;
		sig.actions[signo].sa_flags &= ~SA_SIGINFO;
	}
	/* The application's handler runs under its own mask, as the kernel
	 * would have run it (SA_ONSTACK cannot be honoured from here). */
	block = a.sa_mask;
	if (!(a.sa_flags & SA_NODEFER))
		sigaddset(&block, signo);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	app_enter(__builtin_frame_address(0), uc);
	call_app_handler(&a, signo, si, uc);
	app_leave();
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void signals_fork(enum xf__fork_phase phase)
{
	xf__fork_mutex(&sig.lock, phase);
}

XF_HOOK(signals_hook) = {
    .module = "preempt/sigaction", .fork_order = XF_FORK_ORDER_SIGNALS, .fork = signals_fork};

void xf__signal_foreign(int signo, siginfo_t *si, void *uc)
{
	xf__signal_forward(signo, si, uc);
}
