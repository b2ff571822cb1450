/*
 * ctx_nofp.c - the timed ping-pong loops of `xfiber bench ctx`: kernel
 * tasks over a pipe, a futex or sched_yield, and the user-level peers (glibc
 * swapcontext, Boost.Context fcontext).
 *
 * Built -mgeneral-regs-only, with system calls made directly: between one
 * switch and the next the only vector state is what --state dirties, so the
 * kernel saves and restores exactly that.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "bench/ctx.h"
#include "bench/state.h"
#include "bench/syscall.h"
#include "common/tsc.h"
#include "xfiber.h"

static long futex_op(uint32_t *word, int op, uint32_t val, bool shared)
{
	return xf_bench_sys(SYS_futex, (long)word, op | (shared ? 0 : FUTEX_PRIVATE_FLAG), val, 0);
}

static uint32_t load(uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void store(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* One message through a pipe end: a byte by raw system call, as
 * context_switch2 sends; or an int through glibc, as perf bench sched pipe
 * does (glibc's cancellation-point wrappers cost measurably more here).
 * 0, or the errno. */
static int pipe_io(const struct xf_ctx_shared *sh, bool out, int fd)
{
	int m = 0;
	long r;

	if (sh->libc) {
		r = out ? write(fd, &m, sizeof(m)) : read(fd, &m, sizeof(m));
		return r == sizeof(m) ? 0 : r < 0 ? errno : EPIPE;
	}
	r = xf_bench_sys(out ? SYS_write : SYS_read, fd, (long)&m, 1, 0);
	return r == 1 ? 0 : r < 0 ? (int)-r : EPIPE;
}

static int side0(struct xf_ctx_shared *sh, const struct xf__regs *r, unsigned classes)
{
	const bool shared = sh->process;
	int err = 0;

	for (uint64_t i = 0; i < sh->iters && !err; i++) {
		switch (sh->test) {
		case XF_CTX_PIPE:
			err = pipe_io(sh, true, sh->a_to_b[1]);
			xf_bench_touch(r, classes);
			if (!err)
				err = pipe_io(sh, false, sh->b_to_a[0]);
			xf_bench_touch(r, classes);
			break;
		case XF_CTX_FUTEX:
			store(&sh->turn, 1);
			futex_op(&sh->turn, FUTEX_WAKE, 1, shared);
			xf_bench_touch(r, classes);
			while (load(&sh->turn) == 1)
				futex_op(&sh->turn, FUTEX_WAIT, 1, shared);
			xf_bench_touch(r, classes);
			break;
		default:
			xf_bench_sys(SYS_sched_yield, 0, 0, 0, 0);
			xf_bench_touch(r, classes);
			break;
		}
	}
	return err;
}

static int side1(struct xf_ctx_shared *sh, const struct xf__regs *r, unsigned classes)
{
	const bool shared = sh->process;
	int err = 0;

	if (sh->test == XF_CTX_YIELD) {
		/* Yield until side 0 has made its count, so it never yields alone. */
		while (!load(&sh->stop)) {
			xf_bench_sys(SYS_sched_yield, 0, 0, 0, 0);
			xf_bench_touch(r, classes);
		}
		return 0;
	}
	for (uint64_t i = 0; i < sh->iters && !err; i++) {
		if (sh->test == XF_CTX_PIPE) {
			err = pipe_io(sh, false, sh->a_to_b[0]);
			xf_bench_touch(r, classes);
			if (!err)
				err = pipe_io(sh, true, sh->b_to_a[1]);
			xf_bench_touch(r, classes);
		} else {
			while (load(&sh->turn) == 0)
				futex_op(&sh->turn, FUTEX_WAIT, 0, shared);
			xf_bench_touch(r, classes);
			store(&sh->turn, 0);
			futex_op(&sh->turn, FUTEX_WAKE, 1, shared);
			xf_bench_touch(r, classes);
		}
	}
	return err;
}

