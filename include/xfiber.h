/*
 * xfiber.h - preemptive M:N fibers for x86-64 Linux that keep every register.
 *
 * How to use it
 * -------------
 * Every function returns 0 on success or a positive errno value on failure
 * (EINVAL for a bad argument, ENOMEM, ENOTSUP for a CPU that lacks a feature,
 * ...); none of them sets errno.  Link with `pkg-config --cflags --libs xfiber`.
 *
 * Extended state (x87, SSE, AVX, AVX-512, AMX) is described by xf_xstate_info
 * and saved/restored by xf_xstate_save()/xf_xstate_restore() into a buffer
 * the caller provides:
 *
 *     size_t size = xf_xstate_size();
 *     void *buf = aligned_alloc(XF_XSTATE_ALIGN, size);
 *     if (xf_xstate_save(buf, size) == 0) {
 *             ... the calling thread's registers may now be clobbered ...
 *             xf_xstate_restore(buf, size);
 *     }
 *
 * The engine picks the fastest correct instruction once, when the library is
 * loaded; XFIBER_XSAVE=xsaveopt|xsavec|xsave|fxsave overrides the choice.  An
 * image must be restored by the same process that saved it.
 *
 * Fibers run on worker threads, M:N.  The thread that calls xf_init() becomes
 * worker 0 and its code goes on as the first fiber:
 *
 *     static void *hello(void *arg) { printf("hello from %s\n", (char *)arg); return arg; }
 *
 *     int main(void)
 *     {
 *             xf_fiber *f;
 *             void *result;
 *
 *             xf_init(NULL);                          // one worker per CPU
 *             xf_spawn(&f, hello, "a fiber", NULL);
 *             xf_join(f, &result);
 *             return xf_shutdown();                   // back to a plain thread
 *     }
 *
 * Blocking calls (xf_join, xf_sleep_ns, xf_mutex_lock, xf_cond_wait,
 * xf_sem_wait, xf_chan_send/recv) block the fiber, never the worker.
 * errno is saved and restored with each fiber.  __thread variables, pthread
 * keys and other per-thread libc state belong to the worker thread, not the
 * fiber: a fiber that moves to another worker sees that worker's copy, and
 * the compiler may keep a thread-local address in a register across a call
 * that switches.  Use fiber-local storage (xf_key_*) instead, or pin the
 * fiber (xf_attr.pinned) where code needs stable thread-local state.
 */
#ifndef XFIBER_H
#define XFIBER_H

#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

/* Declared here: <netdb.h> defines it only for POSIX or GNU compilation,
 * and a strict C11 one (gcc -std=c11) would otherwise meet it first inside
 * xf_getaddrinfo's parameter list. */
struct addrinfo;

