/*
 * sched.h - the runtime's private core: fibers, workers, run queues.
 *
 * Files under src/sched/, src/sync/, src/preempt/, src/io/ and
 * src/runtime/ (and any *_nofp.c) are built -mgeneral-regs-only
 * (src/CMakeLists.txt): the scheduler and the switch path never touch a
 * vector register, so they can later run at any point a fiber is stopped,
 * and they never put extended state into use behind a fiber's back.
 *
 * Ownership, in one place:
 *  - A fiber runs on at most one worker at a time.  `on_cpu` is XF_ON_CPU
 *    from the moment a worker picks it until the switch away from it has
 *    completed (the switch sets it on the next context, to where the fiber
 *    will resume: enum xf__on_cpu).  Whoever resumes a fiber first waits
 *    for on_cpu != XF_ON_CPU: a fiber can be woken - and picked by another
 *    worker - while it is still switching out.
 *  - A worker's local run queue belongs to that worker alone: no lock, no
 *    atomics.  Other threads hand it fibers through its `inbox` (a lock-free
 *    multi-producer stack), and an idle worker asks a busy one for work by
 *    setting the victim's `steal_request`; the victim hands over half its
 *    queue at its next scheduling point ("work requesting").  So the hot
 *    yield path is a few plain loads and stores.
 *  - Wait queues (xf__waitq, in every sync object) and the timer heaps are
 *    guarded by spinlocks, held for a handful of instructions.
 */
#ifndef XF_SCHED_SCHED_H
#define XF_SCHED_SCHED_H

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/compiler.h"
#include "preempt/preempt.h"
#include "runtime/hooks.h"
#include "xfiber.h"

/* Internal symbols: direct, not GOT-indirect, access from within the library. */
#pragma GCC visibility push(hidden)

struct xf__worker;
struct xf__ring; /* io/ring.c */

enum xf__fiber_state {
	XF_FIBER_ALIVE, /* running, queued or waiting */
	XF_FIBER_DONE,	/* finished; result valid; stack released */
};

/* What the scheduler does with the fiber that switched away, once the
 * switch is complete.  It travels through the switch in the low bits of
 * that fiber's pointer. */
enum xf__prev_action {
	XF_PREV_NONE,	 /* nothing: an idle context, or already handled */
	XF_PREV_REQUEUE, /* it yielded: back to the tail of the local queue */
	XF_PREV_BLOCK,	 /* it waits: whoever wakes it requeues it */
	XF_PREV_EXIT,	 /* it finished: release its stack, wake its joiner */
};

/* Results of a wait, in xf_fiber.wait_state. */
enum xf__wait_state {
	XF_WAIT_NONE,
	XF_WAIT_WAITING,
	XF_WAIT_WOKEN,
	XF_WAIT_TIMEDOUT,
	XF_WAIT_CLOSED, /* the channel was closed under a waiter */
	XF_WAIT_CANCELED, /* xf_cancel ended the wait (cancel.c) */
};

#define XF_FIBER_MAGIC 0x78666962u /* "xfib" */
#define XF_FIBER_FREED 0xdeadf1bu

struct xf__stack {
	void *base;   /* lowest usable byte; the guard page sits below */
	size_t size;  /* usable bytes */
	void *region; /* the slab this stack came from, for unmapping */
	unsigned valgrind_id; /* a stack of its own mapping: its registration */
};

/* Valgrind must be told where stacks are, or it takes a switch for a frame
 * of megabytes (sched/stack.c).  The client requests cost a few
 * instructions, and nothing at all where valgrind.h is absent. */
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define XF_VALGRIND_STACK_REGISTER(lo, hi) VALGRIND_STACK_REGISTER(lo, hi)
#define XF_VALGRIND_STACK_DEREGISTER(id)   VALGRIND_STACK_DEREGISTER(id)
#else
#define XF_VALGRIND_STACK_REGISTER(lo, hi) 0u
#define XF_VALGRIND_STACK_DEREGISTER(id)   ((void)(id))
#endif

#define XF_STACK_CACHE 64	   /* stacks a worker keeps for reuse */
#define XF_STACK_BATCH (XF_STACK_CACHE / 2) /* moved between a cache and the pool at once */
#define XF_FIBER_CACHE 256	   /* fiber structures a worker keeps */
#define XF_FIBER_BATCH (XF_FIBER_CACHE / 2)
#define XF_SCAVENGE_PERIOD_NS 1000000000ull /* pooled stacks unused for 1-2 of these give
					     * their pages back (stack.c) */
#define XF_GUARD_SIZE  (64 * 1024) /* below each stack; costs address space only */

struct xf__timer {
	uint64_t deadline_ns;	 /* CLOCK_MONOTONIC */
	struct xf__worker *heap; /* the worker whose heap holds it, or NULL */
	unsigned index;		 /* position in that heap */
};

/* The Itanium C++ ABI's __cxa_eh_globals: the exceptions a context is
 * handling (sched/cxx.c). */
struct xf__cxa_eh_globals {
	void *caught_exceptions; /* the stack of caught exceptions, innermost first */
	unsigned int uncaught_exceptions;
};

