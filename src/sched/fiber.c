/*
 * fiber.c - a fiber's life: spawn, run, exit, join or detach, free.
 *
 * Join and detach meet the exiting fiber on one word, `joiner`:
 *   NULL                nobody has asked yet
 *   a fiber             that fiber is blocked in xf_join
 *   JOINER_DETACHED     nobody will join; the fiber frees itself at exit
 *   JOINER_DONE         the fiber has finished
 * The exit side exchanges in JOINER_DONE; join and detach compare-and-swap
 * NULL to themselves.  Whoever comes second frees the fiber (or wakes the
 * joiner, who then frees it).
 *
 * Fiber structures come from bounded per-worker caches (XF_FIBER_CACHE)
 * that trade batches with a global arena, and never go back to malloc
 * while the runtime runs, so a stale handle reads a magic number, not
 * freed memory (ESRCH); once a later spawn reuses the structure, the
 * generation the handle carries no longer matches it (xf__handle), and
 * that is ESRCH too.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/probes.h"
#include "arch/context.h"
#include "sched/runq.h"
#include "sched/sanitizer.h"
#include "sched/sched.h"
#include "xstate/xstate.h"
#include "runtime/hooks.h"

#define JOINER_DONE	((struct xf_fiber *)1)
#define JOINER_DETACHED ((struct xf_fiber *)2)
struct xf__fiber_arena xf__fiber_arena = {.lock = PTHREAD_MUTEX_INITIALIZER};

struct xf_fiber **xf__fiber_arena_chunks(size_t *nr)
{
	struct xf_fiber **chunks;

	pthread_mutex_lock(&xf__fiber_arena.lock);
	*nr = xf__fiber_arena.nr;
	chunks = malloc(*nr * sizeof(*chunks) + 1);
	if (chunks)
		memcpy(chunks, xf__fiber_arena.chunks, *nr * sizeof(*chunks));
	pthread_mutex_unlock(&xf__fiber_arena.lock);
	return chunks;
}

/* Pushes f on w's cache. */
static void cache_push(struct xf__worker *w, struct xf_fiber *f)
{
	f->run_next = w->fiber_cache;
	w->fiber_cache = f;
	w->fiber_cache_nr++;
}

/* The next spawn writes all of the fiber it gets next: with thousands of
 * fibers alive its lines are long gone from the caches, so ask for them
 * now. */
static inline void prefetch_fiber(struct xf_fiber *f)
{
	if (f)
		for (size_t line = 0; line < sizeof(*f); line += 64)
			__builtin_prefetch((char *)f + line, 1);
}

struct xf_fiber *xf__fiber_alloc(struct xf__worker *w)
{
	struct xf_fiber *f, *chunk;