#ifdef __cplusplus
extern "C" {
#endif

#define XF_API __attribute__((visibility("default")))

/* ---------------------------------------------------------------------------
 * Version
 */

/* "MAJOR.MINOR.PATCH", from the one place the version is kept (CMakeLists.txt). */
XF_API const char *xf_version(void);
/* The commit the library was built from (`git describe --dirty`), or "unknown". */
XF_API const char *xf_commit(void);

/* ---------------------------------------------------------------------------
 * Extended state: discovery
 */

/* XSAVE state-component numbers (Intel SDM vol. 1, ch. 13). */
enum {
	XF_XFEATURE_X87 = 0,
	XF_XFEATURE_SSE = 1,
	XF_XFEATURE_YMM = 2,	   /* upper halves of YMM0-15 */
	XF_XFEATURE_BNDREGS = 3,   /* MPX (obsolete) */
	XF_XFEATURE_BNDCSR = 4,	   /* MPX (obsolete) */
	XF_XFEATURE_OPMASK = 5,	   /* k0-7 */
	XF_XFEATURE_ZMM_HI256 = 6, /* upper 256 bits of ZMM0-15 */
	XF_XFEATURE_HI16_ZMM = 7,  /* ZMM16-31 */
	XF_XFEATURE_PKRU = 9,
	XF_XFEATURE_XTILECFG = 17,  /* AMX TILECFG */
	XF_XFEATURE_XTILEDATA = 18, /* AMX TMM0-7 */
	XF_XFEATURE_APX = 19,	    /* APX extended GPRs R16-R31 */
	XF_XFEATURE_MAX = 64,
};

#define XF_XFEATURE_MASK(bit) (UINT64_C(1) << (bit))
#define XF_XFEATURE_MASK_AVX512                                                                    \
	(XF_XFEATURE_MASK(XF_XFEATURE_OPMASK) | XF_XFEATURE_MASK(XF_XFEATURE_ZMM_HI256) |          \
	 XF_XFEATURE_MASK(XF_XFEATURE_HI16_ZMM))
#define XF_XFEATURE_MASK_AMX                                                                       \
	(XF_XFEATURE_MASK(XF_XFEATURE_XTILECFG) | XF_XFEATURE_MASK(XF_XFEATURE_XTILEDATA))

/* Every xf_xstate_save() buffer must be aligned to this many bytes. */
#define XF_XSTATE_ALIGN 64

/* One enabled state component, as CPUID leaf 0xD describes it. */
typedef struct xf_xstate_component {
	unsigned bit;		   /* component number, an XF_XFEATURE_* value */
	const char *name;	   /* e.g. "AVX-512 ZMM_Hi256" */
	uint32_t size;		   /* bytes in an XSAVE image */
	uint32_t offset;	   /* offset in the standard (non-compacted) format */
	uint32_t compacted_offset; /* offset in a compacted image holding all of XCR0 */
	bool align64;		   /* aligned to 64 bytes in the compacted format */
	bool xfd;		   /* can be armed by XFD (first use faults until permitted) */
} xf_xstate_component;

/* How the engine saves and restores.  XF_XSAVE_NONE means no choice was
 * possible (see xf_xstate_info.strategy_error). */
typedef enum xf_xsave_strategy {
	XF_XSAVE_NONE = 0,
	XF_XSAVE_XSAVEOPT,
	XF_XSAVE_XSAVEC,
	XF_XSAVE_XSAVE,
	XF_XSAVE_FXSAVE,
} xf_xsave_strategy;

typedef struct xf_xstate_info {
	uint64_t xcr0;		 /* enabled features, XGETBV(0) */
	uint64_t xinuse;	 /* XGETBV(1) now, or xcr0 where XGETBV1 is absent */
	uint32_t size_standard;	 /* bytes of a standard-format image of all of xcr0 */
	uint32_t size_compacted; /* bytes of a compacted image of all of xcr0 */
	bool has_xsave;		 /* CPUID.1:ECX.XSAVE and the OS enabled it (OSXSAVE) */
	bool has_xsaveopt;
	bool has_xsavec;
	bool has_xsaves; /* supervisor-only; reported, never used */
	bool has_xgetbv1;
	bool has_xfd;
	bool has_amx;		    /* CPU and OS support tiles (xcr0 has both AMX bits) */
	bool amx_permitted;	    /* this process may use tiles (ARCH_GET_XCOMP_PERM) */
	uint64_t xcomp_perm;	    /* ARCH_GET_XCOMP_PERM, or 0 where the kernel lacks it */
	unsigned long min_sigstksz; /* getauxval(AT_MINSIGSTKSZ): the kernel's signal frame */
	xf_xsave_strategy strategy; /* what xf_xstate_save() uses */
	const char *strategy_name;  /* "xsavec", ..., or "none" */
	const char *strategy_error; /* why strategy is XF_XSAVE_NONE, else NULL */
	uint32_t save_size;	    /* bytes xf_xstate_save() needs (xf_xstate_size()) */
	unsigned ncomponents;	    /* entries used in components[] */
	xf_xstate_component components[XF_XFEATURE_MAX];
} xf_xstate_info;

/* Fills *out with the machine's picture.  EINVAL if out is NULL. */
XF_API int xf_xstate_info_get(xf_xstate_info *out);

/* The name of a strategy ("xsaveopt", ...), or "none" for an unknown value. */
XF_API const char *xf_xsave_strategy_name(xf_xsave_strategy s);

/* Asks the kernel for AMX tile permission (ARCH_REQ_XCOMP_PERM, component 18)
 * for the whole process.  0 when granted (or already granted); ENOTSUP when the
 * CPU or kernel has no AMX; the kernel's errno (EPERM, ENOSPC, ...) when it
 * refuses, e.g. because sigaltstacks in use are too small for AMX frames. */
XF_API int xf_xstate_request_amx(void);

/* ---------------------------------------------------------------------------
 * Extended state: the save/restore engine
 *
 * These functions run on general registers only: nothing between their entry
 * and the XSAVE touches a vector register.  Rules the engine keeps:
 *  - components in their init state are not written (XSAVEC/XSAVEOPT), and
 *    the image's XSTATE_BV says which components it carries;
 *  - restore always asks for every enabled component (RFBM = XCR0), so a
 *    component absent from the image comes back in its init state;
 *  - with XSAVEOPT, a buffer must not be written by anything else between the
 *    xf_xstate_restore() that loaded it and the next xf_xstate_save() into it.
 */

/* Bytes a save buffer needs with the chosen strategy. */
XF_API size_t xf_xstate_size(void);

/* Saves the calling thread's extended state.  EINVAL if buf is NULL or not
 * XF_XSTATE_ALIGN-aligned, ERANGE if size < xf_xstate_size(), ENOTSUP if no
 * strategy could be chosen.  Nothing is written on error. */
XF_API int xf_xstate_save(void *buf, size_t size);

/* Restores state saved by xf_xstate_save() into the calling thread.  Errors as
 * for xf_xstate_save(), and EINVAL for an image whose header the CPU would
 * reject (it would otherwise fault). */
XF_API int xf_xstate_restore(const void *buf, size_t size);

/* XSTATE_BV of a saved image: which components it carries (0 on error). */
XF_API uint64_t xf_xstate_image_features(const void *buf);

/* XGETBV(1): the components not in their init state right now.  Where the CPU
 * lacks XGETBV1 this returns XCR0, the safe over-estimate.  A CPU may report
 * a component in use that is in init state (qemu's TCG reports them all). */
XF_API uint64_t xf_xstate_inuse(void);

/* Returning dead state to init, so kernel switches and signal frames skip it. */
XF_API void xf_xstate_release_tiles(void); /* TILERELEASE if tiles are in use */
XF_API void xf_xstate_vzeroupper(void);	   /* YMM/ZMM upper halves (bits 2, 6) */
/* Puts the components in mask into their init state with an XRSTOR whose
 * XSTATE_BV is zero; MXCSR and the x87 control word are kept.  mask may name
 * any enabled component but x87 and SSE (EINVAL); ENOTSUP without XSAVE.
 * Typical use:
 * XF_XFEATURE_MASK(XF_XFEATURE_OPMASK) | XF_XFEATURE_MASK(XF_XFEATURE_HI16_ZMM). */
XF_API int xf_xstate_init_components(uint64_t mask);

/* ---------------------------------------------------------------------------
 * The runtime
 */

/* How fibers wait for descriptors (xf_config.io_backend; the environment's
 * XFIBER_IO_BACKEND=epoll|io_uring overrides it).  docs/io.md compares them. */
typedef enum xf_io_backend {
	XF_IO_BACKEND_DEFAULT = 0, /* epoll */
	XF_IO_BACKEND_EPOLL,	   /* one epoll set, polled by idle workers and the ticker */
	XF_IO_BACKEND_IO_URING,	   /* an io_uring per worker: socket reads and writes are
				    * requests, submitted in batches; the rest as with epoll.
				    * Where the kernel refuses io_uring, xf_init goes on with
				    * epoll and says why on stderr and in xf_stats; ENOTSUP
				    * if libxfiber was built without liburing */
} xf_io_backend;

typedef struct xf_config {
	unsigned workers;  /* worker threads; 0 = one per CPU the process may run on */
	size_t stack_size; /* default fiber stack; 0 = XF_STACK_SIZE_DEFAULT */
	unsigned slice_us; /* preemption time slice; 0 = XF_SLICE_US_DEFAULT */
	bool amx;          /* request AMX permission and size stacks for AMX frames */
	unsigned spin_us;  /* how long an idle worker spins before it sleeps; 0 = default */
	bool cooperative;  /* no time slices: fibers switch only when they call the runtime;
			    * the environment's XFIBER_COOPERATIVE=1 forces it (Valgrind) */
	xf_io_backend io_backend;  /* see above */
	unsigned blocking_threads; /* most helper threads of xf_blocking; 0 = 64 */
	bool no_stack_guards; /* no guard below each stack: an overflow goes undetected, but on
			       * kernels before 6.13 (no MADV_GUARD_INSTALL) far more fibers fit
			       * under vm.max_map_count (docs/runtime.md) */
	bool round_robin;     /* a preempted fiber keeps its turn in its worker's plain round robin.
			       * By default it steps aside for the fibers just woken or spawned
			       * that wait there - a short request's, say, behind a long one's -
			       * as Linux runs a woken task ahead of a CPU-bound one, for at most
			       * XF_WOKEN_FIRST_WAIT_SLICES slices, unless it holds a mutex,
			       * and once preempted it loses the rest of a slice when events
			       * arrive (docs/preemption.md).  The environment's
			       * XFIBER_ROUND_ROBIN=1 forces it */
} xf_config;

/* Bytes of stack for user frames.  The runtime adds room for one kernel
 * signal frame on top (AT_MINSIGSTKSZ rounded up, ~3.4 KB, ~12 KB with AMX)
 * and a guard page below. */
#define XF_STACK_SIZE_DEFAULT (256 * 1024) /* room for a 64 KiB buffer on the stack and more */
#define XF_STACK_SIZE_MIN (16 * 1024)
#define XF_SLICE_US_DEFAULT 1000
#define XF_SLICE_US_MIN 50
#define XF_WORKERS_MAX 256

/* Starts the runtime; cfg may be NULL.  The calling thread becomes worker 0
 * and goes on as the first fiber.  EINVAL for a bad config, EBUSY if already
 * running, ENOMEM/EAGAIN when threads or stacks cannot be had, and
 * xf_xstate_request_amx()'s error when cfg->amx is set and AMX is refused. */
XF_API int xf_init(const xf_config *cfg);

/* Called by the first fiber: waits until every other fiber has finished,
 * stops the workers and returns the calling thread to plain-thread mode.
 * EPERM from any other fiber or thread, or when the runtime is not running.
 * Fibers waiting on descriptors fail with ECANCELED from then on. */
XF_API int xf_shutdown(void);
/* xf_shutdown that waits at most timeout_ns for the other fibers: then
 * ETIMEDOUT, after writing the fibers still alive to standard error (as
 * xf_dump does), with the runtime still running - the caller may
 * xf_cancel_all() and try again.  Waits on descriptors fail with ECANCELED
 * while it waits, and work again once it has returned ETIMEDOUT.
 * XF_FOREVER: as xf_shutdown. */
XF_API int xf_shutdown_timeout(uint64_t timeout_ns);

/* ---------------------------------------------------------------------------
 * Fibers
 */

typedef struct xf_fiber xf_fiber;

typedef struct xf_attr {
	size_t stack_size; /* 0 = the xf_config default; at least XF_STACK_SIZE_MIN */
	bool detached;     /* start detached: nobody joins it */
	bool pinned;       /* never migrates: runs only on `worker` */
	int worker;        /* with pinned: the worker; -1 = the spawning fiber's worker */
	const char *name;  /* for debuggers and dumps: copied, up to XF_NAME_MAX - 1 bytes
			    * kept; NULL = none */
	bool batch;	   /* batch work: runs when its worker has nothing latency-critical
			    * to run, with a guaranteed share (xf_fiber_set_batch) */
} xf_attr;

#define XF_ATTR_INIT {0, false, false, -1, NULL, false}
#define XF_NAME_MAX 32

/* Starts fn(arg) in a new fiber.  *out (may be NULL for a detached fiber)
 * receives the handle.  EINVAL for a NULL fn, a bad attr, or out == NULL on
 * a joinable fiber; EPERM when the runtime is not running, and from a
 * plain thread once xf_shutdown has begun (a fiber may spawn until the
 * end: the shutdown waits for what it spawns); ENOMEM.  A named
 * fiber (attr->name) costs a 32-byte allocation, freed with the fiber. */
XF_API int xf_spawn(xf_fiber **out, void *(*fn)(void *), void *arg, const xf_attr *attr);

/* Waits for f to finish and frees it; *result (if result is non-NULL) gets
 * its return value.  EDEADLK for a self-join; EINVAL for a detached fiber or
 * one another fiber is already joining; ESRCH for a handle that is not a
 * live fiber - one already joined, or a detached one that finished, even
 * after a new fiber has reused its memory (a handle carries a 15-bit
 * generation: compare handles with ==, but do not dereference them; after
 * 32,768 reuses of the same memory, an old handle names the new fiber
 * again, as a process ID does after the PIDs wrap); EPERM outside a
 * fiber, and when the runtime is not running (after xf_shutdown every
 * handle is stale). */
XF_API int xf_join(xf_fiber *f, void **result);

/* Lets f free itself when it finishes.  EINVAL if already detached or being
 * joined; ESRCH for a handle that is not a live fiber; EPERM when the
 * runtime is not running. */
XF_API int xf_detach(xf_fiber *f);

/* Lets other fibers run; returns at once when none is waiting. */
XF_API void xf_yield(void);

/* Ends the calling fiber with result (xf_join's *result).  In the first
 * fiber it acts as xf_shutdown() followed by exit(0).  Outside a fiber it
 * prints an error and returns.  It does not unwind the fiber's stack: C++
 * destructors of the frames it leaves do not run (pthread_exit's forced
 * unwinding would run them), so a held std::lock_guard stays locked - in
 * C++ return from the fiber's function, or throw, instead. */
XF_API void xf_exit(void *result);

/* The calling fiber, or NULL outside the runtime. */
XF_API xf_fiber *xf_self(void);

/* A small number naming the fiber (1 for the first fiber), or 0 for NULL.
 * Unique; one worker hands them out in spawn order, not the runtime. */
XF_API uint64_t xf_fiber_id(const xf_fiber *f);

/* A fiber's name ("main" for the first fiber, "" when it has none), or
 * NULL for NULL or a handle that is no live fiber.  The string is the
 * fiber's: read it before the fiber ends. */
XF_API const char *xf_fiber_name(const xf_fiber *f);

/* Names f (name NULL: no name), copying up to XF_NAME_MAX - 1 bytes of
 * name.  Another thread reading the name meanwhile may see part of each.
 * EINVAL for NULL, ESRCH for a handle that is no live fiber, ENOMEM. */
XF_API int xf_fiber_set_name(xf_fiber *f, const char *name);

/* Puts f in the batch class (batch true) or back among the latency-critical
 * fibers, as the kernel's SCHED_BATCH does for threads.  A batch fiber that
 * is preempted while other fibers of its worker wait to run steps aside:
 * they run first, and it resumes when none is left, or once it has waited
 * XF_BATCH_WAIT_SLICES time slices - so each batch fiber keeps at least one
 * slice in ten of a worker that latency-critical fibers keep busy.  A preemption class:
 * without time slices (xf_config.cooperative) it changes nothing.  Takes
 * effect at f's next preemption.  EINVAL for NULL, ESRCH for a handle that
 * is no live fiber. */
XF_API int xf_fiber_set_batch(xf_fiber *f, bool batch);
#define XF_BATCH_WAIT_SLICES 9
/* How long a preempted fiber that stepped aside for fibers just woken waits
 * at most (xf_config.round_robin): each keeps at least one slice in five of
 * a worker that they keep busy. */
#define XF_WOKEN_FIRST_WAIT_SLICES 4

/* The worker the calling fiber runs on right now (0..workers-1), or -1. */
XF_API int xf_worker_id(void);

/* Sleeps at least ns nanoseconds: the fiber, or a plain thread itself.
 * ECANCELED in a cancelled fiber; EPERM in a worker's own context. */
XF_API int xf_sleep_ns(uint64_t ns);

/* Cancels f, for good: the cancellable call it is blocked in, and every
 * later one, returns ECANCELED (the descriptor calls: -1 with errno
 * ECANCELED) - xf_sleep_ns, xf_join, xf_cond_wait, xf_sem_wait, channel
 * sends and receives, xf_select, xf_wg_wait, xf_fd_wait and the fiber I/O
 * calls, and xf_blocking (a job not yet taken by a helper is withdrawn; one
 * that runs is waited for, as a thread cannot be stopped safely, and its
 * result is kept).  A timed call with timeout 0 and the try calls, which
 * never wait, work on; so do xf_mutex_lock and the C library's locks and
 * sleeps, as pthread_mutex_lock is no cancellation point.  From any fiber
 * or thread; f may cancel itself.  ESRCH for a handle that is no live
 * fiber; EPERM when the runtime is not running. */
XF_API int xf_cancel(xf_fiber *f);
/* Whether the calling fiber has been cancelled (false outside a fiber),
 * whether or not cancellation is disabled now. */
XF_API bool xf_cancelled(void);
/* Nest, as pthread_setcancelstate(PTHREAD_CANCEL_DISABLE) but counted.
 * While disabled, xf_cancel of the caller only marks it: no call returns
 * ECANCELED and no wait is ended, so cleanup that must wait - joining the
 * fibers it owns, flushing a socket - can in a cancelled fiber; the first
 * cancellable call after the outermost enable returns ECANCELED.  EPERM
 * outside a fiber or plain thread of the runtime; EOVERFLOW past 255
 * levels; enable: EINVAL when not disabled. */
XF_API int xf_cancel_disable(void);
XF_API int xf_cancel_enable(void);
/* Cancels every fiber but the caller.  EPERM when the runtime is not
 * running, ENOMEM. */
XF_API int xf_cancel_all(void);

/* ---------------------------------------------------------------------------
 * Fiber-local storage, like pthread keys; destructors run at fiber exit.
 */

typedef unsigned xf_key;
#define XF_KEYS_MAX 128

XF_API int xf_key_create(xf_key *key, void (*destructor)(void *)); /* EAGAIN when full */
XF_API int xf_key_delete(xf_key key);                              /* EINVAL if unknown */
XF_API void *xf_getspecific(xf_key key);                           /* NULL if unset */
XF_API int xf_setspecific(xf_key key, const void *value);          /* EINVAL, EPERM, ENOMEM */

/* ---------------------------------------------------------------------------
 * Synchronisation.  Each blocks the fiber, never the worker.  The fields are
 * private; initialise with the *_INITIALIZER or the *_init function.
 * Timeouts are relative, in nanoseconds, and give ETIMEDOUT; XF_FOREVER is
 * none (docs/runtime.md lists each call's meaning of a timeout).
 */

/* A timeout that never ends, accepted by every call that takes one. */
#define XF_FOREVER UINT64_MAX

typedef struct xf__waitq {
	uint32_t lock; /* spinlock word */
	uint32_t pad;
	xf_fiber *head, *tail;
} xf__waitq;

typedef struct xf_mutex {
	xf__waitq wq;
	xf_fiber *owner;
} xf_mutex;
#define XF_MUTEX_INITIALIZER {{0, 0, NULL, NULL}, NULL}

XF_API int xf_mutex_init(xf_mutex *m);
XF_API int xf_mutex_destroy(xf_mutex *m); /* EBUSY if locked or waited on */
XF_API int xf_mutex_lock(xf_mutex *m);    /* EDEADLK if the caller holds it */
XF_API int xf_mutex_trylock(xf_mutex *m); /* EBUSY if held */
XF_API int xf_mutex_unlock(xf_mutex *m);  /* EPERM unless the caller holds it */

typedef struct xf_cond {
	xf__waitq wq;
} xf_cond;
#define XF_COND_INITIALIZER {{0, 0, NULL, NULL}}

XF_API int xf_cond_init(xf_cond *c);
XF_API int xf_cond_destroy(xf_cond *c); /* EBUSY if waited on */
XF_API int xf_cond_wait(xf_cond *c, xf_mutex *m);
XF_API int xf_cond_timedwait(xf_cond *c, xf_mutex *m, uint64_t timeout_ns);
XF_API int xf_cond_signal(xf_cond *c);
XF_API int xf_cond_broadcast(xf_cond *c);

typedef struct xf_sem {
	xf__waitq wq;
	uint64_t value;
} xf_sem;
#define XF_SEM_INITIALIZER(v) {{0, 0, NULL, NULL}, (v)}

XF_API int xf_sem_init(xf_sem *s, uint64_t value);
XF_API int xf_sem_destroy(xf_sem *s); /* EBUSY if waited on */
XF_API int xf_sem_wait(xf_sem *s);
XF_API int xf_sem_trywait(xf_sem *s); /* EAGAIN at zero */
XF_API int xf_sem_timedwait(xf_sem *s, uint64_t timeout_ns);
XF_API int xf_sem_post(xf_sem *s);    /* EOVERFLOW at UINT64_MAX */
XF_API int xf_sem_getvalue(xf_sem *s, uint64_t *value);

/* A wait group, as Go's sync.WaitGroup: a count that xf_wg_add raises and
 * xf_wg_done lowers, and waiters woken together when it reaches zero.  A
 * wait that finds zero returns at once; the group may be used again. */
typedef struct xf_wg {
	xf__waitq wq;
	int64_t count;
} xf_wg;
#define XF_WG_INITIALIZER {{0, 0, NULL, NULL}, 0}

XF_API int xf_wg_init(xf_wg *wg);
XF_API int xf_wg_add(xf_wg *wg, int64_t delta); /* EINVAL if the count would go below zero */
XF_API int xf_wg_done(xf_wg *wg);		 /* xf_wg_add(wg, -1) */
XF_API int xf_wg_wait(xf_wg *wg);
/* timeout 0: only looks (ETIMEDOUT unless zero); XF_FOREVER: none. */
XF_API int xf_wg_timedwait(xf_wg *wg, uint64_t timeout_ns);

/* A bounded MPMC channel of fixed-size messages.  capacity 0 makes every
 * send wait for its receiver (a rendezvous).  Messages from one sender
 * arrive in the order sent.  After xf_chan_close() sends fail with EPIPE and
 * receives drain what is buffered, then fail with EPIPE. */
typedef struct xf_chan xf_chan;

XF_API int xf_chan_create(xf_chan **out, size_t msg_size, size_t capacity);
XF_API int xf_chan_destroy(xf_chan *ch); /* EBUSY while fibers wait on it */
XF_API int xf_chan_send(xf_chan *ch, const void *msg);
XF_API int xf_chan_try_send(xf_chan *ch, const void *msg); /* EAGAIN when full */
XF_API int xf_chan_timed_send(xf_chan *ch, const void *msg, uint64_t timeout_ns);
XF_API int xf_chan_recv(xf_chan *ch, void *msg);
XF_API int xf_chan_try_recv(xf_chan *ch, void *msg); /* EAGAIN when empty */
XF_API int xf_chan_timed_recv(xf_chan *ch, void *msg, uint64_t timeout_ns);
XF_API int xf_chan_close(xf_chan *ch); /* EPIPE if already closed */

/* One operation of an xf_select. */
typedef struct xf_select_case {
	xf_chan *chan; /* NULL: this case is skipped */
	int op;	       /* XF_SELECT_SEND or XF_SELECT_RECV */
	void *msg;     /* SEND: the message to send; RECV: where the received one goes */
	int result;    /* set for the chosen case: 0, or EPIPE for a closed channel */
} xf_select_case;
#define XF_SELECT_SEND 1
#define XF_SELECT_RECV 2

/* Waits until one of the n cases can proceed, performs exactly that one and
 * sets *chosen, as Go's select does.  When several are ready each is as
 * likely to be picked as the others, so none starves.  A closed channel's case is ready, with
 * result EPIPE (a receive drains what is buffered first).  0; ETIMEDOUT
 * (timeout 0: try once; XF_FOREVER: none); ECANCELED; EINVAL for a bad
 * case, or no case at all and no timeout; ENOMEM (more than 8 cases need
 * memory); EPERM from a worker's own context.  From fibers and plain
 * threads. */
XF_API int xf_select(xf_select_case *cases, size_t n, uint64_t timeout_ns, size_t *chosen);

/* A callback after after_ns, then every period_ns (0: once), run in a
 * fiber of its own: it may block like any fiber, and never runs twice at
 * once for one timer.  A periodic timer that falls behind skips the ticks
 * it missed, as Go's Ticker does.  EINVAL for NULL out or fn; xf_spawn's
 * errors.  From fibers and plain threads. */
typedef struct xf_timer xf_timer;
XF_API int xf_timer_start(xf_timer **out, uint64_t after_ns, uint64_t period_ns,
			  void (*fn)(void *), void *arg);
/* Stops t and frees it, after waiting for a callback that runs - also in a
 * cancelled fiber (from the callback itself it returns at once and t goes
 * when the callback ends).
 * 0, EINVAL for NULL or a timer stopped already (a handle whose memory a
 * later xf_timer_start reused names that new timer, as a closed
 * descriptor's number does). */
XF_API int xf_timer_stop(xf_timer *t);

/* ---------------------------------------------------------------------------
 * Preemption
 *
 * A fiber that runs for more than xf_config.slice_us without switching is
 * preempted by a signal (SIGURG) to its worker, if something else waits to
 * run there.  Its registers - every GPR, the flags and all extended state -
 * stay in the kernel's signal frame on its own stack until it resumes.
 * Preemption is deferred, never lost, while it is disabled and while the
 * fiber runs inside libc, the dynamic loader, libxfiber itself, or a library
 * marked with xf_preempt_unsafe_add(): code that may hold a lock the next
 * fiber needs.  Also while it runs inside an application's signal handler,
 * or under another signal mask than the one xf_init found: the mask belongs
 * to the worker thread, and a fiber that changes it (pthread_sigmask, or a
 * longjmp - not siglongjmp - out of a handler, which leaves that handler's
 * signal blocked) is not preempted until it is back.  pthread, C11 and C++ locks, condition
 * variables, once- objects and statics may be held across code that is preempted: a fiber that
 * waits for one never keeps the others of its worker from running (docs/runtime.md lists what C and
 * C++ code may do in fibers).
 */

/* Nest.  While disabled, an arriving preemption is recorded and taken at
 * the enable that ends the outermost section.  Do not block or yield with
 * preemption disabled: the blocking calls return EDEADLK (xf_yield does not
 * switch), or abort with a message in debug builds; XFIBER_MISUSE=return or
 * =abort in the environment at xf_init chooses. */
XF_API void xf_preempt_disable(void);
XF_API void xf_preempt_enable(void);

/* Marks the whole loaded object (executable or shared library) containing
 * addr as unsafe to preempt in, e.g. xf_preempt_unsafe_add(&some_function).
 * EINVAL if addr lies in no loaded object, ENOSPC when the table is full. */
XF_API int xf_preempt_unsafe_add(const void *addr);

/* ---------------------------------------------------------------------------
 * Descriptors.  Each call mirrors its POSIX namesake - same arguments, same
 * return value, errno on failure - and blocks only the calling fiber, never
 * its worker: it tries without blocking the thread and, when the descriptor
 * is not ready, waits for it as a fiber.  Outside a fiber (and with
 * preemption disabled) each is the plain call.  They wait whatever the
 * descriptor's O_NONBLOCK flag says, and never change it, but for a
 * listening socket, which xf_accept4 makes non-blocking for good, and a
 * socket during an xf_connect to it.  The exception: xf_connect on a socket
 * the caller made non-blocking says EINPROGRESS, as connect does (code
 * that sets the flag expects it, and waits with xf_fd_wait for POLLOUT).
 * A socket call given MSG_DONTWAIT only tries.  Writes to stream sockets and pipes write
 * everything, as blocking writes do.  Fibers waiting in them when xf_shutdown is called fail with
 * ECANCELED.  docs/io.md says how it works.
 */
XF_API ssize_t xf_read(int fd, void *buf, size_t n);
XF_API ssize_t xf_write(int fd, const void *buf, size_t n);
XF_API ssize_t xf_readv(int fd, const struct iovec *iov, int iovcnt);
XF_API ssize_t xf_writev(int fd, const struct iovec *iov, int iovcnt);
XF_API ssize_t xf_recv(int fd, void *buf, size_t n, int flags);
XF_API ssize_t xf_send(int fd, const void *buf, size_t n, int flags);
XF_API ssize_t xf_recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *addr,
			   socklen_t *len);