struct xf_fiber {
	uint32_t magic;	    /* XF_FIBER_MAGIC while the handle is valid */
	uint32_t flags;	    /* XF_FIBER_F_* */
	void *sp;	    /* saved stack pointer while not running */
	union {
		_Atomic int on_cpu; /* enum xf__on_cpu */
		/* A plain thread's stand-in (XF_FIBER_F_THREAD, thread.c) never
		 * switches: the word says it was woken, and is its futex. */
		_Atomic int thread_woken;
	};
	_Atomic uint8_t state;	/* enum xf__fiber_state */
	/* What it blocks on, while it does (xf__wait_block): an enum
	 * xf__wait_kind - in this line, which a block writes anyway - and
	 * wait_object. */
	uint8_t wait_kind;
	/* The structure's generation (XF_GEN_MASK), bumped each time it is
	 * freed: the API's handles carry it (xf__handle), so a handle kept
	 * past its fiber's end no longer matches once a new fiber reuses the
	 * structure.  And XF_CANCELLED, set by xf_cancel for good (cancel.c):
	 * in one word, so that a cancel cannot land on a fiber that reused
	 * the structure.  Kept across the zeroing of a spawn; first line, as
	 * every cancellable call reads it. */
	_Atomic uint16_t gen_cancel;
	int saved_errno;
	/* xf__rt.fork_gen when it was made: in a forked child, the parent's
	 * other fibers are gone, and nothing may wake them (xf__wait_claim). */
	uint32_t fork_gen;
	uint64_t id;

	struct xf_fiber *run_next;   /* run queue ring link (runq.h), free lists */
	struct xf_fiber *inbox_next; /* inbox link: apart, as a fiber may be pushed
				      * there while still in its ring */
	struct xf_fiber *line_next;  /* its worker's line (schedule.c) */

	/* Waiting: one wait at a time, so the bookkeeping lives here. */
	struct xf_fiber *wait_next, *wait_prev; /* xf__waitq links */
	xf__waitq *wait_queue;			/* the queue it is linked on, or NULL */
	_Atomic int wait_state;			/* enum xf__wait_state */
	bool wait_timed;			/* its wait on a waitq has a timeout */
	bool preempted;	  /* switched out by a preemption signal: state in its frame */
	uint8_t blocking; /* enum xf__blocking: inside a blocking C library call */
	/* Counted in its worker's nr_fixed: in the ring and unable to move
	 * (pinned, staying, or preempted; runq.h). */
	bool counted_fixed;
	bool batch; /* xf_fiber_set_batch: steps aside at a preemption (schedule.c) */
	/* Queued by a wake-up or its spawn, and not yielded since: work a
	 * preempted fiber steps aside for (schedule.c). */
	bool woken;
	/* Preempted since its last wake-up: it ran a whole slice, and does not
	 * go first at its next wake-up (schedule.c). */
	bool ran_long;
	/* xf_mutexes and pthread mutexes it holds (sync/mutex.c,
	 * sync/pthread_mutex.c): it does not step aside with one, which would
	 * keep their waiters waiting too. */
	uint16_t mutexes_held;
	/* When it stepped aside into its worker's line; 0 out of the line
	 * (schedule.c; xf_dump reads it from other threads: relaxed). */
	uint64_t line_since_ns;
	void *wait_data; /* e.g. the message a channel waiter moves */
	struct xf__timer timer;

	const void *wait_object; /* the mutex, channel, fiber, descriptor number ... */

	/* Life and death. */
	void *arg;
	void *result;
	_Atomic(struct xf_fiber *) joiner; /* the fiber blocked in xf_join, if any */
	_Atomic int detach_state;	   /* XF_DETACH_* */
	int home; /* pinned fibers: the worker they run on */
	struct xf__stack stack;

	void **specific; /* fiber-local values, XF_KEYS_MAX of them, allocated lazily */
	uint32_t preempt_signals; /* the runtime's signals that reached it (sleep.c) */
	/* Handlers of the preemption signal running on its stack, nested: an
	 * overflow with many is a flood's (sched/stack.c). */
	uint32_t handler_nesting;
	uint32_t polls;		  /* rounds of its current wait as a fiber, */
	uint64_t poll_last_ns;	  /* and when the last one ended (sync/pthread.c) */
	void (*once_init)(void);  /* the routine of its pthread_once call (sync/pthread.c) */
	/* std::call_once's two pointers as its pthread_once call found them on
	 * its caller's thread, for the thread the routine runs on (cxx.c). */
	void *once_passed[2];
	/* Locks its thread owns that it holds (sync/pthread.c), malloc'd by the
	 * first such lock: few fibers ever hold one. */
	uint16_t owned_nr, owned_cap;
	bool exiting; /* it called its exit: its stack goes at the next switch */
	/* xf_cancel_disable's nesting: while non-zero a cancel only marks the
	 * fiber (cancel.c).  Written by the fiber itself, never while it waits:
	 * a canceller that sees it WAITING sees the count it waits with. */
	uint8_t cancel_disabled;
	const void **owned;

	/* The C++ runtime's state, per fiber (sched/cxx.c). */
	struct xf__cxa_eh_globals eh;
	void *once_kept[2]; /* std::call_once's two pointers, kept over a preemption */

	/* Sanitizer bookkeeping for stack switches. */
	void *asan_fake_stack;
	void *tsan_fiber;

	/* For debuggers and dumps: its name (XF_NAME_MAX bytes, malloc'd when
	 * first named, kept until the fiber is freed, so that a reader's
	 * pointer stays valid; NULL: none), and where xf_spawn was called. */
	char *name;
	const void *spawn_site;
	void *(*fn)(void *); /* its entry: read once, at its start */
	/* The lock of the wait queue it waits on (xf__waitq_wait), for a
	 * canceller, which must claim such a waiter under it (cancel.c). */
	_Atomic uint32_t *wait_lock;
} __attribute__((aligned(64))); /* whole cache lines: neighbours in the arena run on
				  * other workers, and a shared line would bounce between them */

