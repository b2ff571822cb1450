/*
 * runtime.c - starting and stopping the runtime.
 *
 * xf_init() turns the calling thread into worker 0 and its code into the
 * first fiber (pinned to worker 0, on the thread's own stack), gives
 * worker 0 a scheduler context on a stack of its own, and starts workers
 * 1..N-1, whose scheduler context is their thread's stack.  xf_shutdown()
 * reverses it once every other fiber has finished.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "arch/context.h"
#include "io/io.h"
#include "sched/runq.h"
#include "sched/sanitizer.h"
#include "sched/sched.h"
#include "sync/sync.h"
#include "xstate/xstate.h"
#include "runtime/hooks.h"
#include "runtime/runtime.h"

/* The first fiber returned or called xf_exit: as pthread_exit in main,
 * the process ends when the rest has (sched/fiber.c calls this). */
static _Noreturn void first_fiber_exit(void)
{
	xf_shutdown();
	exit(0);
}

/* A context for a thread that already runs: its own stack, already on cpu.
 * thread_context_bind() completes it on that thread. */
static struct xf_fiber *thread_context(struct xf__worker *w, unsigned flags)
{
	struct xf_fiber *f = xf__fiber_alloc(w);

	if (!f)
		return NULL;
	memset(f, 0, sizeof(*f));
	f->magic = XF_FIBER_MAGIC;
	f->flags = flags;
	f->home = (int)w->id;
	atomic_store_explicit(&f->on_cpu, XF_ON_CPU, memory_order_relaxed);
	return f;
}

static void thread_context_bind(struct xf_fiber *f)
{
	pthread_attr_t attr;

	if (pthread_getattr_np(pthread_self(), &attr) == 0) {
		pthread_attr_getstack(&attr, &f->stack.base, &f->stack.size);
		pthread_attr_destroy(&attr);
	}
	xf__san_thread_context(f);
}

/* Makes the calling thread worker w. */
static void worker_enter(struct xf__worker *w)
{
	xf__tls_worker = w;
	w->errno_ptr = &errno;
	w->thread = pthread_self();
}

static void *worker_thread(void *arg)
{
	struct xf__worker *w = arg;

	worker_enter(w);
	xf__preempt_word_set(XF_PREEMPT_NOT_PENDING | 1); /* the idle loop is never preempted */
	thread_context_bind(w->idle);
	__atomic_store_n(&w->current, w->idle, __ATOMIC_RELAXED); /* the ticker reads it */
	/* Without the alternate stack a stack overflow on this worker dies
	 * unexplained, but it still dies: go on. */
	xf__overflow_handler_install(w);
	xf__preempt_worker_enter(w);
	xf__cxx_once_locate(w);
#ifdef XF_HAVE_IO_URING
	xf__ring_worker_enter(w);
#endif
	xf__worker_run(w); /* until the runtime stops */
	xf__overflow_handler_remove(w);
	xf__tls_worker = NULL;
	return NULL;
}

static int check_config(const xf_config *cfg)
{
	if (cfg->workers > XF_WORKERS_MAX)
		return EINVAL;
	if (cfg->stack_size &&
	    (cfg->stack_size < XF_STACK_SIZE_MIN || cfg->stack_size > ((size_t)1 << 40)))
		return EINVAL;
	if (cfg->slice_us && cfg->slice_us < XF_SLICE_US_MIN)
		return EINVAL;
	if (cfg->spin_us > 1000000)
		return EINVAL;
	if (cfg->io_backend > XF_IO_BACKEND_IO_URING)
		return EINVAL;
	return 0;
}

/* XFIBER_COOPERATIVE=1 runs a program cooperatively whatever its config
 * says: under Valgrind, which runs one thread at a time and would deliver
 * the ticker's signals late and at random, or to tell whether a bug needs
 * preemption. */
static bool cooperative_forced(void)
{
	const char *c = getenv("XFIBER_COOPERATIVE");

	return c && !strcmp(c, "1");
}

/* XFIBER_ROUND_ROBIN=1 keeps preempted fibers in the plain round robin
 * whatever the config says: to tell whether a program's behaviour comes
 * from woken fibers going first. */
static bool round_robin_forced(void)
{
	const char *c = getenv("XFIBER_ROUND_ROBIN");

	return c && !strcmp(c, "1");
}

