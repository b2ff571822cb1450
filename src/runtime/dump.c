/*
 * dump.c - a dump of every fiber with its backtrace (xf_dump), the stall
 * report's writer, and the signal that asks for a dump
 * (XFIBER_DUMP_SIGNAL).
 *
 * The dump stops the world (sched/debug.c has the protocol) while it reads
 * switched-out fibers' stacks, formats into memory while the world stands,
 * and writes only after: the reader of the descriptor may be one of the
 * fibers that wait.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <unwind.h>

#include "arch/context.h"
#include "common/text.h"
#include "runtime/runtime.h"
#include "sched/sched.h"

static pthread_mutex_t dump_lock = PTHREAD_MUTEX_INITIALIZER;

/* --- the dump --- */

#define DUMP_FRAMES_MAX 64

struct trace {
	struct xf__text *o;
	unsigned frames, skip; /* skip: ours, before the fiber's own */
};

_Unwind_Reason_Code xf__backtrace_switched(const void *sp, _Unwind_Trace_Fn fn, void *arg);

static _Unwind_Reason_Code trace_frame(struct _Unwind_Context *ctx, void *arg)
{
	struct trace *t = arg;
	int before_insn = 0;
	uintptr_t pc = _Unwind_GetIPInfo(ctx, &before_insn);

	if (t->skip) {
		t->skip--;
		return _URC_NO_REASON;
	}
	if (!pc)
		return _URC_END_OF_STACK;
	if (t->frames == DUMP_FRAMES_MAX) {
		xf__text_printf(t->o, "    ...\n");
		return _URC_END_OF_STACK;
	}
	xf__text_printf(t->o, "    #%-2u ", t->frames++);
	xf__text_address(t->o, pc, before_insn);
	return _URC_NO_REASON;
}

/* The caller's own backtrace, from the caller of xf_dump. */
static __attribute__((noinline)) void trace_self(struct xf__text *o)
{
	struct trace t = {o, 0, 2}; /* this function, xf_dump */

	_Unwind_Backtrace(trace_frame, &t);
}

static bool is_current(const struct xf_fiber *f, unsigned *worker)
{
	for (unsigned i = 0; i < xf__rt.nr_workers; i++)
		if (__atomic_load_n(&xf__rt.workers[i].current, __ATOMIC_ACQUIRE) == f) {
			*worker = i;
			return true;
		}
	return false;
}

/* Waits a little for a fiber that is still switching out on some worker to
 * get off its CPU: its frame is complete, but wait for the switch to say
 * so.  Whether it did. */
static bool settles_off_cpu(const struct xf_fiber *f)
{
	for (unsigned i = 0; i < 100000; i++) {
		if (atomic_load_explicit(&f->on_cpu, memory_order_acquire) != XF_ON_CPU)
			return true;
		if (i > 1000)
			sched_yield(); /* its worker's thread may be descheduled */
		__builtin_ia32_pause();
	}
	return false;
}

/* Whether f's saved stack pointer lies in its own stack: a spawn sets the
 * stack, then the stack pointer, then the magic (fiber.c), but a structure
 * freed and reused while the dump looks may show any mix. */
static bool switch_frame_valid(const struct xf_fiber *f)
{
	const char *sp = f->sp, *base = f->stack.base;

	if (f->flags & XF_FIBER_F_FIRST)
		return sp != NULL; /* on its thread's own stack */
	return base && sp >= base && sp + XF_CTX_SIZE <= base + f->stack.size;
}

/* The end of a fiber's entry: where it began, and an empty line. */
static void out_origin(struct xf__text *o, const struct xf_fiber *f)
{
	if (f->fn) {
		xf__text_printf(o, "    entry ");
		xf__text_address(o, (uintptr_t)f->fn, true);
	}
	if (f->spawn_site) {
		xf__text_printf(o, "    spawned at ");
		xf__text_address(o, (uintptr_t)f->spawn_site, false);
	}
	xf__text_printf(o, "\n");
}