/* What a blocked fiber waits for, for debuggers and dumps (sched/debug.c
 * names them). */
enum xf__wait_kind {
	XF_WAIT_ON_NOTHING,
	XF_WAIT_ON_MUTEX,
	XF_WAIT_ON_COND,
	XF_WAIT_ON_SEM,
	XF_WAIT_ON_CHAN_SEND,
	XF_WAIT_ON_CHAN_RECV,
	XF_WAIT_ON_JOIN, /* the object: the fiber joined */
	XF_WAIT_ON_SLEEP,
	XF_WAIT_ON_IO,		  /* the object: the descriptor's number, not an address */
	XF_WAIT_ON_POLL,	  /* xf_poll over several descriptors */
	XF_WAIT_ON_BLOCKING_CALL, /* a call run by the blocking pool (io/blocking.c) */
	XF_WAIT_ON_LOCK,	  /* a pthread or C++ lock, between polls (sync/pthread.c) */
	XF_WAIT_ON_SHUTDOWN,	  /* xf_shutdown, for the other fibers */
	XF_WAIT_ON_SELECT,	  /* xf_select over several channels */
	XF_WAIT_ON_WG,		  /* a wait group */
	XF_WAIT_ON_LIBC_SLEEP,	  /* the C library's sleep, nanosleep ... (sched/sleep.c) */
	XF_WAIT_ON_IO_REQUEST,	  /* an io_uring request (io/ring.c); the object as for IO */
	XF_WAIT_KINDS
};

/* Whether a fiber runs, and if not, where its switch frame resumes
 * (arch/switch_x86_64_sysv_elf_gas.S).  A new fiber's first frame resumes
 * in C, so a zeroed fiber is XF_OFF_CPU. */
enum xf__on_cpu {
	XF_OFF_CPU,	    /* in the C scheduler, inside its critical section */
	XF_ON_CPU,	    /* running, or still switching out */
	XF_OFF_CPU_YIELDED, /* in the caller of its xf_yield (the fast path) */
};

/* What a fiber inside a blocking call of the C library or libstdc++ holds,
 * which the preemption handler trusts where the call's code would
 * otherwise be unsafe (sync/pthread.c, preempt/signal.c). */
enum xf__blocking {
	XF_BLOCKING_NONE,
	XF_BLOCKING_AT_WAIT, /* no lock while it waits in the kernel: switchable there */
	XF_BLOCKING_SPIN,    /* no lock at all (a spin lock's loop): switchable anywhere */
};

#define XF_FIBER_F_PINNED 0x1
#define XF_FIBER_F_IDLE	  0x2 /* a worker's scheduler context, not a user fiber */
#define XF_FIBER_F_FIRST  0x4 /* the fiber xf_init() turned the caller into */
#define XF_FIBER_F_STAY	  0x8 /* holds a lock its thread owns (a recursive or error-
			       * checking mutex, a write lock): no migration until
			       * released (sync/pthread.c) */
#define XF_FIBER_F_THREAD 0x10 /* a plain thread's stand-in in waits (thread.c) */
#define XF_FIBER_F_SELECT 0x20 /* one case of an xf_select, queued for the fiber in its
				* wait_object (sync/chan.c) */

/* Where every fiber structure lives, in chunks of XF_ARENA_CHUNK that stay
 * until the runtime's memory is released (fiber.c): a debugger or a dump
 * finds every fiber there, by its magic (debug.c). */
#define XF_ARENA_CHUNK 64
struct xf__fiber_arena {
	pthread_mutex_t lock;
	struct xf_fiber **chunks;
	size_t nr, cap;
	struct xf_fiber *free_list; /* fibers freed outside any worker */
};
extern struct xf__fiber_arena xf__fiber_arena;

/* A copy of the arena's chunk list, to walk without its lock (chunks are
 * never freed while the runtime's memory is held); free() it.  NULL when
 * out of memory (fiber.c). */
struct xf_fiber **xf__fiber_arena_chunks(size_t *nr);

/* A fiber's handle as the API gives it out: its address with its
 * structure's generation in the top 16 bits, which x86-64 user addresses
 * leave clear.  xf__handle_fiber() turns one back, or returns NULL for a
 * handle whose fiber is gone: freed (the magic says so), or freed and its
 * structure reused (the generation differs), which a bare address could
 * not tell from the new fiber. */
#define XF_GEN_MASK	    0x7fffu
#define XF_CANCELLED	    0x8000u
#define XF_HANDLE_GEN_SHIFT 48
#define XF_HANDLE_ADDR_MASK ((UINT64_C(1) << XF_HANDLE_GEN_SHIFT) - 1)

static inline unsigned xf__fiber_gen(const struct xf_fiber *f)
{
	return atomic_load_explicit(&f->gen_cancel, memory_order_relaxed) & XF_GEN_MASK;
}

static inline xf_fiber *xf__handle(const struct xf_fiber *f)
{
	return f ? (xf_fiber *)((uintptr_t)f | (uintptr_t)xf__fiber_gen(f) << XF_HANDLE_GEN_SHIFT)
		 : NULL;
}