/* Whether a misuse returns its error or aborts: XFIBER_MISUSE=return|abort,
 * by default abort in debug builds, where it is a bug to find. */
static bool misuse_returns(void)
{
	const char *m = getenv("XFIBER_MISUSE");

	if (m && !strcmp(m, "return"))
		return true;
	if (m && !strcmp(m, "abort"))
		return false;
#ifdef XFIBER_DEBUG
	return false;
#else
	return true;
#endif
}

/* The engine asked for: XFIBER_IO_BACKEND=epoll|io_uring over the config,
 * and XFIBER_RING_ENTRIES, the size of io_uring's submission rings.
 * EINVAL for another value, ENOTSUP for io_uring without liburing at
 * build time; each says so on stderr. */
static int io_backend_asked(const xf_config *cfg, int *backend)
{
	const char *env = getenv("XFIBER_IO_BACKEND");
	unsigned long entries = XF_RING_ENTRIES_DEFAULT;

	*backend = cfg->io_backend == XF_IO_BACKEND_DEFAULT ? XF_IO_BACKEND_EPOLL : cfg->io_backend;
	if (env && *env) {
		if (!strcmp(env, "epoll")) {
			*backend = XF_IO_BACKEND_EPOLL;
		} else if (!strcmp(env, "io_uring")) {
			*backend = XF_IO_BACKEND_IO_URING;
		} else {
			fprintf(stderr, "xfiber: XFIBER_IO_BACKEND=%s: not epoll or io_uring\n",
				env);
			return EINVAL;
		}
	}
	env = getenv("XFIBER_RING_ENTRIES");
	if (env && *env) {
		char *end;

		entries = strtoul(env, &end, 10);
		if (*end || entries < XF_RING_ENTRIES_MIN || entries > XF_RING_ENTRIES_MAX ||
		    (entries & (entries - 1))) {
			fprintf(
			    stderr,
			    "xfiber: XFIBER_RING_ENTRIES=%s: not a power of two from %d to %d\n",
			    env, XF_RING_ENTRIES_MIN, XF_RING_ENTRIES_MAX);
			return EINVAL;
		}
	}
#ifdef XF_HAVE_IO_URING
	xf__ring_entries = (unsigned)entries;
#endif
#ifndef XF_HAVE_IO_URING
	if (*backend == XF_IO_BACKEND_IO_URING) {
		fprintf(stderr, "xfiber: the io_uring engine was not built (liburing missing when "
				"libxfiber was built)\n");
		return ENOTSUP;
	}
#endif
	return 0;
}

/* The engine asked for, started, or epoll with the reason said once per
 * process on stderr (and in xf_stats). */
static void io_backend_start(int backend)
{
#ifdef XF_HAVE_IO_URING
	static bool said;

	if (backend == XF_IO_BACKEND_IO_URING) {
		if (!xf__ring_start()) {
			xf__io_backend_set(XF_IO_BACKEND_IO_URING, NULL);
			return;
		}
		if (!said)
			fprintf(stderr,
				"xfiber: io_uring refused (%s): fibers' descriptors use epoll\n",
				xf__ring_refused());
		said = true;
		xf__io_backend_set(XF_IO_BACKEND_EPOLL, xf__ring_refused());
		return;
	}
#endif
	(void)backend;
	xf__io_backend_set(XF_IO_BACKEND_EPOLL, NULL);
}

static void io_backend_stop(void)
{
#ifdef XF_HAVE_IO_URING
	xf__ring_stop();
#endif
}

/* Room for one kernel signal frame on every fiber stack, plus the red zone. */
static size_t frame_reserve(void)
{
	unsigned long frame = getauxval(AT_MINSIGSTKSZ);

	if (frame < 2048)
		frame = 2048; /* kernels before 5.14 do not say; MINSIGSTKSZ */
	return XF_ALIGN_UP(frame + 128 + 1024, 4096);
}