XF_API ssize_t xf_sendto(int fd, const void *buf, size_t n, int flags,
			 const struct sockaddr *addr, socklen_t len);
XF_API ssize_t xf_recvmsg(int fd, struct msghdr *msg, int flags);
XF_API ssize_t xf_sendmsg(int fd, const struct msghdr *msg, int flags);
XF_API int xf_accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags);
XF_API int xf_connect(int fd, const struct sockaddr *addr, socklen_t len);
XF_API int xf_poll(struct pollfd *fds, nfds_t n, int timeout_ms);
/* Fibers waiting on fd wake first, failing with EBADF; the number is not
 * reused under them: the close(2) comes after they have left. */
XF_API int xf_close(int fd);

/* These keep the library's convention (0 or a positive errno). */
/* Later waits on fd fail with ETIMEDOUT after read_ns (for input) or
 * write_ns (output); 0 = none.  EBADF for a bad fd. */
XF_API int xf_fd_set_timeout(int fd, uint64_t read_ns, uint64_t write_ns);
/* Waits until fd is ready for events (POLLIN and/or POLLOUT, on any
 * pollable fd, e.g. one a third-party library owns); timeout_ns 0 or
 * XF_FOREVER = forever.  ETIMEDOUT, EBADF, EINVAL for other events,
 * ECANCELED.  From a plain thread too (a poll of the thread). */