static inline unsigned xf__handle_gen(const xf_fiber *h)
{
	return (unsigned)((uintptr_t)h >> XF_HANDLE_GEN_SHIFT) & XF_GEN_MASK;
}

static inline struct xf_fiber *xf__handle_fiber(const xf_fiber *h)
{
	struct xf_fiber *f = (struct xf_fiber *)((uintptr_t)h & XF_HANDLE_ADDR_MASK);

	if (!f || __atomic_load_n(&f->magic, __ATOMIC_ACQUIRE) != XF_FIBER_MAGIC ||
	    xf__fiber_gen(f) != xf__handle_gen(h))
		return NULL;
	return f;
}

/* Whether f must run on its home worker: pinned, or holding a lock that
 * belongs to that worker's thread. */
static inline bool xf__fiber_stays(const struct xf_fiber *f)
{
	return f->flags & (XF_FIBER_F_PINNED | XF_FIBER_F_STAY);
}

/* Whether f holds an xf_mutex or a lock of its thread: long work that does
 * not step aside, or its lock's waiters would wait with it (schedule.c). */
static inline bool xf__fiber_holds_lock(const struct xf_fiber *f)
{
	return f->mutexes_held || (f->flags & XF_FIBER_F_STAY);
}

enum {
	XF_DETACH_JOINABLE,
	XF_DETACH_DETACHED,
	XF_DETACH_JOINING,
};

/* A worker's run queue: a ring of fibers linked through run_next, the
 * running one included (sched/runq.h). */
struct xf__runq {
	struct xf_fiber *head, *tail; /* the waiting fibers, first and last */
	unsigned len;		      /* how many wait */
	bool running_linked;	      /* w->current is linked between tail and head */
};

struct xf__worker {
	/* Hot, owner-only. */
	struct xf_fiber *current;
	struct xf__runq runq;
	struct xf_fiber *idle; /* this worker's scheduler context */
	int *errno_ptr;	       /* this thread's errno */
	unsigned id;
	uint32_t sched_ticks; /* scheduling points passed; paces timer polls */
	/* Between its look at xf__world_stopped and the switch's claim of the
	 * next fiber (next->on_cpu = XF_ON_CPU): a dump waits for it to clear
	 * (debug.c).  Written by the owner only, without a fence. */
	_Atomic uint8_t in_switch;
	/* Voluntary switches until the next look at XINUSE for tiles to
	 * release, where AMX is granted: XGETBV(1) costs 4-14 ns, and a yield
	 * ~3-7 (schedule.c's release_dead_tiles, and xf_yield's assembly). */
	uint8_t tiles_countdown;
	/* Fibers have stepped aside (aside_head, batch_head below): every
	 * scheduling decision looks, in this line. */
	bool line_waiting;

	/* Shared with other threads. */
	_Atomic(struct xf_fiber *) inbox __attribute__((aligned(64)));
	_Atomic unsigned steal_request; /* 1 + id of an idle worker asking for work */
	/* Right after steal_request: xf_yield's fast path tests both with
	 * one load (arch/layout.h).  XF_DUE_* bits the ticker sets for the
	 * worker's next scheduling point, which clears them (runq.h): the
	 * earliest timer is due, or the poller has events this busy worker
	 * should take. */
	_Atomic unsigned due;
	_Atomic unsigned timers_nr; /* timers in the heap; written under timer_lock */
	_Atomic uint64_t timers_first_ns; /* the heap's earliest deadline, 0: none; likewise */
	_Atomic int steal_pending;  /* this worker asked someone and awaits the answer */
	_Atomic unsigned nr_queued; /* runq.len, published for thieves */
	_Atomic unsigned nr_fixed;  /* fibers in the ring, running one included, that may
				     * not move (runq.h): thieves count the others */
	_Atomic uint32_t ticks_seen; /* ticks its preemption handler entered (signal.c) */
	_Atomic uint32_t park_seq;  /* futex word; bumped by every unpark */
	_Atomic int parked;

	/* Timers: a min-heap by deadline, guarded by timer_lock. */
	_Atomic uint32_t timer_lock __attribute__((aligned(64)));
	unsigned timers_cap;
	struct xf_fiber **timers;

	/* Fibers that stepped aside, oldest first, linked through line_next:
	 * batch work, and the others (schedule.c); owner-only.  Out of every
	 * ring: preempted, they resume only here. */
	struct xf_fiber *batch_head, *batch_tail;
	struct xf_fiber *aside_head, *aside_tail;

	/* Its io_uring, with the io_uring engine (io/ring.c), or NULL;
	 * owner-only but for a kick and the ticker's look at completions. */
	struct xf__ring *ring;

	/* Stack and fiber caches and spawn counts, owner-only. */
	struct xf__stack stack_cache[XF_STACK_CACHE];
	unsigned stack_cache_nr;
	struct xf_fiber *fiber_cache;
	unsigned fiber_cache_nr;
	uint64_t next_id, id_limit; /* fiber ids it hands out: a block of xf__rt.next_id's */
	/* Fibers spawned and finished here: written by the owner only, summed
	 * by xf__live_fibers(), so that no spawn or exit writes a shared line. */
	_Atomic uint64_t spawned, finished;

	pthread_t thread;
	pid_t tid;
	void *altstack; /* ours, for the stack-overflow report, or NULL */