/* This thread's context switches so far, voluntary (it blocked) or not (it
 * yielded or was preempted): whether a loop really switched, and how often. */
static uint64_t switches(void)
{
	struct rusage ru;

	if (xf_bench_sys(SYS_getrusage, RUSAGE_THREAD, (long)&ru, 0, 0))
		return 0;
	return (uint64_t)ru.ru_nvcsw + (uint64_t)ru.ru_nivcsw;
}

int xf_ctx_side(struct xf_ctx_shared *sh, int side)
{
	const struct xf__regs *r = &sh->regs[side];
	uint64_t csw;
	int err;

	/* Both sides start together: a side that ran alone would not switch. */
	__atomic_add_fetch(&sh->ready, 1, __ATOMIC_ACQ_REL);
	while (load(&sh->ready) < 2)
		xf_bench_sys(SYS_sched_yield, 0, 0, 0, 0);
	if (!sh->libc)
		xf_bench_state_init();
	csw = switches();
	if (side == 0) {
		sh->t0 = xf_tsc_read();
		err = side0(sh, r, sh->classes);
		sh->t1 = xf_tsc_read();
		store(&sh->stop, 1);
	} else {
		err = side1(sh, r, sh->classes);
	}
	sh->xinuse[side] = xf_xstate_inuse();
	sh->csw[side] = switches() - csw;
	if (!sh->libc)
		xf_bench_state_init();
	sh->error[side] = err;
	return err ? 1 : 0;
}

/* The peers run in one thread; their second context reads these. */
static const struct xf__regs *peer_regs;
static unsigned peer_classes;
static ucontext_t main_uc, peer_uc;

static void swapcontext_peer(void)
{
	for (;;) {
		xf_bench_touch(peer_regs, peer_classes);
		swapcontext(&peer_uc, &main_uc);
	}
}

uint64_t xf_ctx_swapcontext_loop(const struct xf__regs *r, unsigned classes, uint64_t n,
				 void *stack, size_t stack_size)
{
	uint64_t t0, t1;

	peer_regs = r;
	peer_classes = classes;
	getcontext(&peer_uc);
	peer_uc.uc_stack.ss_sp = stack;
	peer_uc.uc_stack.ss_size = stack_size;
	peer_uc.uc_link = NULL;
	makecontext(&peer_uc, swapcontext_peer, 0);
	xf_bench_state_init();
	t0 = xf_tsc_read();
	for (uint64_t i = 0; i < n; i++) {
		swapcontext(&main_uc, &peer_uc);
		xf_bench_touch(r, classes);
	}
	t1 = xf_tsc_read();
	xf_bench_state_init();
	return t1 - t0;
}

#ifdef XF_HAVE_BOOST_CONTEXT
/* Boost.Context's C ABI (boost/context/detail/fcontext.hpp), called from C. */
typedef void *fcontext_t;
struct transfer_t {
	fcontext_t fctx;
	void *data;
};
struct transfer_t jump_fcontext(fcontext_t const to, void *vp);
fcontext_t make_fcontext(void *sp, size_t size, void (*fn)(struct transfer_t));

static void fcontext_peer(struct transfer_t t)
{
	for (;;) {
		xf_bench_touch(peer_regs, peer_classes);
		t = jump_fcontext(t.fctx, NULL);
	}
}

uint64_t xf_ctx_fcontext_loop(const struct xf__regs *r, unsigned classes, uint64_t n, void *stack,
			      size_t stack_size)
{
	fcontext_t peer = make_fcontext((char *)stack + stack_size, stack_size, fcontext_peer);
	uint64_t t0, t1;

	peer_regs = r;
	peer_classes = classes;
	xf_bench_state_init();
	t0 = xf_tsc_read();
	for (uint64_t i = 0; i < n; i++) {
		peer = jump_fcontext(peer, NULL).fctx;
		xf_bench_touch(r, classes);
	}
	t1 = xf_tsc_read();
	xf_bench_state_init();
	return t1 - t0;
}
#endif