XF_API int xf_fd_wait(int fd, short events, uint64_t timeout_ns);
/* fn(arg) runs on a helper thread of the blocking pool while the fiber
 * waits; *result (if result is not NULL) gets its return value.  EINVAL
 * for a NULL fn, EAGAIN when the pool's queue is full.  A job runs to its
 * end: xf_shutdown waits for it, as for its fiber.  Outside a fiber (and
 * with preemption disabled) fn runs inline. */
XF_API int xf_blocking(void *(*fn)(void *), void *arg, void **result);

/* Regular files, through the page cache without blocking where it can,
 * else the blocking pool; as open(2), pread(2), pwrite(2), fsync(2). */
XF_API int xf_open(const char *path, int flags, ...);
XF_API ssize_t xf_pread(int fd, void *buf, size_t n, off_t off);
XF_API ssize_t xf_pwrite(int fd, const void *buf, size_t n, off_t off);
XF_API int xf_fsync(int fd);
/* getaddrinfo(3) in the blocking pool; EAI_SYSTEM with errno when the pool
 * refuses the job. */
XF_API int xf_getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
			  struct addrinfo **res);

/* ---------------------------------------------------------------------------
 * Counters, always on, one increment each.
 */
typedef struct xf_worker_stats {
	uint64_t switches;              /* context switches, voluntary and preemptive */
	uint64_t preemptions;           /* switches made inside a preemption signal */
	uint64_t preemptions_deferred;  /* preemption signals that found preemption disabled
					 * or the fiber in unsafe code */
	uint64_t preemption_ticks_idle; /* preemption signals that found nothing else to run */
	uint64_t xsaves;                /* XSAVE-family instructions the runtime executed */
	uint64_t xrstors;               /* XRSTOR-family instructions the runtime executed */
	uint64_t state_copies_avoided;  /* preempted fibers resumed straight from their frame */
	uint64_t preempted_migrations;  /* ...of which on another worker: always 0 by design */
	uint64_t tiles_released;        /* voluntary switches that ran TILERELEASE */
	uint64_t frame_xstate_bytes;    /* extended-state bytes the kernel wrote into
					 * preemption frames, per each frame's XSTATE_BV */
	uint64_t preemption_ticks_stale; /* ticks dropped: aimed at a fiber that had
					  * switched out before they arrived */
	uint64_t preemptions_waiting;	 /* preemptions of a fiber waiting in the kernel inside
					  * a pthread, C11 or C++ synchronisation call */
	uint64_t io_waits;		 /* fibers that waited for a descriptor */
	uint64_t poller_calls;		 /* epoll_wait calls (the ticker's in total only) */
	uint64_t io_events;		 /* descriptor events those returned */
	uint64_t blocking_jobs;		 /* calls run in the blocking pool */
	uint64_t batch_stepped_aside;	 /* preemptions of a batch fiber that let others run
					  * first (xf_fiber_set_batch) */
	uint64_t batch_starved;		 /* fibers that stepped aside (batch work, or woken
					  * first below) and waited their slices at most
					  * (XF_BATCH_WAIT_SLICES, XF_WOKEN_FIRST_WAIT_SLICES),
					  * then were queued with the others */
	uint64_t woken_first;		 /* preemptions of a fiber (not batch work) that let
					  * fibers just woken run first (xf_config.round_robin) */
} xf_worker_stats;