	/* Counters: written by the owner only, read relaxed by xf_stats_get. */
	xf_worker_stats stats __attribute__((aligned(64)));
	/* When the fiber that ended the worker's idling started, for the
	 * ticker to time its slice from there (ticker.c): the TSC at the last
	 * switch out of the idle loop, and the value of stats.switches that
	 * switch made; a count past switch_seq says another came since. */
	_Atomic uint64_t switch_tsc, switch_seq;

	/* The ticker's view, written by the ticker only. */
	uint64_t tick_switches; /* stats.switches when last looked at */
	uint64_t tick_since_ns; /* when that count last changed */
	uint64_t tick_deferred; /* stats.preemptions_deferred then */
	bool stall_reported;	/* since then (preempt/stall.c) */
	/* Since then, a due timer ended the fiber's slice early: it stays ended
	 * after the handler ran the timer, while its tick is deferred
	 * (preempt/ticker.c). */
	bool tick_ended_early;
	uint32_t ticks_sent;	/* ticks sent it, against ticks_seen (ticker.c) */
	uint64_t tick_sent_ns;	/* when the last one went */

	/* This thread's std::call_once pointers, or NULL (sched/cxx.c). */
	void **once_callable, **once_call;
	stack_t old_altstack; /* the thread's before ours: back at removal */
	uint32_t
	    coop_io_points; /* scheduling points, pacing polls without a ticker (io/poller.c) */
} __attribute__((aligned(64)));

/* The whole runtime. */
struct xf__runtime {
	_Atomic int running;
	/* xf_shutdown has begun: plain threads may spawn no more (under the
	 * lifecycle lock, runtime/runtime.c; fibers may, as the shutdown waits for
	 * them). */
	bool closing;
	unsigned nr_workers;
	size_t stack_size;
	size_t frame_reserve; /* room for one kernel signal frame atop each stack */
	unsigned slice_us;
	uint64_t spin_ns;
	struct xf__worker *workers;
	struct xf_fiber *first; /* the fiber of the thread that called xf_init */
	/* What the first fiber's end does, as pthread_exit in main: set by
	 * xf_init (runtime/runtime.c), which owns shutdown; never returns. */
	__attribute__((noreturn)) void (*first_fiber_exit)(void);
	/* Written by workers as they park and spin, and once per XF_ID_BLOCK
	 * spawns: a line of their own, away from what is only read. */
	_Atomic uint64_t next_id __attribute__((aligned(64)));
	_Atomic unsigned nr_parked;
	_Atomic unsigned nr_spinning;
	_Atomic int stopping;
	_Atomic uint32_t shutdown_waiting;
	_Atomic uint64_t spawned_by_threads; /* fibers plain threads spawned (fiber.c) */
	_Atomic unsigned next_remote;	      /* where a plain thread's spawn looks first */
	/* Read on hot paths, written at start, fork and shutdown only. */
	bool amx_possible __attribute__((aligned(64))); /* tiles may be in use: TILERELEASE
							 * at voluntary switches */
	bool preempt_enabled;  /* the ticker runs */
	bool misuse_returns;   /* a misuse returns its error rather than aborting */
	bool round_robin;      /* xf_config.round_robin: preempted fibers never step aside */
	uint64_t base_sigmask; /* the workers' signal mask (first 64 signals) */
	uint32_t fork_gen;     /* forks from a fiber so far (runtime/runtime.c's fork_child) */
	pid_t pid;	       /* getpid() at xf_init: who the ticker's signals come from */
	uid_t uid;	       /* getuid() then: their sender's uid, not asked per tick */
	void *workers_alloc;   /* what `workers` points into (after a fork, not its start) */
	bool ticker_pending;   /* a forked child starts its ticker at its first spawn */
	xf_worker_stats ticker_stats; /* the ticker's polls (io/poller.c) */
};

/* Nonzero while a dump reads switched-out fibers' stacks: no switch may
 * resume one (debug.c).  A futex word. */
extern _Atomic uint32_t xf__world_stopped;

/* Waits, out of line, until the dump that stopped the world is over; w's
 * in_switch is clear meanwhile and set again on return. */
void xf__world_wait(struct xf__worker *w);

/* Stops the world for a reader of switched-out fibers (the dump): no
 * switch resumes a fiber until xf__world_start (debug.c has the protocol). */
void xf__world_stop(void);
void xf__world_start(void);

/* The name debuggers know an XF_WAIT_ON_* kind by (debug.c). */
const char *xf__wait_kind_name(unsigned kind);

/* xf__worker.due */
#define XF_DUE_TIMERS 1u
#define XF_DUE_IO     2u
/* Its ring has requests to submit or collect, or a sweep to make (io/ring.c). */
#define XF_DUE_RING 4u
/* Fibers wait in its line (schedule.c): xf_yield's assembly must go to C,
 * which lets them back when nothing else waits. */
#define XF_DUE_LINE 8u

/* How an idle worker sleeps (xf__worker.parked): the kicker wakes it so. */
enum { XF_AWAKE, XF_PARKED_FUTEX, XF_PARKED_POLLER, XF_PARKED_RING };

/* One counter increment: plain load, add, store - no lock prefix. */
#define XF_STAT_INC(w, field, n)                                                                   \
	__atomic_store_n(&(w)->stats.field, (w)->stats.field + (n), __ATOMIC_RELAXED)

extern struct xf__runtime xf__rt;

/* The runtime's start and stop lock (worker.c), taken by xf_init,
 * xf_shutdown and fork (runtime/), and held while something reads the
 * workers from outside (a spawn from a plain thread, xf_cancel_all, the
 * dump): hold returns whether the runtime runs; release either way. */