static void release_workers(unsigned started)
{
	/* This thread is no worker from here on: what follows calls into
	 * libc (pthread_mutex_lock), which libxfiber interposes, and must not
	 * find a freed worker there. */
	xf__tls_worker = NULL;
	for (unsigned i = 0; i < xf__rt.nr_workers; i++) {
		struct xf__worker *w = &xf__rt.workers[i];

		if (i && i < started)
			pthread_join(w->thread, NULL);
		free(w->timers);
	}
	io_backend_stop(); /* the rings, once no worker waits in one */
	free(xf__rt.workers_alloc);
	xf__rt.workers = xf__rt.workers_alloc = NULL;
	xf__stacks_release();
	xf__fiber_arena_release();
}

/* The CPUs this process may run on (its affinity mask, as nproc counts
 * them; a container's cpuset or taskset narrows it), else the online ones. */
static unsigned usable_cpus(void)
{
	cpu_set_t set;
	long online = sysconf(_SC_NPROCESSORS_ONLN);

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return (unsigned)CPU_COUNT(&set);
	return online > 0 ? (unsigned)online : 1;
}

static int start(const xf_config *cfg, int backend)
{
	unsigned n = cfg->workers ? cfg->workers : usable_cpus();
	struct xf__worker *w0;
	struct xf_fiber *idle0;
	unsigned started = 1;
	int err;

	if (n > XF_WORKERS_MAX)
		n = XF_WORKERS_MAX;
	err = xf__stacks_configure(cfg);
	if (err)
		return err;
	xf__heavy_barrier_prepare(); /* before any thread of ours */
	memset(&xf__rt, 0, sizeof(xf__rt));
	xf__rt.nr_workers = n;
	xf__rt.pid = getpid();
	xf__rt.uid = getuid();
	xf__rt.stack_size = cfg->stack_size ? cfg->stack_size : XF_STACK_SIZE_DEFAULT;
	xf__rt.slice_us = cfg->slice_us ? cfg->slice_us : XF_SLICE_US_DEFAULT;
	xf__rt.frame_reserve = frame_reserve();
	xf__rt.next_id = 1;
	xf__spin_ns_set(cfg->spin_us);
	xf__rt.workers = xf__rt.workers_alloc = aligned_alloc(64, n * sizeof(struct xf__worker));
	if (!xf__rt.workers)
		return ENOMEM;
	memset(xf__rt.workers, 0, n * sizeof(struct xf__worker));
	for (unsigned i = 0; i < n; i++)
		xf__rt.workers[i].id = i;

	/* Worker 0: this thread, whose code goes on as the first fiber. */
	w0 = &xf__rt.workers[0];
	worker_enter(w0);
	xf__rt.first = thread_context(w0, XF_FIBER_F_FIRST | XF_FIBER_F_PINNED);
	xf__rt.first_fiber_exit = first_fiber_exit;
	idle0 = xf__fiber_alloc(w0);
	if (!xf__rt.first || !idle0) {
		err = ENOMEM;
		goto fail;
	}
	thread_context_bind(xf__rt.first);
	memset(idle0, 0, sizeof(*idle0));
	err = xf__stack_get(w0, xf__rt.stack_size, &idle0->stack);
	if (err)
		goto fail;
	idle0->magic = XF_FIBER_MAGIC;
	idle0->flags = XF_FIBER_F_IDLE | XF_FIBER_F_PINNED;
	/* With this thread's MXCSR and control word, as the other workers'
	 * threads start with their creator's. */
	idle0->sp = xf__context_make((char *)idle0->stack.base + idle0->stack.size, idle0);
	xf__san_fiber_create(idle0);
	w0->idle = idle0;
	__atomic_store_n(&w0->current, xf__rt.first, __ATOMIC_RELAXED);
	xf__runq_push(w0, xf__rt.first); /* it runs, in the ring */
	xf__runq_run_head(w0);
	xf__rt.first->id = atomic_fetch_add(&xf__rt.next_id, 1);
	xf_fiber_set_name(xf__rt.first, "main"); /* ENOMEM leaves it unnamed */
	err = xf__overflow_handler_install(w0);
	if (err)
		goto fail;
	xf__preempt_worker_enter(w0);
	xf__cxx_once_locate(w0);
	xf__cxx_check();

	/* Workers 1..n-1 get their scheduler contexts before any thread runs,
	 * so none can see a half-made neighbour. */
	for (unsigned i = 1; i < n; i++) {
		struct xf__worker *w = &xf__rt.workers[i];
		w->idle = thread_context(w, XF_FIBER_F_IDLE | XF_FIBER_F_PINNED);
		if (!w->idle) {
			err = ENOMEM;
			goto fail;
		}
	}
	err = xf__poller_start();
	if (err)
		goto fail;
	io_backend_start(backend);
	xf__blocking_start(cfg->blocking_threads);
	/* Workers inherit the signal mask set here, less the preemption signal. */
	err = xf__preempt_install();
	if (err)
		goto fail_poller;
	atomic_store(&xf__rt.running, 1);
	for (; started < n; started++) {
		struct xf__worker *w = &xf__rt.workers[started];
		err = pthread_create(&w->thread, NULL, worker_thread, w);
		if (err)
			goto fail_threads;
	}
	xf__rt.preempt_enabled = !cfg->cooperative && !cooperative_forced();
	xf__rt.misuse_returns = misuse_returns();
	xf__rt.round_robin = cfg->round_robin || round_robin_forced();
	if (xf__rt.preempt_enabled) {
		err = xf__ticker_start();
		if (err)
			goto fail_threads;
	}
	return 0;

fail_threads:
	atomic_store(&xf__rt.running, 0);
	atomic_store(&xf__rt.stopping, 1);
	for (unsigned i = 1; i < started; i++)
		xf__worker_kick(&xf__rt.workers[i]);
	xf__preempt_uninstall();
fail_poller:
	xf__blocking_stop();
	xf__poller_stop(false);
fail:
	xf__overflow_handler_remove(w0);
	release_workers(started);
	return err;
}