static void dump_fiber(struct xf__text *o, struct xf_fiber *f, const struct xf_fiber *self)
{
	unsigned worker = 0;
	bool running = is_current(f, &worker);
	bool unwind = false;

	xf__text_printf(o, "fiber %lu", (unsigned long)f->id);
	if (f->name)
		xf__text_printf(o, " \"%s\"", f->name);
	xf__text_printf(o, " [");
	if (f == self) {
		xf__text_printf(o, "running on worker %u: the caller of xf_dump", worker);
	} else if (running) {
		xf__text_printf(o, "running on worker %u (thread %d)", worker,
				xf__rt.workers[worker].tid);
		/* Its thread waits in the kernel, in a futex the C library or
		 * libstdc++ waits on: running, for the worker is not free. */
		if (__atomic_load_n(&f->blocking, __ATOMIC_RELAXED) == XF_BLOCKING_AT_WAIT)
			xf__text_printf(o, ", in a pthread, C11 or C++ lock or wait");
	} else if (!settles_off_cpu(f)) {
		xf__text_printf(o, "switching out");
	} else if (!switch_frame_valid(f)) {
		/* A fiber being made by a spawn that is not done yet. */
		xf__text_printf(o, "starting");
	} else {
		unwind = true;
		uint64_t aside = __atomic_load_n(&f->line_since_ns, __ATOMIC_RELAXED);
		uint64_t now = aside ? xf__now_ns() : 0;

		if (f->preempted && aside)
			/* Woken fibers first, or batch work: it waits in the
			 * worker's line, not its ring (docs/preemption.md). */
			xf__text_printf(o, "preempted, stepped aside on worker %d %lu us ago",
					f->home,
					(unsigned long)(now > aside ? (now - aside) / 1000 : 0));
		else if (f->preempted)
			xf__text_printf(o, "preempted, runnable on worker %d", f->home);
		else if (atomic_load_explicit(&f->wait_state, memory_order_relaxed) ==
			     XF_WAIT_WAITING &&
			 (f->wait_kind == XF_WAIT_ON_SLEEP ||
			  f->wait_kind == XF_WAIT_ON_LIBC_SLEEP))
			xf__text_printf(o, "sleeping");
		else if (atomic_load_explicit(&f->wait_state, memory_order_relaxed) ==
			     XF_WAIT_WAITING &&
			 f->wait_kind != XF_WAIT_ON_NOTHING) {
			if (f->wait_kind == XF_WAIT_ON_IO || f->wait_kind == XF_WAIT_ON_IO_REQUEST)
				xf__text_printf(o, "blocked on %s fd %lu",
						xf__wait_kind_name(f->wait_kind),
						(unsigned long)(uintptr_t)f->wait_object);
			else if (f->wait_kind == XF_WAIT_ON_JOIN)
				xf__text_printf(
				    o, "blocked on join of fiber %lu",
				    (unsigned long)((const struct xf_fiber *)f->wait_object)->id);
			else if (f->wait_object)
				xf__text_printf(o, "blocked on %s %p",
						xf__wait_kind_name(f->wait_kind), f->wait_object);
			else
				xf__text_printf(o, "blocked on %s",
						xf__wait_kind_name(f->wait_kind));
		} else
			xf__text_printf(o, "runnable on worker %d", f->home);
	}
	xf__text_printf(o, "]");
	if (f->flags & XF_FIBER_F_PINNED)
		xf__text_printf(o, " pinned");
	if (__atomic_load_n(&f->batch, __ATOMIC_RELAXED))
		xf__text_printf(o, " batch"); /* xf_fiber_set_batch */
	xf__text_printf(o, ":\n");
	if (f == self)
		trace_self(o);
	else if (unwind) {
		struct trace t = {o, 0, 1}; /* xf__backtrace_switched */

		xf__backtrace_switched(f->sp, trace_frame, &t);
	} else {
		xf__text_printf(o, "    (no backtrace: it runs on another thread)\n");
	}
	out_origin(o, f);
}