extern pthread_mutex_t xf__lifecycle;
void xf__lifecycle_lock(void);
void xf__lifecycle_unlock(void);
bool xf__runtime_hold(void);
void xf__runtime_release(void);

/* The worker the calling thread is, or NULL.  initial-exec TLS: one
 * %fs-relative load, found without a call in both the static and the shared
 * library.  Read through a volatile asm so the compiler can never reuse the
 * value across a switch, which may have moved the caller to another thread. */
extern __thread struct xf__worker *xf__tls_worker
    __attribute__((visibility("hidden"), tls_model("initial-exec")));

static inline __attribute__((always_inline)) struct xf__worker *xf__this_worker(void)
{
	struct xf__worker *w;

	__asm__ volatile("movq xf__tls_worker@gottpoff(%%rip), %0\n\t"
			 "movq %%fs:(%0), %0"
			 : "=r"(w));
	return w;
}

static inline __attribute__((always_inline)) struct xf_fiber *xf__current(void)
{
	struct xf__worker *w = xf__this_worker();

	return w ? w->current : NULL;
}

/* errno, for code that may have switched since it last touched it.  glibc
 * declares __errno_location() const, so the compiler may keep an address of
 * errno computed before a call that switched - and moved the fiber to
 * another thread, whose errno it then is no longer.  These go through the
 * worker's own pointer, read afresh (outside the runtime: errno). */
static inline __attribute__((always_inline)) void xf__errno_set(int e)
{
	struct xf__worker *w = xf__this_worker();

	if (w)
		*w->errno_ptr = e;
	else
		errno = e;
}

static inline __attribute__((always_inline)) int xf__errno_get(void)
{
	struct xf__worker *w = xf__this_worker();

	return w ? *w->errno_ptr : errno;
}

/* xf_self(), inline for the library's own hot paths (sync objects): the
 * calling fiber, or NULL outside fibers and in a worker's idle context. */
static inline struct xf_fiber *xf__self(void)
{
	struct xf_fiber *f = xf__current();

	return f && !(f->flags & XF_FIBER_F_IDLE) ? f : NULL;
}

/* The calling fiber if it may wait as a fiber - neither a worker's idle
 * context nor a section with preemption disabled (the runtime's own, or an
 * interposed C library call made from one) - else NULL: the caller then
 * does what a plain thread would (blocks its thread, or runs inline). */
static inline struct xf_fiber *xf__self_may_wait(void)
{
	struct xf_fiber *f = xf__self();

	return f && !(xf__preempt_word_get() & XF_PREEMPT_NESTING) ? f : NULL;
}

/* A plain thread (not a worker) waits on the runtime's objects through a
 * stand-in of its own: a fiber structure in thread-local storage, linked
 * on wait queues and claimed as a fiber is, and woken by a futex instead of
 * a run queue (thread.c).  Its address stays the thread's for life, so it
 * can own an xf_mutex too. */
struct xf_fiber *xf__thread_proxy(void);

/* Whoever calls, as a waiter: the calling fiber, a plain thread's stand-in,
 * or NULL for a worker's own context (its idle loop), which may not wait. */
static inline struct xf_fiber *xf__self_or_thread(void)
{
	struct xf__worker *w = xf__this_worker();

	if (!w)
		return xf__thread_proxy();
	return !(w->current->flags & XF_FIBER_F_IDLE) ? w->current : NULL;
}

/* xf__wait_block for a plain thread's stand-in: waits on its futex. */
int xf__thread_block(struct xf_fiber *self, uint64_t timeout_ns, _Atomic uint32_t *unlock);
/* xf__wake for a plain thread's stand-in. */
void xf__thread_wake(struct xf_fiber *f);

/* --- spinlocks (sync objects, timer heaps) ---
 * Held with preemption disabled, like the kernel's: a fiber preempted while
 * holding one would leave the others spinning for a whole slice. */
static inline void xf__spin_lock(_Atomic uint32_t *l)
{
	xf__preempt_disable();
	while (atomic_exchange_explicit(l, 1, memory_order_acquire)) {
		while (atomic_load_explicit(l, memory_order_relaxed))
			__builtin_ia32_pause();
	}
}

/* Releases the lock but stays non-preemptible: for the path into a switch. */
static inline void xf__spin_unlock_raw(_Atomic uint32_t *l)
{
	atomic_store_explicit(l, 0, memory_order_release);
}

static inline void xf__spin_unlock(_Atomic uint32_t *l)
{
	xf__spin_unlock_raw(l);
	xf__preempt_enable();
}

/* The child of a fork from fiber f keeps f's stack: it runs on it. */
void xf__stack_keep(const struct xf__stack *s);

/* --- clock --- */
uint64_t xf__now_ns(void);

/* --- scheduling (schedule.c) --- */

/* Switches the calling fiber away; `action` says what happens to it.  With
 * XF_PREV_BLOCK the caller must already be reachable by its waker.  The
 * caller has disabled preemption once (xf__preempt_disable or a spinlock). */
void xf__schedule(struct xf__worker *w, enum xf__prev_action action);
/* The preempted fiber f, running on w, lets the fibers waiting there that
 * go before it run first - any but batch work if f is batch work, else
 * those just woken; false (and no switch) if none waits (schedule.c). */
bool xf__step_aside(struct xf__worker *w, struct xf_fiber *f);

/* xf_yield() in C, for every case its assembly fast path leaves to it. */
void xf__yield_slow(void);