#if !defined(__SANITIZE_ADDRESS__)
/* Defined in a process that runs ASan's runtime. */
extern void __asan_init(void) __attribute__((weak));
#endif

/* A program built with ASan around a library built without it: the
 * library's stack switches are not announced to ASan (sched/sanitizer.h),
 * which then reports stack errors that are not there - at the first throw
 * or longjmp in a fiber (a reviewer's C++ program).  Said once, at
 * xf_init: the run goes on, but its ASan reports are not to be believed. */
static void say_sanitizer_mismatch(void)
{
#if !defined(__SANITIZE_ADDRESS__)
	static bool said;

	if (!__asan_init || said)
		return;
	said = true;
	fprintf(stderr, "xfiber: this program runs under AddressSanitizer, but libxfiber was built "
			"without it: ASan is not told of fiber stack switches and will report "
			"stack errors that are not there; build libxfiber with "
			"-DXFIBER_SANITIZE=address (docs/runtime.md, \"Sanitizers\")\n");
#endif
}

int xf_init(const xf_config *cfg)
{
	static const xf_config defaults;
	int err, backend;

	if (!cfg)
		cfg = &defaults;
	err = check_config(cfg);
	if (!err)
		err = io_backend_asked(cfg, &backend);
	if (err)
		return err;
	say_sanitizer_mismatch();
	if (cfg->amx) {
		err = xf_xstate_request_amx();
		if (err)
			return err;
	}
	/* By name, not through the hooks: the calls link each module's
	 * replacements in from libxfiber.a (hooks.h). */
	xf__pthread_interpose_resolve();
	xf__sleep_interpose_resolve();
	xf__poll_interpose_resolve();
	xf__io_interpose_resolve();
	xf__hooks_init();
	xf__fork_handlers_register();
	pthread_mutex_lock(&xf__lifecycle);
	if (atomic_load(&xf__rt.running) || xf__this_worker())
		err = EBUSY;
	else
		err = start(cfg, backend);
	pthread_mutex_unlock(&xf__lifecycle);
	if (!err)
		xf__dump_signal_start();
	return err;
}

/* The child of a fork: only the forking thread runs on.  If it was a
 * worker, the fiber that forked goes on as the first fiber of a runtime of
 * one worker - that worker, renumbered 0, with its scheduler context as it
 * was - as POSIX has only the forking thread go on; the other fibers are
 * gone, their memory with them when the runtime stops.  If it was a plain
 * thread, the child has no runtime, and may start one.  No system call
 * but two ids: fork and exec stay as cheap as a plain fork, and the ticker
 * starts with the child's first spawn. */