	if (!w) {
		/* A plain thread's spawn: from the arena's list, under its lock. */
		pthread_mutex_lock(&xf__fiber_arena.lock);
		f = xf__fiber_arena.free_list;
		if (f)
			xf__fiber_arena.free_list = f->run_next;
		pthread_mutex_unlock(&xf__fiber_arena.lock);
		if (f)
			return f;
	} else if (!w->fiber_cache) {
		/* Refill a batch from the arena's free list: one lock per
		 * XF_FIBER_BATCH spawns. */
		pthread_mutex_lock(&xf__fiber_arena.lock);
		while (xf__fiber_arena.free_list && w->fiber_cache_nr < XF_FIBER_BATCH) {
			f = xf__fiber_arena.free_list;
			xf__fiber_arena.free_list = f->run_next;
			cache_push(w, f);
		}
		pthread_mutex_unlock(&xf__fiber_arena.lock);
	}
	if (w && w->fiber_cache) {
		f = w->fiber_cache;
		w->fiber_cache = f->run_next;
		w->fiber_cache_nr--;
		prefetch_fiber(w->fiber_cache);
		return f;
	}
	pthread_mutex_lock(&xf__fiber_arena.lock);
	if (xf__fiber_arena.nr == xf__fiber_arena.cap) {
		size_t cap = xf__fiber_arena.cap ? 2 * xf__fiber_arena.cap : 64;
		struct xf_fiber **c = realloc(xf__fiber_arena.chunks, cap * sizeof(*c));
		if (!c) {
			pthread_mutex_unlock(&xf__fiber_arena.lock);
			return NULL;
		}
		xf__fiber_arena.chunks = c;
		xf__fiber_arena.cap = cap;
	}
	chunk = aligned_alloc(64, XF_ARENA_CHUNK * sizeof(*chunk));
	if (!chunk) {
		pthread_mutex_unlock(&xf__fiber_arena.lock);
		return NULL;
	}
	xf__fiber_arena.chunks[xf__fiber_arena.nr++] = chunk;
	pthread_mutex_unlock(&xf__fiber_arena.lock);
	for (int i = XF_ARENA_CHUNK - 1; i > 0; i--) {
		chunk[i].magic = XF_FIBER_FREED;
		chunk[i].name = NULL;
		atomic_init(&chunk[i].gen_cancel, 0);
		if (w) {
			cache_push(w, &chunk[i]);
		} else {
			/* A plain thread's spawn: the rest to the arena's list. */
			chunk[i].run_next = i + 1 < XF_ARENA_CHUNK ? &chunk[i + 1] : NULL;
		}
	}
	if (!w) {
		pthread_mutex_lock(&xf__fiber_arena.lock);
		chunk[XF_ARENA_CHUNK - 1].run_next = xf__fiber_arena.free_list;
		xf__fiber_arena.free_list = &chunk[1];
		pthread_mutex_unlock(&xf__fiber_arena.lock);
	}
	chunk[0].name = NULL;
	atomic_init(&chunk[0].gen_cancel, 0);
	return &chunk[0];
}

/* The cache is bounded: a full one hands a batch to the arena's free list,
 * where any worker finds it, so a worker that only frees (fibers spawned
 * elsewhere end here) does not hoard what another then allocates anew. */
void xf__fiber_free(struct xf__worker *w, struct xf_fiber *f)
{
	f->magic = XF_FIBER_FREED;
	/* Every handle of it is stale from now on, and a cancel of it fails
	 * (cancel.c); the flag goes with the fiber. */
	atomic_store_explicit(&f->gen_cancel, (xf__fiber_gen(f) + 1) & XF_GEN_MASK,
			      memory_order_release);
	if (unlikely(f->name)) {
		free(f->name); /* the handle is dead: no reader may hold it now */
		f->name = NULL;
	}
	if (w && w->fiber_cache_nr < XF_FIBER_CACHE) {
		cache_push(w, f);
		return;
	}
	if (w) {
		struct xf_fiber *first = w->fiber_cache, *last = first;

		for (unsigned i = 1; i < XF_FIBER_BATCH; i++)
			last = last->run_next;
		w->fiber_cache = last->run_next;
		w->fiber_cache_nr -= XF_FIBER_BATCH;
		cache_push(w, f);
		pthread_mutex_lock(&xf__fiber_arena.lock);
		last->run_next = xf__fiber_arena.free_list;
		xf__fiber_arena.free_list = first;
		pthread_mutex_unlock(&xf__fiber_arena.lock);
		return;
	}
	pthread_mutex_lock(&xf__fiber_arena.lock);
	f->run_next = xf__fiber_arena.free_list;
	xf__fiber_arena.free_list = f;
	pthread_mutex_unlock(&xf__fiber_arena.lock);
}

uint64_t xf__fibers_made(void)
{
	uint64_t n;

	pthread_mutex_lock(&xf__fiber_arena.lock);
	n = (uint64_t)xf__fiber_arena.nr * XF_ARENA_CHUNK;
	pthread_mutex_unlock(&xf__fiber_arena.lock);
	return n;
}

void xf__fiber_arena_release(void)
{
	pthread_mutex_lock(&xf__fiber_arena.lock);
	for (size_t i = 0; i < xf__fiber_arena.nr; i++) {
		struct xf_fiber *chunk = xf__fiber_arena.chunks[i];

		/* Names of fibers never freed: the first, and any nobody joined. */
		for (int k = 0; k < XF_ARENA_CHUNK; k++)
			if (chunk[k].magic == XF_FIBER_MAGIC)
				free(chunk[k].name);
		free(chunk);
	}
	free(xf__fiber_arena.chunks);
	xf__fiber_arena.chunks = NULL;
	xf__fiber_arena.nr = xf__fiber_arena.cap = 0;
	xf__fiber_arena.free_list = NULL;
	pthread_mutex_unlock(&xf__fiber_arena.lock);
}