/* Blocking or yielding with preemption disabled by the caller (xfiber.h:
 * "do not block or yield with preemption disabled"): the switch would end
 * the caller's critical section behind its back.  Reports the call `what`,
 * then aborts (debug builds, or XFIBER_MISUSE=abort) or returns EDEADLK
 * (release builds, or XFIBER_MISUSE=return). */
int xf__misuse_preempt_disabled(const char *what);

/* Whether the caller disabled preemption, beyond the `own` levels the
 * runtime itself holds at this point (its spinlock, say). */
static inline bool xf__preempt_disabled_beyond(uint32_t own)
{
	return (xf__preempt_word_get() & XF_PREEMPT_NESTING) > own;
}

/* xf_sleep_ns, recorded as a wait on `kind` (a lock's poll sleeps as one,
 * sync/pthread.c). */
int xf__sleep_on(uint64_t ns, enum xf__wait_kind kind);

/* Makes a blocked fiber runnable: on the caller's worker when it is a
 * worker, else - or if the fiber stays on its CPU longer than a short wait
 * - on the fiber's home worker. */
void xf__wake(struct xf_fiber *f);

/* Blocks the calling fiber until xf__wait_wake() or the timeout (0 = none).
 * Returns the final enum xf__wait_state.  The caller has set wait_state to
 * XF_WAIT_WAITING and linked itself where wakers find it, under a lock
 * that `unlock` releases (may be NULL) after the timer is armed - and it
 * disabled preemption (once: a spinlock does) *before* it could be found:
 * a fiber preempted between being found and switching out would be queued
 * twice, by the preemption and by its waker.  Returns with preemption
 * enabled.  kind and object say what it waits on while it does, for
 * debuggers and dumps (sched/debug.c). */
int xf__wait_block(struct xf_fiber *self, uint64_t timeout_ns, _Atomic uint32_t *unlock,
		   enum xf__wait_kind kind, const void *object);

/* For a fiber that set XF_WAIT_WAITING and published itself but then found
 * it need not wait: withdraws, or, if a waker already claimed it, takes that
 * wake-up.  Called with preemption disabled, as xf__wait_block() is;
 * returns with it enabled.  Returns the final enum xf__wait_state. */
int xf__wait_cancel(struct xf_fiber *self);

/* The start of a wait that no lock guards (a join, a sleep, shutdown's
 * wait): preemption off, then XF_WAIT_WAITING, before anything publishes
 * the fiber to its waker (xf__wait_block's rule).  Ends in
 * xf__wait_block() or xf__wait_cancel(). */
static inline void xf__wait_prepare(struct xf_fiber *self)
{
	xf__preempt_disable();
	atomic_store_explicit(&self->wait_state, XF_WAIT_WAITING, memory_order_relaxed);
}

/* Claims a waiting fiber for waking with result `state`: true if the
 * caller won it (and must then xf__wake it), false if a timeout or another
 * waker got there first. */
/* A fiber of the parent in a forked child, waiting where the forking fiber
 * can reach it (a semaphore, a descriptor): it does not exist here, like
 * the parent's other threads, and no waker may claim it. */
static inline bool xf__fiber_forked_away(const struct xf_fiber *f)
{
	return unlikely(f->fork_gen != xf__rt.fork_gen);
}

static inline bool xf__wait_claim(struct xf_fiber *f, int state)
{
	int expected = XF_WAIT_WAITING;

	if (xf__fiber_forked_away(f))
		return false; /* as if its timer had claimed it */
	return atomic_compare_exchange_strong_explicit(&f->wait_state, &expected, state,
						       memory_order_acq_rel, memory_order_acquire);
}

/* --- cancellation (cancel.c) ---
 * xf_cancel sets XF_CANCELLED for good and ends the fiber's wait if it is
 * in a cancellable one; every later cancellable call returns ECANCELED at
 * its start.  Cancellers count themselves in xf__cancellers while they
 * look at a fiber's wait, and a fiber leaving a wait queue waits for that
 * count to drop: the queue's object may be freed once its waiter returns
 * (xf__waitq_wait). */
extern _Atomic unsigned xf__cancellers;

/* Whether a wait of this kind ends at xf_cancel: not the mutex's (as
 * pthread_mutex_lock's does not), a pthread lock's poll, shutdown's, or
 * the C library's sleeps (a loop around nanosleep would spin). */
static inline bool xf__wait_kind_cancellable(unsigned kind)
{
	return kind != XF_WAIT_ON_NOTHING && kind != XF_WAIT_ON_MUTEX && kind != XF_WAIT_ON_LOCK &&
	       kind != XF_WAIT_ON_SHUTDOWN && kind != XF_WAIT_ON_LIBC_SLEEP;
}

/* Whether f has been cancelled.  One load of its first line. */
static inline bool xf__cancelled(const struct xf_fiber *f)
{
	return f && (atomic_load_explicit(&f->gen_cancel, memory_order_relaxed) & XF_CANCELLED);
}

/* Whether f's cancellable calls end now: cancelled, and not inside
 * xf_cancel_disable (read only when cancelled: the common path loads one
 * word). */
static inline bool xf__cancel_pending(const struct xf_fiber *f)
{
	return unlikely(xf__cancelled(f)) &&
	       !__atomic_load_n(&f->cancel_disabled, __ATOMIC_RELAXED);
}

/* The calling fiber's cancellable call, at its start: ECANCELED if the
 * fiber was cancelled (and has not disabled it), else 0. */