static void fork_child(void)
{
	struct xf__worker *w = xf__tls_worker;
	struct xf_fiber *f;

	pthread_mutex_init(&xf__lifecycle, NULL);
	xf__dump_signal_fork_child();
	if (!atomic_load(&xf__rt.running))
		return;
	xf__ticker_forget();
	if (!w) {
		io_backend_stop();
		xf__poller_stop(true); /* the child's copies of the parent's descriptors */
		memset(&xf__rt, 0, sizeof(xf__rt)); /* the parent's memory is leaked */
		return;
	}
	xf__poller_fork_child();
#ifdef XF_HAVE_IO_URING
	xf__ring_fork_child();
	if (xf__ring_refused())
		xf__io_backend_set(XF_IO_BACKEND_EPOLL, xf__ring_refused());
#endif
	f = w->current;
	/* Every other fiber stays the parent's: nothing here wakes one. */
	xf__rt.fork_gen++;
	f->fork_gen = xf__rt.fork_gen;
	xf__rt.workers = w;
	xf__rt.nr_workers = 1;
	xf__rt.pid = getpid();
	xf__rt.first = f;
	atomic_store(&w->spawned, 0); /* the only fiber left is the first */
	atomic_store(&w->finished, 0);
	/* The parent's threads' fibers too: counted live, a child's
	 * xf_shutdown waited for them for good (a reviewer's t_fork2). */
	atomic_store(&xf__rt.spawned_by_threads, 0);
	atomic_store(&xf__rt.nr_parked, 0);
	atomic_store(&xf__rt.nr_spinning, 0);
	atomic_store(&xf__rt.shutdown_waiting, 0);
	xf__rt.ticker_pending = xf__rt.preempt_enabled;

	w->id = 0;
	w->thread = pthread_self();
	w->tid = gettid();
	w->runq = (struct xf__runq){0};
	w->batch_head = w->batch_tail = NULL; /* the parent's */
	w->aside_head = w->aside_tail = NULL;
	w->line_waiting = false;
	atomic_store(&w->nr_fixed, 0);
	w->sched_ticks = 0;
	atomic_store(&w->inbox, NULL);
	atomic_store(&w->steal_request, 0);
	atomic_store(&w->steal_pending, 0);
	atomic_store(&w->timers_nr, 0); /* the sleepers were the parent's */
	atomic_store(&w->timers_first_ns, 0);
	atomic_store(&w->park_seq, 0);
	atomic_store(&w->parked, 0);
	atomic_store(&w->timer_lock, 0);
	memset(&w->stats, 0, sizeof(w->stats));
	w->tick_switches = w->tick_since_ns = 0;
	atomic_store(&w->ticks_seen, 0);
	w->ticks_sent = 0;

	/* It runs on its own stack, which must outlive the runtime. */
	if (!(f->flags & XF_FIBER_F_FIRST))
		xf__stack_keep(&f->stack);
	f->flags |= XF_FIBER_F_FIRST | XF_FIBER_F_PINNED;
	f->flags &= ~XF_FIBER_F_STAY;
	f->home = 0;
	f->owned_nr = 0;
	xf__runq_push(w, f); /* it runs, in the ring */
	xf__runq_run_head(w);
}

void xf__runtime_fork(enum xf__fork_phase phase)
{
	if (phase == XF_FORK_CHILD)
		fork_child();
	else
		xf__fork_mutex(&xf__lifecycle, phase);
}

/* How often the shutdown looks at the count of live fibers on its own: the
 * last fiber's exit wakes it, but without a fence (fiber.c's
 * xf__fiber_finish), so an exit racing the start of the wait may not. */
#define XF_SHUTDOWN_RECHECK_NS (5 * 1000 * 1000)

/* Blocks the first fiber until it is the only one left, or until
 * deadline_ns (0: none); whether it is. */
/* A shutdown that has waited this many stall thresholds (XFIBER_STALL_MS;
 * 10 s by default) says for whom, once: a fiber blocked for good otherwise
 * kept xf_shutdown - ~xf::runtime - waiting without a word. */
#define XF_SHUTDOWN_REPORT_STALLS 5

