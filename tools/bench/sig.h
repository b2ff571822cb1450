/*
 * sig.h - the timed loops of `xfiber bench sig` (sig_nofp.c) and
 * what the handler saw of the signal frame.
 */
#ifndef XF_TOOLS_BENCH_SIG_H
#define XF_TOOLS_BENCH_SIG_H

#include <signal.h>
#include <stdint.h>

#include "xfiber_internal.h"

/* Written by the handler on every signal; read after a loop. */
struct xf_bench_sig_seen {
	uint64_t count;	      /* signals handled */
	uint64_t frame_bytes; /* interrupted SP minus the handler's entry SP */
	uint64_t xstate_size; /* fpstate sw_reserved.xstate_size (0: no xstate frame) */
	uint64_t xstate_bv;   /* XSTATE_BV of the frame's XSAVE image */
	uint64_t xfeatures;   /* sw_reserved.xfeatures: what the frame can hold */
};

extern volatile struct xf_bench_sig_seen xf_bench_sig_seen;

/* The handler's entry point (sig_x86_64_sysv_elf_gas.S): records its
 * entry SP, then continues in xf__bench_sig_handler. */
void xf__bench_sig_entry(int sig, siginfo_t *si, void *uc);
void xf__bench_sig_handler(int sig, siginfo_t *si, void *uc, uintptr_t entry_sp);

/* Sends sig to the calling thread n times, dirtying classes before each;
 * returns the TSC ticks taken.  Starts from init state. */
uint64_t xf_bench_sig_loop(const struct xf__regs *r, unsigned classes, uint64_t n, int sig);

/* `xfiber bench amx-sig-probe PHASE ITERATIONS` (sig.c): one phase of the
 * AMX signal rows, in a process of its own. */
int xf_bench_amx_sig_probe(int argc, char **argv);

#endif