static void arena_fork(enum xf__fork_phase phase)
{
	xf__fork_mutex(&xf__fiber_arena.lock, phase);
}

XF_HOOK(arena_hook) = {
    .module = "sched/fiber", .fork_order = XF_FORK_ORDER_ARENA, .fork = arena_fork};

static bool valid_attr(const xf_attr *a)
{
	if (a->stack_size && a->stack_size < XF_STACK_SIZE_MIN)
		return false;
	if (a->stack_size > ((size_t)1 << 40))
		return false;
	return a->worker >= -1 && (a->worker < 0 || (unsigned)a->worker < xf__rt.nr_workers);
}

/* Ids come from the shared counter in blocks, so that spawns on different
 * workers do not write one line; one worker's are in spawn order. */
#define XF_ID_BLOCK 64

static uint64_t next_fiber_id(struct xf__worker *w)
{
	if (unlikely(w->next_id == w->id_limit)) {
		w->next_id = atomic_fetch_add_explicit(&xf__rt.next_id, XF_ID_BLOCK,
						       memory_order_relaxed);
		w->id_limit = w->next_id + XF_ID_BLOCK;
	}
	return w->next_id++;
}

/* A counter only its worker writes: a plain increment, published. */
static inline void count_up(_Atomic uint64_t *counter)
{
	atomic_store_explicit(counter, atomic_load_explicit(counter, memory_order_relaxed) + 1,
			      memory_order_release);
}

/* Finished counts are read before spawned ones: a fiber that finished was
 * spawned before, so the sum never misses one alive (it may count one that
 * finished meanwhile). */
unsigned long xf__live_fibers(void)
{
	uint64_t spawned = 0, finished = 0;

	for (unsigned i = 0; i < xf__rt.nr_workers; i++)
		finished += atomic_load_explicit(&xf__rt.workers[i].finished, memory_order_acquire);
	for (unsigned i = 0; i < xf__rt.nr_workers; i++)
		spawned += atomic_load_explicit(&xf__rt.workers[i].spawned, memory_order_acquire);
	spawned += atomic_load_explicit(&xf__rt.spawned_by_threads, memory_order_acquire);
	return (unsigned long)(1 + spawned - finished);
}

/* memset(f, 0, sizeof(*f)), as whole-line stores: here the compiler would
 * emit rep stos, whose start-up costs more than the 40 stores (~7 ns of a
 * spawn+join). */
static inline void zero_fiber(struct xf_fiber *f)
{
	uint64_t *word = (uint64_t *)f;

	_Static_assert(sizeof(*f) % sizeof(*word) == 0, "whole words");
#pragma GCC unroll 64
	for (size_t i = 0; i < sizeof(*f) / sizeof(*word); i++)
		word[i] = 0;
}

/* Copies at most XF_NAME_MAX - 1 bytes of name, always terminated, into
 * f's name buffer, made at its first name.  ENOMEM without one. */
static int copy_name(struct xf_fiber *f, const char *name)
{
	size_t n = strnlen(name, XF_NAME_MAX - 1);

	if (!f->name) {
		char *buf = calloc(1, XF_NAME_MAX);

		if (!buf)
			return ENOMEM;
		/* Published whole: a reader finds no buffer or a terminated one. */
		__atomic_store_n(&f->name, buf, __ATOMIC_RELEASE);
	}
	memcpy(f->name, name, n);
	f->name[n] = 0;
	return 0;
}

/* The part of spawning that uses this worker's caches. */
static int fiber_create(struct xf__worker *w, const xf_attr *attr, struct xf_fiber **out)
{
	struct xf_fiber *f = xf__fiber_alloc(w);
	unsigned gen;
	int err;

	if (!f)
		return ENOMEM;
	gen = xf__fiber_gen(f);
	zero_fiber(f);
	atomic_store_explicit(&f->gen_cancel, (uint16_t)gen, memory_order_relaxed);
	err = xf__stack_get(w, attr->stack_size ? attr->stack_size : xf__rt.stack_size, &f->stack);
	if (err) {
		xf__fiber_free(w, f);
		return err;
	}
	*out = f;
	return 0;
}