/* Writes headline, then the fibers a shutdown waits for (as xf_dump). */
static void say_unwaited(const char *headline)
{
	if (write(STDERR_FILENO, headline, strlen(headline)) < 0) {
		/* nowhere to say it */
	}
	xf__dump_unwaited(STDERR_FILENO);
}

static bool wait_for_others(struct xf_fiber *self, uint64_t deadline_ns)
{
	uint64_t report_ns = xf__stall_threshold_ns() * XF_SHUTDOWN_REPORT_STALLS;
	uint64_t start = xf__now_ns();
	bool reported = !report_ns;

	while (xf__live_fibers() > 1) {
		uint64_t now = xf__now_ns(), wait = XF_SHUTDOWN_RECHECK_NS;

		if (deadline_ns && now >= deadline_ns)
			break;
		if (!reported && now - start >= report_ns) {
			reported = true;
			say_unwaited("xfiber: xf_shutdown still waits for these fibers "
				     "(xf_shutdown_timeout and xf_cancel_all end such waits):\n");
		}
		if (deadline_ns && deadline_ns - now < wait)
			wait = deadline_ns - now;
		xf__wait_prepare(self);
		atomic_store_explicit(&xf__rt.shutdown_waiting, 1, memory_order_seq_cst);
		if (xf__live_fibers() == 1)
			xf__wait_cancel(self);
		else
			xf__wait_block(self, wait, NULL, XF_WAIT_ON_SHUTDOWN, NULL);
	}
	atomic_store_explicit(&xf__rt.shutdown_waiting, 0, memory_order_relaxed);
	return xf__live_fibers() == 1;
}

int xf_shutdown_timeout(uint64_t timeout_ns)
{
	struct xf__worker *w = xf__this_worker();
	uint64_t now = xf__now_ns(), deadline = 0;
	struct xf_fiber *self;

	if (!w || !atomic_load(&xf__rt.running) || w->current != xf__rt.first)
		return EPERM;
	if (xf__preempt_disabled_beyond(0) && xf__live_fibers() > 1)
		return xf__misuse_preempt_disabled("xf_shutdown");
	self = w->current;
	if (timeout_ns != XF_FOREVER && timeout_ns <= UINT64_MAX - now)
		deadline = now + (timeout_ns ? timeout_ns : 1);
	/* Fibers waiting on descriptors would wait forever: they fail with
	 * ECANCELED, and so does every wait from now on. */
	xf__io_cancel_all();
	/* A plain thread's xf_spawn holds the lock while it spawns: one that
	 * got in before this is counted live and waited for, as any fiber; the
	 * rest fail with EPERM.  (Letting them in would let threads keep a
	 * shutdown waiting for ever.) */
	xf__lifecycle_lock();
	xf__rt.closing = true;
	xf__lifecycle_unlock();
	if (!wait_for_others(self, deadline)) {
		say_unwaited(
		    "xfiber: xf_shutdown_timeout: fibers still alive after the timeout:\n");
		xf__lifecycle_lock();
		xf__rt.closing = false; /* the runtime runs on, and so does I/O */
		xf__lifecycle_unlock();
		xf__io_uncancel();
		return ETIMEDOUT;
	}
	xf__dump_signal_stop(); /* before the lock: its dump takes it */

	/* Not xf__lifecycle_lock(): preemption ends in here (the word is reset
	 * below), and this fiber is the last, so none of its worker can fork. */
	pthread_mutex_lock(&xf__lifecycle);
	atomic_store(&xf__rt.running, 0);
	atomic_store(&xf__rt.stopping, 1);
	xf__ticker_stop();
	for (unsigned i = 1; i < xf__rt.nr_workers; i++)
		xf__worker_kick(&xf__rt.workers[i]);
	xf__blocking_stop();
	/* The first fiber is pinned to worker 0: this is worker 0's thread. */
	w = xf__this_worker();
	xf__fls_destroy(self);
	xf__hooks_fiber_exit(self);
	xf__overflow_handler_remove(w);
	release_workers(xf__rt.nr_workers);
	xf__poller_stop(false);
	xf__preempt_uninstall();
	xf__preempt_word_set(XF_PREEMPT_NOT_PENDING);
	pthread_mutex_unlock(&xf__lifecycle);
	return 0;
}

int xf_shutdown(void)
{
	return xf_shutdown_timeout(XF_FOREVER);
}
