/*
 * test_sigreturn.c - a preemption tick that lands in the sigreturn
 * trampoline leaves the run queue alone.
 *
 * Every signal handler returns through the C library's restorer (`mov $15,
 * %rax; syscall`).  A second tick that lands there finds the soft mask as
 * the first handler left it - nesting 0 when the first tick had
 * interrupted xf_yield's fast path, which runs at nesting 0 in
 * xf_nopreempt_text - and a pc in the C library.  Taken for code outside
 * the runtime, it polled the run queue (inbox, steal requests, timers) in
 * the middle of that fast path's run-queue update: a steal answered
 * between the fast path's head/tail stores and its switch relinked the ring
 * around the yielding fiber as if it still ran, the fiber it was switching
 * to dropped out, and fibers ended up queued twice - a fiber resumed in a
 * wait nobody ended ("state == XF_WAIT_WAITING"), a cycle in an inbox, an
 * exited fiber run again.  runtime.mix failed so, a few runs in a hundred,
 * with a second source of ticks beside the ticker.
 *
 * The window is two instructions wide, so this test does not wait for a
 * signal to hit it: a fiber on worker 0 makes sure a fiber waits in worker
 * 0's inbox, then calls the handler's entry itself, as the kernel would,
 * with a tick that asks for a poll (XF_TICK_ANSWER) and an interrupted
 * context whose pc is the restorer.  The inbox must still hold the fiber
 * afterwards.  The same tick with a pc elsewhere in the C library must
 * poll it, which shows that the call reaches the handler at all.
 *
 * usage: sched_test_sigreturn
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "preempt/preempt.h"
#include "sched/sched.h"
#include "testlib.h"
#include "xfiber.h"

#define ROUNDS 20

static atomic_int spawned;
static xf_fiber *queued;

/* The restorer the kernel calls after the preemption handler. */
static uintptr_t restorer(void)
{
	struct {
		void *handler;
		unsigned long flags;
		void *restorer;
		uint64_t mask;
	} k;

	CHECK(syscall(SYS_rt_sigaction, XF_PREEMPT_SIGNAL, NULL, &k, sizeof(k.mask)) == 0);
	if (!(k.flags & 0x04000000 /* SA_RESTORER */) || !k.restorer)
		xf_test_skip("the preemption handler has no sa_restorer");
	return (uintptr_t)k.restorer;
}

static void *queued_main(void *arg)
{
	return arg;
}

/* On worker 1: queues a fiber pinned to worker 0, through its inbox. */
static void *spawner_main(void *arg)
{
	xf_attr attr = XF_ATTR_INIT;

	(void)arg;
	attr.pinned = true;
	attr.worker = 0;
	CHECK_ERR(xf_spawn(&queued, queued_main, &queued, &attr), 0);
	atomic_store(&spawned, 1);
	return NULL;
}

static struct xf_fiber *inbox0(void)
{
	return atomic_load(&xf__rt.workers[0].inbox);
}

/* Enters the preemption handler as the kernel would, for an answer-only
 * tick that interrupted the calling fiber at pc. */
static void tick_at(uintptr_t pc)
{
	siginfo_t si;
	ucontext_t uc;

	memset(&si, 0, sizeof(si));
	si.si_signo = XF_PREEMPT_SIGNAL;
	si.si_code = SI_QUEUE;
	si.si_pid = getpid();
	si.si_uid = getuid();
	si.si_value.sival_ptr = (void *)(uintptr_t)(XF_TICK_TAG | XF_TICK_FORCED | XF_TICK_ANSWER);
	CHECK(getcontext(&uc) == 0); /* this thread's signal mask: the workers' */
	uc.uc_mcontext.gregs[REG_RIP] = (greg_t)pc;
	xf__preempt_entry(XF_PREEMPT_SIGNAL, &si, &uc);
}

/* On worker 0, never yielding until the checks are done. */
static void *checker_main(void *arg)
{
	const uintptr_t sigreturn = restorer();
	xf_attr attr = XF_ATTR_INIT;
	xf_fiber *spawner;

	(void)arg;
	for (int round = 0; round < ROUNDS; round++) {
		atomic_store(&spawned, 0);
		attr.pinned = true;
		attr.worker = 1;
		CHECK_ERR(xf_spawn(&spawner, spawner_main, NULL, &attr), 0);
		while (!atomic_load(&spawned))
			__builtin_ia32_pause();
		if (xf_worker_id() != 0 || !inbox0())
			xf_test_fail("round %d: no fiber waits in worker 0's inbox", round);

		/* Either instruction of the trampoline: the mov, the syscall. */
		tick_at(sigreturn);
		tick_at(sigreturn + 7);
		if (!inbox0())
			xf_test_fail("round %d: a tick at the sigreturn trampoline (%#lx) polled the "
				     "run queue",
				     round, (unsigned long)sigreturn);

		/* Elsewhere in the C library: outside the runtime, it polls. */
		tick_at(sigreturn + 64);
		if (inbox0())
			xf_test_fail("round %d: a tick in the C library did not poll the run queue: "
				     "the handler was not reached",
				     round);

		CHECK_ERR(xf_join(spawner, NULL), 0);
		CHECK_ERR(xf_join(queued, NULL), 0);
	}
	return NULL;
}

int main(void)
{
	xf_attr attr = XF_ATTR_INIT;
	xf_fiber *f;

	/* Long slices: the ticker neither preempts the checker nor sends it
	 * an answer-only tick of its own while it looks at the inbox. */
	CHECK_ERR(xf_init(&(xf_config){.workers = 2, .slice_us = 10 * 1000 * 1000, .spin_us = 1}),
		  0);
	attr.pinned = true;
	attr.worker = 0;
	CHECK_ERR(xf_spawn(&f, checker_main, NULL, &attr), 0);
	CHECK_ERR(xf_join(f, NULL), 0);
	CHECK_ERR(xf_shutdown(), 0);
	printf("%d rounds: ticks at the sigreturn trampoline left the run queue alone\n", ROUNDS);
	return 0;
}