static inline int xf__cancel_point(void)
{
	struct xf__worker *w = xf__this_worker();

	return w && xf__cancel_pending(w->current) ? ECANCELED : 0;
}

/* A fiber leaving a wait queue waits for the cancellers looking at waits
 * right now. */
void xf__cancel_wait_idle(void);

/* A full barrier on every running thread of the process (membarrier, or a
 * TLB shoot-down where it is missing): the slow side of an asymmetric
 * fence, whose fast side is a plain load or store (debug.c). */
void xf__heavy_barrier(void);
/* Readies it, cheaply while the process has one thread (xf_init). */
void xf__heavy_barrier_prepare(void);

/* Timers (timer.c). */
void xf__timer_arm(struct xf__worker *w, struct xf_fiber *f, uint64_t deadline_ns);
void xf__timer_cancel(struct xf_fiber *f);
void xf__timers_run(struct xf__worker *w);
uint64_t xf__timers_next_deadline(struct xf__worker *w);

/* Wait queues (waitq.c): the one primitive every blocking object of
 * sync/ and io/ waits on. */
void xf__waitq_push(xf__waitq *q, struct xf_fiber *f);
void xf__waitq_remove(xf__waitq *q, struct xf_fiber *f);
struct xf_fiber *xf__waitq_claim(xf__waitq *q, int state);
/* Claims every waiter of q (lock held), chaining them onto list, which it
 * returns; xf__wake_list() wakes such a list once the lock is dropped. */
struct xf_fiber *xf__waitq_claim_all(xf__waitq *q, int state, struct xf_fiber *list);
void xf__wake_list(struct xf_fiber *list);

static inline _Atomic uint32_t *xf__waitq_lock(xf__waitq *q)
{
	return (_Atomic uint32_t *)&q->lock;
}

/* Waits on q, guarded by `lock` (held by the caller, released here), until
 * claimed or timed out (timeout_ns 0 = never); unlinks itself after a
 * timeout.  Returns the enum xf__wait_state that ended the wait.  kind and
 * object say what it waits on, for debuggers (xf__wait_block). */
int xf__waitq_wait(xf__waitq *q, _Atomic uint32_t *lock, struct xf_fiber *self,
		   uint64_t timeout_ns, enum xf__wait_kind kind, const void *object);

/* Stacks (stack.c). */
int xf__stack_get(struct xf__worker *w, size_t size, struct xf__stack *out);
void xf__stack_put(struct xf__worker *w, struct xf__stack *s);
void xf__stacks_release(void); /* at shutdown: every stack of the runtime */
int xf__stacks_configure(const xf_config *cfg); /* guards: EINVAL for a bad XFIBER_STACK_GUARD */
void xf__stacks_scavenge(uint64_t now_ns); /* off the hot paths: ticker, idle workers */
void xf__stacks_stats(xf_stats *out);	   /* the stack counts of xf_stats */
uint64_t xf__fibers_made(void);		   /* fiber structures allocated so far */
int xf__overflow_handler_install(struct xf__worker *w);
void xf__overflow_handler_remove(struct xf__worker *w);

/* Fibers (fiber.c). */
struct xf_fiber *xf__fiber_alloc(struct xf__worker *w);
void xf__fiber_free(struct xf__worker *w, struct xf_fiber *f);
void xf__fiber_arena_release(void);
void xf__fiber_finish(struct xf_fiber *f); /* after its last switch: DONE, joiner */
unsigned long xf__live_fibers(void);	   /* not yet finished, the first included */
void xf__fls_destroy(struct xf_fiber *f);
_Noreturn void xf__fiber_main(struct xf_fiber *f, struct xf__worker *w, uintptr_t prev);
_Noreturn void xf__fiber_exit(struct xf_fiber *f, void *result);

/* The sleeps made from fibers that the runtime replaces (sleep.c;
 * common/interpose.h), resolved at xf_init. */
void xf__sleep_interpose_resolve(void);
/* Whether the EINTR a C library call returned came from the runtime's own
 * signal alone, given the calling fiber's preempt_signals and
 * xf__signal_app_count() before the call (sched/sleep.c). */
bool xf__eintr_was_ours(uint32_t ticks_before, uint64_t app_before);

/* The C++ runtime's per-thread state (cxx.c). */
void xf__cxx_check(void);
void xf__cxx_once_locate(struct xf__worker *w);
/* The std::call_once pointers of w's thread into pair, and back (cxx.c). */
void xf__cxx_once_get(struct xf__worker *w, void *pair[2]);
void xf__cxx_once_set(struct xf__worker *w, void *const pair[2]);

/* Workers (worker.c). */
void xf__worker_run(struct xf__worker *w);
void xf__spin_ns_set(unsigned spin_us);
_Noreturn void xf__idle_loop(struct xf__worker *w);
void xf__switch_from_idle(struct xf__worker *w, struct xf_fiber *next);
void xf__worker_kick(struct xf__worker *w); /* wake it if parked */
void xf__maybe_wake_idle(struct xf__worker *w);
/* Kicks one parked worker other than w, if any, to go looking for work. */
void xf__wake_idle_worker(const struct xf__worker *w);
/* Asks victim to hand thief half the difference of their queues, at its
 * next scheduling point.  False if either already has a request out. */
bool xf__steal_request(struct xf__worker *thief, struct xf__worker *victim);

#pragma GCC visibility pop

#endif