/* The parts of a new fiber every spawn sets the same way. */
static inline __attribute__((always_inline)) void
fiber_setup(struct xf_fiber *f, void *(*fn)(void *), void *arg, const xf_attr *attr,
			int home, const void *site)
{
	f->fork_gen = xf__rt.fork_gen;
	f->fn = fn;
	f->arg = arg;
	f->spawn_site = site;
	f->home = home;
	if (attr->pinned) {
		f->flags |= XF_FIBER_F_PINNED;
		if (attr->worker >= 0)
			f->home = attr->worker;
	}
	f->batch = attr->batch;
	if (attr->detached) {
		f->detach_state = XF_DETACH_DETACHED;
		f->joiner = JOINER_DETACHED;
	}
	f->sp = xf__context_make((char *)f->stack.base + f->stack.size, f);
	/* A valid handle from here: last, so that a reader of the arena (a
	 * dump, sched/debug.c) that finds the magic finds the rest too. */
	__atomic_store_n(&f->magic, XF_FIBER_MAGIC, __ATOMIC_RELEASE);
	xf__san_fiber_create(f);
}

/* The worker a plain thread's spawn goes to: the one with the fewest fibers
 * (runq.h's load: an idle one before a busy one), looking from a place that
 * moves on with every such spawn. */
static int remote_home(void)
{
	unsigned n = xf__rt.nr_workers, start = atomic_fetch_add(&xf__rt.next_remote, 1) % n;
	unsigned best = start, least = ~0u;

	for (unsigned k = 0; k < n; k++) {
		unsigned i = (start + k) % n;
		unsigned q = xf__worker_load(&xf__rt.workers[i]);

		if (q < least) {
			least = q;
			best = i;
		}
	}
	return (int)best;
}

/* xf_spawn from a plain thread (folly's addTaskRemote): the structure and
 * stack come from the shared pools, the fiber goes to a worker's inbox. */
static int spawn_remote(xf_fiber **out, void *(*fn)(void *), void *arg, const xf_attr *attr,
			const void *site)
{
	struct xf_fiber *f;
	int err;

	if (attr->pinned && attr->worker < 0)
		return EINVAL; /* "the spawning fiber's worker": there is none */
	/* Against a shutdown: the runtime runs until the fiber is counted
	 * live and queued, and shutdown then waits for it (runtime/runtime.c). */
	if (!xf__runtime_hold() || xf__rt.closing) {
		xf__runtime_release();
		return EPERM;
	}
	err = fiber_create(NULL, attr, &f);
	if (!err && attr->name && (err = copy_name(f, attr->name)) != 0) {
		xf__stack_put(NULL, &f->stack);
		xf__fiber_free(NULL, f);
	}
	if (err) {
		xf__runtime_release();
		return err;
	}
	f->id = atomic_fetch_add_explicit(&xf__rt.next_id, 1, memory_order_relaxed);
	fiber_setup(f, fn, arg, attr, remote_home(), site);
	atomic_fetch_add_explicit(&xf__rt.spawned_by_threads, 1, memory_order_release);
	XF_PROBE3(fiber__create, f->id, f, -1);
	if (out)
		*out = xf__handle(f);
	xf__wake(f); /* not a worker: into its home's inbox, and the home kicked */
	xf__runtime_release();
	return 0;
}

