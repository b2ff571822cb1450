/*
 * sig_nofp.c - the signal loop and handler of `xfiber bench sig`.
 *
 * Built -mgeneral-regs-only: between dirtying the registers and the signal
 * nothing may change the state the kernel is about to save, and the handler
 * must not add vector state of its own.
 */
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <sys/ucontext.h>
#include <unistd.h>

#include "bench/sig.h"
#include "bench/state.h"
#include "bench/syscall.h"
#include "common/tsc.h"

/* struct _fpx_sw_bytes lives in the 48 spare bytes of the FXSAVE area. */
#define FPX_SW_OFFSET	   464
#define XSAVE_XSTATE_BV_AT 512

volatile struct xf_bench_sig_seen xf_bench_sig_seen;

void xf__bench_sig_handler(int sig, siginfo_t *si, void *ucv, uintptr_t entry_sp)
{
	const ucontext_t *uc = ucv;
	const uint8_t *fx = (const uint8_t *)uc->uc_mcontext.fpregs;

	(void)sig;
	(void)si;
	xf_bench_sig_seen.frame_bytes = (uint64_t)uc->uc_mcontext.gregs[REG_RSP] - entry_sp;
	if (fx && *(const uint32_t *)(fx + FPX_SW_OFFSET) == FP_XSTATE_MAGIC1) {
		xf_bench_sig_seen.xfeatures = *(const uint64_t *)(fx + FPX_SW_OFFSET + 8);
		xf_bench_sig_seen.xstate_size = *(const uint32_t *)(fx + FPX_SW_OFFSET + 16);
		xf_bench_sig_seen.xstate_bv = *(const uint64_t *)(fx + XSAVE_XSTATE_BV_AT);
	} else {
		xf_bench_sig_seen.xstate_size = 0;
		xf_bench_sig_seen.xstate_bv = 0;
	}
	xf_bench_sig_seen.count++;
}

uint64_t xf_bench_sig_loop(const struct xf__regs *r, unsigned classes, uint64_t n, int sig)
{
	const long pid = getpid(), tid = gettid();
	uint64_t t0, t1;

	/* glibc (sigaction, getpid) may have left vector state live; start from none. */
	xf_bench_state_init();
	t0 = xf_tsc_read();
	for (uint64_t i = 0; i < n; i++) {
		xf_bench_touch(r, classes);
		/* Not glibc's tgkill: it is not known to stay off vector registers. */
		xf_bench_sys(SYS_tgkill, pid, tid, sig, 0);
	}
	t1 = xf_tsc_read();
	xf_bench_state_init();
	return t1 - t0;
}