/* Every live user fiber, in arena order. */
static void dump_fibers(struct xf__text *o, const struct xf_fiber *self)
{
	struct xf_fiber **chunks;
	size_t nr;
	unsigned live = 0;

	chunks = xf__fiber_arena_chunks(&nr);
	if (!chunks) {
		o->failed = true;
		return;
	}
	for (size_t c = 0; c < nr; c++)
		for (size_t i = 0; i < XF_ARENA_CHUNK; i++) {
			struct xf_fiber *f = &chunks[c][i];

			if (__atomic_load_n(&f->magic, __ATOMIC_ACQUIRE) != XF_FIBER_MAGIC ||
			    (f->flags & XF_FIBER_F_IDLE))
				continue;
			/* Finished, or on its way: its stack may be gone, and its
			 * joiner - which runs - may free it, name and all, while
			 * we look. */
			if (atomic_load_explicit(&f->state, memory_order_acquire) ==
				XF_FIBER_DONE ||
			    __atomic_load_n(&f->exiting, __ATOMIC_ACQUIRE)) {
				xf__text_printf(o, "fiber %lu [finished, not joined yet]\n\n",
						(unsigned long)f->id);
				continue;
			}
			live++;
			dump_fiber(o, f, self);
		}
	free(chunks);
	xf__text_printf(o, "xfiber: %u live fibers\n", live);
}

/* From a fiber, with xf_write: the reader of a pipe may be a fiber of the
 * same worker. */
static int write_all(int fd, const char *buf, size_t len, bool fiber)
{
	return xf__write_all(fd, buf, len, fiber ? xf_write : write);
}

/* fiber_write: through xf_write, which lets the worker run other fibers
 * while a pipe is full; xf_shutdown_timeout writes with write(2) instead,
 * for it has cancelled every descriptor wait by then (io/io.h). */
static int dump_to(int fd, bool fiber_write)
{
	struct xf_fiber *self = xf__self();
	struct xf__text o = {0};
	int err;

	if (fd < 0 || fcntl(fd, F_GETFD) < 0)
		return EBADF;
	if (self && xf__preempt_disabled_beyond(0))
		return xf__misuse_preempt_disabled("xf_dump");
	if (!xf__runtime_hold()) {
		xf__runtime_release();
		return write_all(fd, "xfiber: no runtime\n", 19, false);
	}
	/* One dump at a time, and the caller stays where it is meanwhile: a
	 * switch of its own would wait for its own dump. */
	pthread_mutex_lock(&dump_lock);
	if (self)
		xf__preempt_disable();
	xf__text_printf(&o, "xfiber: dump of pid %d, %u workers\n\n", (int)getpid(),
			xf__rt.nr_workers);
	xf__world_stop();
	dump_fibers(&o, self);
	xf__world_start();
	if (self)
		xf__preempt_enable();
	pthread_mutex_unlock(&dump_lock);
	xf__runtime_release();
	if (o.failed)
		xf__text_printf(&o, "xfiber: dump cut short: out of memory\n");
	err = o.buf ? write_all(fd, o.buf, o.len, fiber_write && self) : ENOMEM;
	free(o.buf);
	return err;
}

int xf_dump(int fd)
{
	return dump_to(fd, true);
}

int xf__dump_unwaited(int fd)
{
	return dump_to(fd, false);
}

/* --- the dump signal --- */

/* XFIBER_DUMP_SIGNAL names a signal (QUIT, SIGUSR1, 10, RTMIN+2 ...) whose
 * arrival dumps to standard error.  Its handler only writes a byte to a
 * pipe: a thread of ours reads it and dumps, outside any handler, where
 * malloc and the world stop are allowed. */
static struct {
	int pipe[2];
	pthread_t thread;
	bool running;
	_Atomic bool stopping; /* the thread's end: a full pipe may not take the byte */
} dump_signal = {.pipe = {-1, -1}};

static void dump_signal_handler(int sig)
{
	int saved = errno;
	char byte = 1;

	(void)sig;
	syscall(SYS_write, dump_signal.pipe[1], &byte, 1); /* full: a dump is due anyway */
	errno = saved;
}