int xf_spawn(xf_fiber **out, void *(*fn)(void *), void *arg, const xf_attr *attr)
{
	static const xf_attr defaults = XF_ATTR_INIT;
	struct xf__worker *w;
	struct xf_fiber *f;
	int err;

	if (!fn)
		return EINVAL;
	if (!atomic_load_explicit(&xf__rt.running, memory_order_acquire))
		return EPERM;
	if (!attr)
		attr = &defaults;
	if (!valid_attr(attr) || (!out && !attr->detached))
		return EINVAL;
	if (!xf__this_worker())
		return spawn_remote(out, fn, arg, attr, __builtin_return_address(0));
	/* A forked child's first spawn: now preemption may be needed. */
	if (unlikely(xf__rt.ticker_pending)) {
		xf__rt.ticker_pending = false;
		xf__ticker_start();
	}
	xf__preempt_disable();
	w = xf__this_worker();
	err = fiber_create(w, attr, &f);
	if (!err && attr->name && (err = copy_name(f, attr->name)) != 0) {
		xf__stack_put(w, &f->stack);
		xf__fiber_free(w, f);
	}
	if (err) {
		xf__preempt_enable();
		return err;
	}
	f->id = next_fiber_id(w);
	fiber_setup(f, fn, arg, attr, (int)w->id, __builtin_return_address(0));
	count_up(&w->spawned);
	XF_PROBE3(fiber__create, f->id, f, w->id);
	if (out)
		*out = xf__handle(f);
	xf__wake(f);
	xf__preempt_enable();
	return 0;
}

_Noreturn void xf__fiber_exit(struct xf_fiber *f, void *result)
{
	/* Before the switch that frees its stack: a dump, which stops
	 * switches, then knows not to read that stack (sched/debug.c). */
	__atomic_store_n(&f->exiting, true, __ATOMIC_RELAXED);
	XF_PROBE2(fiber__exit, f->id, xf__this_worker()->id);
	xf__fls_destroy(f);
	xf__hooks_fiber_exit(f);
	f->result = result;
	if (f->flags & XF_FIBER_F_FIRST) {
		xf__rt.first_fiber_exit();
		__builtin_unreachable();
	}
	xf__preempt_disable();
	xf__schedule(xf__this_worker(), XF_PREV_EXIT);
	__builtin_unreachable();
}

void xf__fiber_finish(struct xf_fiber *f)
{
	struct xf__worker *w = xf__this_worker();
	struct xf_fiber *joiner;

	xf__san_fiber_destroy(f);
	atomic_store_explicit(&f->state, XF_FIBER_DONE, memory_order_release);
	joiner = atomic_exchange_explicit(&f->joiner, JOINER_DONE, memory_order_acq_rel);
	if (joiner == JOINER_DETACHED)
		xf__fiber_free(w, f);
	else if (joiner && xf__wait_claim(joiner, XF_WAIT_WOKEN))
		xf__wake(joiner);
	count_up(&w->finished);
	/* Without a fence this may miss a shutdown that started just now; the
	 * shutdown looks again on its own soon after (runtime/runtime.c). */
	if (unlikely(atomic_load_explicit(&xf__rt.shutdown_waiting, memory_order_relaxed))) {
		atomic_thread_fence(memory_order_seq_cst);
		if (xf__live_fibers() == 1 && xf__wait_claim(xf__rt.first, XF_WAIT_WOKEN))
			xf__wake(xf__rt.first);
	}
}

void xf_exit(void *result)
{
	struct xf_fiber *self = xf__current();

	if (!self || (self->flags & XF_FIBER_F_IDLE)) {
		static const char msg[] = "xfiber: xf_exit called outside a fiber; ignored\n";
		if (write(2, msg, sizeof(msg) - 1) < 0) {
			/* nothing to do */
		}
		return;
	}
	xf__fiber_exit(self, result);
}

/* The live fiber a handle names: EINVAL for NULL, ESRCH for one gone. */
static int live_fiber(const xf_fiber *h, struct xf_fiber **out)
{
	if (!h)
		return EINVAL;
	*out = xf__handle_fiber(h);
	return *out ? 0 : ESRCH;
}

/* The fiber a handle names, for a join or a detach: EINVAL for NULL and
 * the first fiber (it ends only with the process), ESRCH for one gone. */
static int check_handle(const xf_fiber *h, struct xf_fiber **out)
{
	struct xf_fiber *f;
	int err;

	/* After xf_shutdown the fibers' memory is freed: a stale handle
	 * must not be read (a reviewer's join after shutdown read freed
	 * memory, and said 0). */
	if (!atomic_load_explicit(&xf__rt.running, memory_order_acquire))
		return EPERM;
	err = live_fiber(h, &f);

	if (err)
		return err;
	if (f->flags & (XF_FIBER_F_FIRST | XF_FIBER_F_IDLE))
		return EINVAL;
	*out = f;
	return 0;
}

