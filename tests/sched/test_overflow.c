/*
 * test_overflow.c - a fiber that runs out of stack is named on stderr and
 * the process aborts: never silent corruption, never a silent SIGSEGV.
 * Each case runs in a child process; the parent reads what it printed.
 *
 *   guard   user frames run into the guard below the stack;
 *   frame   the kernel finds no room for a signal frame: the fiber's frames
 *           reach deeper and deeper, and at each depth it sends itself a
 *           signal whose handler uses no stack of its own, until the
 *           kernel's frame does not fit;
 *   reused  a 64 KiB stack (not the default size) freed to its pool and
 *           taken again by a fiber that overflows it: its guard is there;
 *   sections  a plain overflow inside 12 nested critical sections of the
 *           fiber's own: reported plainly, no flood blamed;
 *   gp      a general-protection fault at that same depth is not a stack
 *           overflow, though it too comes as SI_KERNEL without an address:
 *           the child dies of SIGSEGV as it would without xfiber;
 *   forward a fault that is not an overflow goes to the handler installed
 *           before xfiber's, as the faulting code had the preemption signal
 *           (unblocked): a handler that longjmps out must not leave it
 *           blocked for good;
 *   bigframe a frame of 100 KiB, bigger than the 64 KiB guard, in a fiber
 *           with the smallest stack: its first bytes would land past the
 *           guard in the stack below (the scheduler's own), but the library
 *           and its users build with -fstack-clash-protection, whose
 *           probes touch every page on the way down and hit the guard;
 *   flood   another thread sends the preemption signal faster than it can
 *           be handled, which nests handler frames (SA_NODEFER) until they
 *           do not fit - and keeps sending while the report runs; the
 *           report blames the flood whether the kernel's frame or a
 *           handler's own hit the end;
 *   floodguard  handlers nested as in a flood, made to end on the guard
 *           every time: the report counts them.  On a
 *           machine where the sender cannot outpace the deliveries the
 *           child finishes instead, which is fine too; dying silently is not.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"
#include "xfiber.h"

static volatile int depth_limit = 1 << 30; /* guard: never reached, the stack ends first */
static volatile int bottom_action;	   /* at depth_limit: */
enum { RETURN, SIGNAL_SELF, GP_FAULT };

/* Handlers' own frames would decide between a guard hit and no room for
 * the kernel's frame: this one has none. */
__attribute__((naked)) static void handler_without_frame(int sig)
{
	(void)sig;
	__asm__("ret");
}

/* One 1 KiB frame per level; never inlined or cloned, or the levels would
 * merge into bigger steps. */
static __attribute__((noinline, noclone)) int recurse(volatile char *prev, int depth)
{
	volatile char frame[1024];

	frame[0] = prev ? prev[0] + 1 : 0;
	if (depth >= depth_limit) {
		if (bottom_action == SIGNAL_SELF)
			syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), SIGUSR1);
		else if (bottom_action == GP_FAULT) /* a non-canonical address */
			return *(volatile char *)0x8000000000000000ull;
		return frame[0];
	}
	return recurse(frame, depth + 1) + frame[1];
}

static void *overflow(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)recurse(NULL, 0);
}

/* Says each depth before it signals at it: the last one said is where the
 * kernel's frame did not fit. */
static void *deeper_each_time(void *arg)
{
	(void)arg;
	bottom_action = SIGNAL_SELF;
	for (depth_limit = 0; depth_limit < 1 << 20; depth_limit++) {
		fprintf(stderr, "depth %d\n", depth_limit);
		recurse(NULL, 0);
	}
	return NULL;
}

static void *spin_once(void *arg)
{
	return arg;
}

static void *gp_fault_at_depth(void *arg)
{
	(void)arg;
	bottom_action = GP_FAULT;
	return (void *)(intptr_t)recurse(NULL, 0);
}

static void run_one_fiber(void *(*fn)(void *))
{
	xf_fiber *f;

	/* Cooperative: the only preemption signals are the test's own. */
	xf_init(&(xf_config){.workers = 1, .cooperative = true});
	xf_spawn(&f, fn, NULL, NULL);
	xf_join(f, NULL); /* returns only if the overflow went unnoticed */
}

static void child_guard(void)
{
	run_one_fiber(overflow);
}

static void child_frame(void)
{
	struct sigaction sa = {.sa_handler = handler_without_frame};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	run_one_fiber(deeper_each_time);
}