static void *dump_signal_thread(void *arg)
{
	char bytes[512];

	(void)arg;
	for (;;) {
		/* Signals that came while a dump was written ask for one dump:
		 * a read takes them all. */
		long n = syscall(SYS_read, dump_signal.pipe[0], bytes, sizeof(bytes));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || atomic_load(&dump_signal.stopping))
			return NULL;
		xf_dump(STDERR_FILENO);
	}
}

static int signal_by_name(const char *s)
{
	char *end;
	long n;

	if (!strncasecmp(s, "SIG", 3))
		s += 3;
	for (int sig = 1; sig < SIGRTMIN; sig++) { /* the C library's names: "USR1" */
		const char *name = sigabbrev_np(sig);

		if (name && !strcasecmp(s, name))
			return sig;
	}
	if (!strncasecmp(s, "RTMIN+", 6) || !strncasecmp(s, "RTMIN", 6)) {
		n = s[5] ? strtol(s + 6, &end, 10) : 0;
		if ((s[5] && *end) || n < 0 || SIGRTMIN + n > SIGRTMAX)
			return -1;
		return SIGRTMIN + (int)n;
	}
	n = strtol(s, &end, 10);
	if (!*s || *end || n < 1 || n > SIGRTMAX)
		return -1;
	return (int)n;
}

/* Signals the dump may not take: the runtime's own, and those no handler
 * can catch. */
static const char *signal_refused(int sig)
{
	if (sig == SIGKILL || sig == SIGSTOP)
		return "it cannot be caught";
	if (sig == XF_PREEMPT_SIGNAL)
		return "the runtime preempts with it";
	if (sig == SIGSEGV || sig == SIGBUS)
		return "the runtime reports stack overflows with it";
	return NULL;
}

void xf__dump_signal_start(void)
{
	const char *env = getenv("XFIBER_DUMP_SIGNAL");
	const char *why;
	struct sigaction sa = {.sa_handler = dump_signal_handler, .sa_flags = SA_RESTART};
	sigset_t all, old;
	int sig;

	if (!env || !*env || dump_signal.running)
		return;
	sig = signal_by_name(env);
	why = sig < 0 ? "not a signal" : signal_refused(sig);
	if (why) {
		fprintf(stderr, "xfiber: XFIBER_DUMP_SIGNAL=%s: %s; no dump signal\n", env, why);
		return;
	}
	if (pipe2(dump_signal.pipe, O_CLOEXEC)) {
		fprintf(stderr, "xfiber: XFIBER_DUMP_SIGNAL: pipe: %s; no dump signal\n",
			strerror(errno));
		return;
	}
	fcntl(dump_signal.pipe[1], F_SETFL, O_NONBLOCK); /* the handler never blocks */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old); /* the thread takes no signal */
	dump_signal.running = !pthread_create(&dump_signal.thread, NULL, dump_signal_thread, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!dump_signal.running || sigaction(sig, &sa, NULL)) {
		fprintf(stderr,
			"xfiber: XFIBER_DUMP_SIGNAL=%s: cannot install it; no dump signal\n", env);
		xf__dump_signal_stop();
	}
}

/* Closes the pipe; the handler stays, and a late signal writes to -1. */
static void dump_signal_close(void)
{
	for (int i = 0; i < 2; i++) {
		int fd = dump_signal.pipe[i];

		dump_signal.pipe[i] = -1; /* first: the handler may run meanwhile */
		if (fd >= 0)
			close(fd);
	}
}

void xf__dump_signal_stop(void)
{
	char stop = 0;

	if (dump_signal.running) {
		atomic_store(&dump_signal.stopping, true);
		/* Wakes the thread; a full pipe wakes it anyway, and the flag
		 * ends it after the dump under way. */
		while (write(dump_signal.pipe[1], &stop, 1) < 0 && errno == EINTR)
			;
		pthread_join(dump_signal.thread, NULL);
		dump_signal.running = false;
		atomic_store(&dump_signal.stopping, false);
	}
	dump_signal_close();
}

void xf__dump_signal_fork_child(void)
{
	/* The parent's thread is not here, and its pipe is the parent's:
	 * a byte from here would make the parent dump, or stop. */
	dump_signal.running = false;
	dump_signal_close();
}