int xf_join(xf_fiber *h, void **result)
{
	struct xf_fiber *self = xf__self_or_thread();
	struct xf_fiber *expected = NULL, *f;
	int expected_state = XF_DETACH_JOINABLE;
	int err;

	if (!self || !atomic_load_explicit(&xf__rt.running, memory_order_acquire))
		return EPERM; /* not running: h names freed memory (check_handle) */
	if (h && xf__handle_fiber(h) == self)
		return EDEADLK;
	err = check_handle(h, &f);
	if (err)
		return err;
	if (xf__cancel_point())
		return ECANCELED;
	if (xf__preempt_disabled_beyond(0) &&
	    atomic_load_explicit(&f->state, memory_order_acquire) != XF_FIBER_DONE)
		return xf__misuse_preempt_disabled("xf_join");
	if (!atomic_compare_exchange_strong(&f->detach_state, &expected_state, XF_DETACH_JOINING))
		return EINVAL; /* detached, or someone else is joining */
	xf__wait_prepare(self);
	if (!atomic_compare_exchange_strong_explicit(&f->joiner, &expected, self,
						     memory_order_acq_rel, memory_order_acquire)) {
		xf__wait_cancel(self); /* f finished first: nobody will wake us */
	} else if (xf__wait_block(self, 0, NULL, XF_WAIT_ON_JOIN, f) == XF_WAIT_CANCELED) {
		/* Cancelled: no longer the joiner, and f joinable again - unless
		 * it finished meanwhile, and found us claimed by the cancel; then
		 * the join is done, and completes. */
		expected = self;
		if (atomic_compare_exchange_strong_explicit(&f->joiner, &expected, NULL,
							    memory_order_acq_rel,
							    memory_order_acquire)) {
			atomic_store(&f->detach_state, XF_DETACH_JOINABLE);
			return ECANCELED;
		}
	}
	XF_WARN_ON(atomic_load_explicit(&f->state, memory_order_acquire) != XF_FIBER_DONE);
	if (result)
		*result = f->result;
	xf__preempt_disable(); /* the fiber cache is this worker's alone */
	xf__fiber_free(xf__this_worker(), f);
	xf__preempt_enable();
	return 0;
}

int xf_detach(xf_fiber *h)
{
	struct xf_fiber *expected = NULL, *f;
	int expected_state = XF_DETACH_JOINABLE;
	int err = check_handle(h, &f);

	if (err)
		return err;
	if (!atomic_compare_exchange_strong(&f->detach_state, &expected_state, XF_DETACH_DETACHED))
		return EINVAL;
	if (!atomic_compare_exchange_strong(&f->joiner, &expected, JOINER_DETACHED)) {
		/* It had finished already: free it here. */
		xf__preempt_disable();
		xf__fiber_free(xf__this_worker(), f);
		xf__preempt_enable();
	}
	return 0;
}

xf_fiber *xf_self(void)
{
	return xf__handle(xf__self());
}

uint64_t xf_fiber_id(const xf_fiber *h)
{
	const struct xf_fiber *f = xf__handle_fiber(h);

	return f ? f->id : 0;
}

const char *xf_fiber_name(const xf_fiber *h)
{
	const struct xf_fiber *f = xf__handle_fiber(h);
	const char *name;

	if (!f)
		return NULL;
	name = __atomic_load_n(&f->name, __ATOMIC_ACQUIRE);
	return name ? name : "";
}

int xf_fiber_set_name(xf_fiber *h, const char *name)
{
	struct xf_fiber *f;
	int err = live_fiber(h, &f);

	if (err)
		return err;
	if (!name && !f->name)
		return 0;
	return copy_name(f, name ? name : "");
}

int xf_fiber_set_batch(xf_fiber *h, bool batch)
{
	struct xf_fiber *f;
	int err = live_fiber(h, &f);

	if (err)
		return err;
	/* Read by its worker at its next preemption; a byte, so whole. */
	__atomic_store_n(&f->batch, batch, __ATOMIC_RELAXED);
	return 0;
}