static void child_gp(void)
{
	run_one_fiber(gp_fault_at_depth);
}

/* A frame larger than the guard, written at its lowest address first. */
static __attribute__((noinline, noclone)) int big_frame(int i)
{
	volatile char frame[100 * 1024];

	frame[0] = 1;
	frame[i] = 2;
	return frame[0] + frame[i];
}

static void *calls_big_frame(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)big_frame(1);
}

static void child_bigframe(void)
{
	xf_fiber *f;

	xf_init(&(xf_config){.workers = 1, .cooperative = true, .stack_size = XF_STACK_SIZE_MIN});
	xf_spawn(&f, calls_big_frame, NULL, NULL);
	xf_join(f, NULL); /* returns only if the frame went past the guard unnoticed */
}

/* A stack of another size than the default, freed to its pool and taken
 * again, keeps its guard. */
static void child_reused(void)
{
	xf_attr attr = XF_ATTR_INIT;
	xf_fiber *f;

	depth_limit = 1 << 30; /* the gp case set it: no bottom, the stack ends first */
	bottom_action = RETURN;
	xf_init(&(xf_config){.workers = 1, .cooperative = true});
	attr.stack_size = 64 * 1024;
	xf_spawn(&f, spin_once, NULL, &attr);
	xf_join(f, NULL);
	xf_spawn(&f, overflow, NULL, &attr); /* the same stack, from the pool */
	xf_join(f, NULL);		     /* returns only if the overflow went unnoticed */
}

/* A plain overflow in a fiber inside nested critical sections of its own
 * (the soft mask raised, as stdio's locks raise it): no flood to blame. */
static void *overflow_in_sections(void *arg)
{
	for (int i = 0; i < 12; i++)
		xf_preempt_disable();
	return overflow(arg);
}

static void child_sections(void)
{
	depth_limit = 1 << 30; /* the gp case set it: no bottom, the stack ends first */
	bottom_action = RETURN;
	run_one_fiber(overflow_in_sections);
}

static jmp_buf recovered;
static volatile int *volatile nowhere = (volatile int *)8;

static void recovering_handler(int sig)
{
	(void)sig;
	longjmp(recovered, 1); /* not siglongjmp: the mask stays as the handler had it */
}

static void child_forward(void)
{
	sigset_t mask;

	signal(SIGSEGV, recovering_handler);
	xf_init(&(xf_config){.workers = 1, .cooperative = true});
	if (!setjmp(recovered))
		(void)*nowhere; /* a fault no fiber stack explains */
	pthread_sigmask(SIG_SETMASK, NULL, &mask);
	if (sigismember(&mask, SIGURG)) {
		fprintf(stderr, "SIGURG blocked after the previous handler recovered\n");
		_exit(3);
	}
	xf_shutdown();
}

static pid_t worker_tid;
static atomic_bool flood_stop;

static void *flood(void *arg)
{
	(void)arg;
	while (!atomic_load(&flood_stop))
		syscall(SYS_tgkill, getpid(), worker_tid, SIGURG);
	return NULL;
}

static void *spin(void *arg)
{
	volatile uint64_t x = 0;

	for (uint64_t i = 0; i < 200000000u; i++)
		x += i;
	return arg;
}

static void child_flood(void)
{
	xf_fiber *f[2];
	pthread_t t;

	worker_tid = (pid_t)syscall(SYS_gettid);
	xf_init(&(xf_config){.workers = 1});
	pthread_create(&t, NULL, flood, NULL);
	for (int i = 0; i < 2; i++)
		xf_spawn(&f[i], spin, NULL, NULL);
	for (int i = 0; i < 2; i++)
		xf_join(f[i], NULL);
	atomic_store(&flood_stop, true);
	pthread_join(t, NULL);
	xf_shutdown();
}

/* A flood that ends on the guard, every time: the application's SIGURG
 * handler, to which the runtime passes signals without its tag, sends the
 * next one itself, which nests at once (SA_NODEFER), and at the 12th level
 * calls a frame bigger than any fiber's stack, whose stack-clash probes
 * reach the guard. */
static int urg_depth;

static __attribute__((noinline, noclone)) int huge_frame(int i)
{
	volatile char frame[1024 * 1024];

	frame[i] = 1;
	return frame[i];
}

static void nesting_urg_handler(int sig)
{
	if (++urg_depth >= 12)
		huge_frame(0);
	else
		syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), sig);
}

