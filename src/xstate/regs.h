/*
 * regs.h - a whole register file in memory, for tests and benchmarks that
 * must put known values into every class of extended state and read them
 * back (regs_x86_64_sysv_elf_gas.S).  Included by C and by assembly, so the
 * offsets are plain #defines; regs.c checks each against offsetof.
 */
#ifndef XF_XSTATE_REGS_H
#define XF_XSTATE_REGS_H

/* Register classes, a bit each. */
#define XF_REGS_X87    0x01 /* ST(0)-ST(7) and the x87 control word */
#define XF_REGS_SSE    0x02 /* XMM0-15 and MXCSR */
#define XF_REGS_AVX    0x04 /* YMM0-15 (the XMM halves too) */
#define XF_REGS_AVX512 0x08 /* ZMM0-31 (the YMM and XMM parts too) */
#define XF_REGS_OPMASK 0x10 /* k0-7 */
#define XF_REGS_AMX    0x20 /* TILECFG and TMM0-7 */
#define XF_REGS_ALL    0x3f

#define XF_REGS_ST	0    /* 8 slots of 16 bytes; 10-byte extended-precision values */
#define XF_REGS_FCW	128  /* uint16_t */
#define XF_REGS_MXCSR	132  /* uint32_t */
#define XF_REGS_ZMM	192  /* 32 slots of 64 bytes; XMM/YMM use the low 16/32 */
#define XF_REGS_K	2240 /* 8 x uint64_t */
#define XF_REGS_TILECFG 2304 /* 64 bytes, palette 1 */
#define XF_REGS_TILES	2368 /* 8 tiles x 16 rows x 64 bytes */
#define XF_REGS_SIZE	10560

#define XF_TILE_ROWS	      16
#define XF_TILE_BYTES_PER_ROW 64

#ifndef __ASSEMBLER__
#include <stdint.h>

struct xf__regs {
	uint8_t st[8][16];
	uint16_t fcw;
	uint16_t pad0;
	uint32_t mxcsr;
	uint8_t pad1[XF_REGS_ZMM - XF_REGS_MXCSR - 4];
	uint8_t zmm[32][64];
	uint64_t k[8];
	uint8_t tilecfg[64];
	uint8_t tiles[8][XF_TILE_ROWS * XF_TILE_BYTES_PER_ROW];
} __attribute__((aligned(64)));

/* Loads the classes in `classes` from r into the registers.  AMX needs
 * permission (xf_xstate_request_amx) first. */
void xf__regs_load(const struct xf__regs *r, unsigned classes);
/* Stores them into r.  Reading AMX needs tiles configured (XINUSE bit 17). */
void xf__regs_store(struct xf__regs *r, unsigned classes);

/* The classes this machine has (by xf__xstate). */
unsigned xf__regs_classes_available(void);

/* Fills r with pseudo-random values valid for every class (finite x87
 * values, MXCSR and control word with all exceptions masked, tiles 16x64). */
void xf__regs_randomize(struct xf__regs *r, uint64_t seed);

/* Compares the classes in `classes`; returns 0 if equal, else describes the
 * first difference in msg (class, register, expected and actual). */
int xf__regs_compare(const struct xf__regs *expected, const struct xf__regs *actual,
		     unsigned classes, char *msg, unsigned msg_size);

/* The classes a name stands for ("x87", ..., "amx", or "all" available
 * here), or 0 for an unknown name. */
unsigned xf__regs_class_parse(const char *name);

/* A name for one class ("x87", "sse", ...), or NULL. */
const char *xf__regs_class_name(unsigned cls);
#endif

#endif
