/*
 * test_frame.c - what a signal frame carries, and that rt_sigreturn loads
 * the registers from it: the two facts preemption rests on (a preempted
 * fiber's registers live in its frame until it returns from the handler,
 * src/preempt/signal.c).
 *
 * An instruction that faults (ud2) right after XMM0 - and YMM0's upper half
 * where AVX is enabled - were loaded: the SIGILL handler finds those values
 * in the frame, writes others there, and the code after the fault must see
 * the handler's values.  The frame must be an XSAVE image (FP_XSTATE_MAGIC1,
 * xfeatures, FP_XSTATE_MAGIC2 after xstate_size) exactly where CPUID says
 * the OS enabled XSAVE, and a 512-byte FXSAVE image otherwise.  Every fact
 * comes from CPUID and XGETBV read here, not from the library.  It prints
 * what it found, which is how `make check-cpus` shows qemu's frames.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>

#include "testlib.h"

/* FP_XSTATE_MAGIC1 ("FPXS") in sw_reserved says an XSAVE image follows,
 * FP_XSTATE_MAGIC2 ("FPXE") ends it (<signal.h>). */
#define SW_RESERVED_OFFSET 464
#define XMM0_OFFSET	   160
#define XSTATE_BV_OFFSET   512
#define YMM_BIT		   2
#define AMX_BITS	   ((UINT64_C(1) << 17) | (UINT64_C(1) << 18))

/* What the kernel (or an emulator) says in the frame's software-reserved bytes. */
struct sw_bytes {
	uint32_t magic1;
	uint32_t extended_size;
	uint64_t xfeatures;
	uint32_t xstate_size;
	uint32_t reserved[7];
};

static bool avx;
static uint32_t ymm_hi_offset; /* CPUID(0xD, 2).EBX */
static uint8_t loaded[32], replaced[32];
static struct sw_bytes sw;
static uint64_t xstate_bv;
static uint32_t magic2;
static int seen; /* how many of XMM0 and YMM0's upper half the frame held */

static uint64_t xgetbv0(void)
{
	uint32_t lo, hi;

	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return ((uint64_t)hi << 32) | lo;
}

static void on_sigill(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uint8_t *fp = (uint8_t *)uc->uc_mcontext.fpregs;

	(void)sig;
	(void)si;
	uc->uc_mcontext.gregs[REG_RIP] += 2; /* past the ud2 */
	if (!fp)
		return;
	memcpy(&sw, fp + SW_RESERVED_OFFSET, sizeof(sw));
	seen += !memcmp(fp + XMM0_OFFSET, loaded, 16);
	memcpy(fp + XMM0_OFFSET, replaced, 16);
	if (sw.magic1 != FP_XSTATE_MAGIC1)
		return;
	memcpy(&xstate_bv, fp + XSTATE_BV_OFFSET, sizeof(xstate_bv));
	memcpy(&magic2, fp + sw.xstate_size, sizeof(magic2));
	if (avx) {
		seen += !memcmp(fp + ymm_hi_offset, loaded + 16, 16);
		memcpy(fp + ymm_hi_offset, replaced + 16, 16);
	}
}

int main(void)
{
	struct sigaction sa = {.sa_sigaction = on_sigill, .sa_flags = SA_SIGINFO};
	unsigned eax, ebx, ecx, edx;
	uint8_t after[32];
	uint64_t xcr0 = 0;
	bool xsave;

	__cpuid(1, eax, ebx, ecx, edx);
	xsave = (ecx & bit_XSAVE) && (ecx & bit_OSXSAVE);
	if (xsave)
		xcr0 = xgetbv0();
	avx = xsave && (ecx & bit_AVX) && (xcr0 & 6) == 6;
	if (avx) {
		__cpuid_count(0xd, YMM_BIT, eax, ebx, ecx, edx);
		ymm_hi_offset = ebx;
	}
	for (int i = 0; i < 32; i++) {
		loaded[i] = (uint8_t)(0x11 * i + 1);
		replaced[i] = (uint8_t)(0xa5 ^ i);
	}
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGILL, &sa, NULL) == 0);
	memset(after, 0, sizeof(after));
	/* One asm statement: no compiler code between the load, the fault and the store. */
	if (avx)
		__asm__ volatile("vmovdqu (%0), %%ymm0\n\tud2\n\tvmovdqu %%ymm0, (%1)\n\tvzeroupper"
				 :
				 : "r"(loaded), "r"(after)
				 : "xmm0", "memory");
	else
		__asm__ volatile("movdqu (%0), %%xmm0\n\tud2\n\tmovdqu %%xmm0, (%1)"
				 :
				 : "r"(loaded), "r"(after)
				 : "xmm0", "memory");

	if (!xsave) {
		if (sw.magic1 == FP_XSTATE_MAGIC1)
			xf_test_fail("an XSAVE frame, but CPUID says the OS enabled no XSAVE");
	} else {
		if (sw.magic1 != FP_XSTATE_MAGIC1)
			xf_test_fail("an FXSAVE frame (magic 0x%x), but the OS enabled XSAVE (XCR0 0x%" PRIx64 ")",
				     sw.magic1, xcr0);
		/* Tile data is in a frame only with the process's permission. */
		if ((sw.xfeatures & ~xcr0) || (xcr0 & ~sw.xfeatures & ~AMX_BITS))
			xf_test_fail("frame xfeatures 0x%" PRIx64 ", XCR0 0x%" PRIx64, sw.xfeatures, xcr0);
		if (magic2 != FP_XSTATE_MAGIC2)
			xf_test_fail("no FP_XSTATE_MAGIC2 after xstate_size %u", sw.xstate_size);
		if (sw.extended_size < sw.xstate_size + 4)
			xf_test_fail("extended_size %u < xstate_size %u + 4", sw.extended_size,
				     sw.xstate_size);
		if (xstate_bv & ~sw.xfeatures)
			xf_test_fail("XSTATE_BV 0x%" PRIx64 " outside xfeatures 0x%" PRIx64, xstate_bv,
				     sw.xfeatures);
		if (avx && !(xstate_bv & (1u << YMM_BIT)))
			xf_test_fail("XSTATE_BV 0x%" PRIx64 " lacks AVX, which was in use", xstate_bv);
	}
	if (seen != (avx ? 2 : 1))
		xf_test_fail("the frame did not hold the values in XMM0%s", avx ? " and YMM0" : "");
	if (memcmp(after, replaced, avx ? 32 : 16))
		xf_test_fail("rt_sigreturn did not load %s from the frame", avx ? "YMM0" : "XMM0");
	if (xsave)
		printf("frame: XSAVE image, xfeatures 0x%" PRIx64 ", xstate_size %u, XSTATE_BV 0x%" PRIx64
		       " (XCR0 0x%" PRIx64 "); rt_sigreturn loaded %s from it\n",
		       sw.xfeatures, sw.xstate_size, xstate_bv, xcr0, avx ? "XMM0 and YMM0" : "XMM0");
	else
		printf("frame: FXSAVE image (no XSAVE); rt_sigreturn loaded XMM0 from it\n");
	return 0;
}