static void *flood_itself(void *arg)
{
	(void)arg;
	syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), SIGURG);
	return NULL; /* only if no handler nested */
}

static void child_floodguard(void)
{
	struct sigaction sa = {.sa_handler = nesting_urg_handler, .sa_flags = SA_NODEFER};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGURG, &sa, NULL);
	run_one_fiber(flood_itself);
}

/* Aborted after naming the fiber (any, if NULL) and the cause (if given). */
static bool reported(int status, const char *out, const char *fiber, const char *why)
{
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT &&
	       strstr(out, fiber ? fiber : " overflowed its stack") && (!why || strstr(out, why));
}

/* The last "depth N" a frame child said. */
static int last_depth(const char *out)
{
	const char *p, *last = NULL;

	for (p = strstr(out, "depth "); p; p = strstr(p + 1, "depth "))
		last = p;
	return last ? atoi(last + 6) : -1;
}

int main(void)
{
	static const char no_room[] = "no room left for a signal frame";
	static const char flood[] = "a flood of SIGURG";
	static const char fiber2[] = "fiber 2 overflowed its stack";
	char out[8192];
	int status, depth;

	status = xf_test_run_child(child_guard, out, sizeof(out));
	if (!reported(status, out, fiber2, NULL) || strstr(out, no_room) || strstr(out, flood))
		xf_test_fail("guard: no overflow report, or one that blames signals (status 0x%x); "
			     "stderr was: %s",
			     status, out);
	printf("guard: %s", out);

	status = xf_test_run_child(child_frame, out, sizeof(out));
	depth = last_depth(out);
	if (!reported(status, out, fiber2, no_room) || depth < 0)
		xf_test_fail("frame: no report of the signal frame (status 0x%x); stderr was: %s",
			     status, out);
	printf("frame, at depth %d: %s", depth, strstr(out, "xfiber:"));

	depth_limit = depth;
	status = xf_test_run_child(child_gp, out, sizeof(out));
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGSEGV || strstr(out, "overflowed"))
		xf_test_fail("gp: a general-protection fault at depth %d was not left to kill the "
			     "child (status 0x%x); stderr was: %s",
			     depth, status, out);
	printf("gp, at depth %d: died of SIGSEGV, no report\n", depth);

	status = xf_test_run_child(child_reused, out, sizeof(out));
	if (!reported(status, out, "fiber 3 overflowed its stack (65536 bytes", NULL))
		xf_test_fail("reused: a pooled 64 KiB stack overflowed without a report (status "
			     "0x%x); stderr was: %s",
			     status, out);
	printf("reused: %s", out);

	status = xf_test_run_child(child_sections, out, sizeof(out));
	if (!reported(status, out, fiber2, NULL) || strstr(out, flood))
		xf_test_fail("sections: an overflow inside 12 critical sections was not reported "
			     "plainly (status 0x%x); stderr was: %s",
			     status, out);
	printf("sections: %s", out);

	status = xf_test_run_child(child_forward, out, sizeof(out));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		xf_test_fail("forward: status 0x%x; stderr was: %s", status, out);
	printf("forward: the previous handler recovered, SIGURG unblocked\n");

	status = xf_test_run_child(child_bigframe, out, sizeof(out));
	if (!reported(status, out, fiber2, NULL))
		xf_test_fail("bigframe: a 100 KiB frame went past the guard without a report "
			     "(status 0x%x); stderr was: %s",
			     status, out);
	printf("bigframe: %s", out);

	status = xf_test_run_child(child_floodguard, out, sizeof(out));
	if (!reported(status, out, fiber2, flood) || strstr(out, no_room) ||
	    !strstr(out, "signal handlers nested on it"))
		xf_test_fail("floodguard: nested handlers reached the guard without a report that "
			     "blames them (status 0x%x); stderr was: %s",
			     status, out);
	printf("floodguard: %s", out);

	/* The flood ends in either report: no room for the kernel's next
	 * frame, or a handler's own frames on the guard (1 run in ~60 under
	 * qemu's Nehalem), which counts the handlers nested. */
	status = xf_test_run_child(child_flood, out, sizeof(out));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		printf("flood: the sender did not outpace the deliveries; the child finished\n");
	else if (reported(status, out, NULL, flood)) /* either fiber: they take turns */
		printf("flood: %s", out);
	else
		xf_test_fail("flood: the child died without a report (status 0x%x); stderr was: %s",
			     status, out);
	return 0;
}