typedef struct xf_stats {
	unsigned nr_workers;
	xf_worker_stats total;
	xf_worker_stats workers[XF_WORKERS_MAX];
	/* Memory, runtime-wide: default-size stacks made so far; of them, those
	 * in the shared pool with their pages, and the times the scavenger gave
	 * a pooled stack's pages back; fiber structures made so far.  Workers'
	 * caches are bounded, so in a steady pattern of spawns (however many
	 * workers spawn and free) the counts of stacks and fibers made stop
	 * growing. */
	uint64_t stacks_made;
	uint64_t stacks_pooled_warm;
	uint64_t stacks_scavenged;
	uint64_t fibers_made;
	/* The engine in use (never XF_IO_BACKEND_DEFAULT), and why the one
	 * asked for was refused ("" if it was not). */
	xf_io_backend io_backend;
	char io_backend_refused[160];
} xf_stats;

/* EINVAL for NULL, EPERM when the runtime is not running. */
XF_API int xf_stats_get(xf_stats *out);

/* --- Seeing inside (docs/observability.md) --- */

/* Writes every live fiber to fd, as Go does on SIGQUIT: its id, name and
 * state (running, runnable, preempted, sleeping, blocked on what), its
 * backtrace (the C library's unwinder, through preemption signal frames;
 * functions are named as far as the dynamic symbols go, and every frame
 * gives object+offset for addr2line), its entry function and where it was
 * spawned.  For as long as it reads the fibers no worker switches into
 * one; fibers that run go on running, and are listed without a backtrace
 * (but the caller's own).  It formats in memory and writes after, so fd
 * may be a pipe that a fiber reads.  From a fiber or any thread; with the
 * runtime stopped it writes one line saying so.  0, EBADF, ENOMEM, a
 * write's errno, or the misuse error with preemption disabled.
 *
 * The environment variable XFIBER_DUMP_SIGNAL=SIG (QUIT, USR1, 10 ...)
 * makes xf_init install a handler that dumps to standard error whenever SIG
 * arrives (from a thread of the runtime's, outside the handler). */
XF_API int xf_dump(int fd);

#ifdef __cplusplus
}
#endif

#endif /* XFIBER_H */