int xf_worker_id(void)
{
	struct xf__worker *w = xf__this_worker();

	return w ? (int)w->id : -1;
}

int xf__sleep_on(uint64_t ns, enum xf__wait_kind kind)
{
	struct xf_fiber *self = xf__self();

	if (!self)
		return EPERM;
	if (xf__wait_kind_cancellable(kind) && xf__cancel_point())
		return ECANCELED;
	if (xf__preempt_disabled_beyond(0))
		return xf__misuse_preempt_disabled("xf_sleep_ns");
	if (!ns) {
		xf_yield();
		return 0;
	}
	xf__wait_prepare(self);
	return xf__wait_block(self, ns, NULL, kind, NULL) == XF_WAIT_CANCELED ? ECANCELED : 0;
}

int xf_sleep_ns(uint64_t ns)
{
	if (!xf__this_worker()) {
		/* A plain thread sleeps itself. */
		struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};

		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
		return 0;
	}
	return xf__sleep_on(ns, XF_WAIT_ON_SLEEP);
}

/* --- fiber-local storage --- */

/* A key is in use while its sequence number is odd; deleting and
 * re-creating it changes the number, so values set under the old key are
 * not seen under the new one. */
static struct {
	_Atomic uint64_t seq;
	void (*_Atomic destructor)(void *);
} keys[XF_KEYS_MAX];

struct fls_slot {
	uint64_t seq;
	void *value;
};

int xf_key_create(xf_key *key, void (*destructor)(void *))
{
	if (!key)
		return EINVAL;
	for (unsigned i = 0; i < XF_KEYS_MAX; i++) {
		uint64_t seq = atomic_load(&keys[i].seq);

		if ((seq & 1) || !atomic_compare_exchange_strong(&keys[i].seq, &seq, seq + 1))
			continue;
		atomic_store(&keys[i].destructor, destructor);
		*key = i;
		return 0;
	}
	return EAGAIN;
}

int xf_key_delete(xf_key key)
{
	uint64_t seq;

	if (key >= XF_KEYS_MAX)
		return EINVAL;
	seq = atomic_load(&keys[key].seq);
	if (!(seq & 1) || !atomic_compare_exchange_strong(&keys[key].seq, &seq, seq + 1))
		return EINVAL;
	return 0;
}

void *xf_getspecific(xf_key key)
{
	struct xf_fiber *self = xf__self();
	struct fls_slot *slot;

	if (!self || !self->specific || key >= XF_KEYS_MAX)
		return NULL;
	slot = (struct fls_slot *)self->specific + key;
	return slot->seq == atomic_load_explicit(&keys[key].seq, memory_order_relaxed) ? slot->value
										       : NULL;
}

int xf_setspecific(xf_key key, const void *value)
{
	struct xf_fiber *self = xf__self();
	uint64_t seq;

	if (!self)
		return EPERM;
	if (key >= XF_KEYS_MAX || !((seq = atomic_load(&keys[key].seq)) & 1))
		return EINVAL;
	if (!self->specific) {
		self->specific = calloc(XF_KEYS_MAX, sizeof(struct fls_slot));
		if (!self->specific)
			return ENOMEM;
	}
	((struct fls_slot *)self->specific)[key] = (struct fls_slot){seq, (void *)value};
	return 0;
}

void xf__fls_destroy(struct xf_fiber *f)
{
	struct fls_slot *slots = (struct fls_slot *)f->specific;

	if (!slots)
		return;
	/* Destructors may set values again; POSIX allows 4 rounds, so do we. */
	for (int round = 0; round < 4; round++) {
		bool again = false;

		for (unsigned i = 0; i < XF_KEYS_MAX; i++) {
			void (*dtor)(void *) = atomic_load(&keys[i].destructor);
			void *value = slots[i].value;

			if (!value || slots[i].seq != atomic_load(&keys[i].seq))
				continue;
			slots[i].value = NULL;
			if (dtor) {
				dtor(value);
				again = true;
			}
		}
		if (!again)
			break;
	}
	free(slots);
	f->specific = NULL;
}
