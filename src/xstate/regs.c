/* regs.c - random register files and their comparison, for tests and benchmarks. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "common/compiler.h"
#include "xstate/regs.h"
#include "xstate/xstate.h"

/* The assembly uses the #defines; a layout change that forgets one fails here. */
_Static_assert(offsetof(struct xf__regs, st) == XF_REGS_ST, "regs.h: ST");
_Static_assert(offsetof(struct xf__regs, fcw) == XF_REGS_FCW, "regs.h: FCW");
_Static_assert(offsetof(struct xf__regs, mxcsr) == XF_REGS_MXCSR, "regs.h: MXCSR");
_Static_assert(offsetof(struct xf__regs, zmm) == XF_REGS_ZMM, "regs.h: ZMM");
_Static_assert(offsetof(struct xf__regs, k) == XF_REGS_K, "regs.h: K");
_Static_assert(offsetof(struct xf__regs, tilecfg) == XF_REGS_TILECFG, "regs.h: TILECFG");
_Static_assert(offsetof(struct xf__regs, tiles) == XF_REGS_TILES, "regs.h: TILES");
_Static_assert(sizeof(struct xf__regs) == XF_REGS_SIZE, "regs.h: size");

static const char *const class_names[] = {"x87", "sse", "avx", "avx512", "opmask", "amx"};

const char *xf__regs_class_name(unsigned cls)
{
	for (unsigned i = 0; i < XF_ARRAY_SIZE(class_names); i++) {
		if (cls == 1u << i)
			return class_names[i];
	}
	return NULL;
}

unsigned xf__regs_class_parse(const char *name)
{
	if (!strcmp(name, "all"))
		return xf__regs_classes_available();
	for (unsigned c = 1; c <= XF_REGS_AMX; c <<= 1) {
		if (!strcmp(name, xf__regs_class_name(c)))
			return c;
	}
	return 0;
}

unsigned xf__regs_classes_available(void)
{
	uint64_t xcr0 = xf__xstate.info.xcr0;
	unsigned classes = XF_REGS_X87 | XF_REGS_SSE;

	if (xcr0 & XF_XFEATURE_MASK(XF_XFEATURE_YMM))
		classes |= XF_REGS_AVX;
	if ((xcr0 & XF_XFEATURE_MASK_AVX512) == XF_XFEATURE_MASK_AVX512)
		classes |= XF_REGS_AVX512 | XF_REGS_OPMASK;
	if ((xcr0 & XF_XFEATURE_MASK_AMX) == XF_XFEATURE_MASK_AMX)
		classes |= XF_REGS_AMX;
	return classes;
}

static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static void fill_random(void *p, size_t n, uint64_t *state)
{
	uint8_t *b = p;

	for (size_t i = 0; i < n; i += 8) {
		uint64_t v = splitmix64(state);
		memcpy(b + i, &v, n - i < 8 ? n - i : 8);
	}
}

void xf__regs_randomize(struct xf__regs *r, uint64_t seed)
{
	uint64_t state = seed;

	memset(r, 0, sizeof(*r));
	for (int i = 0; i < 8; i++) {
		/* A normal extended-precision value: explicit integer bit set,
		 * exponent neither 0 nor 0x7fff, so FLD/FSTP keep it bit-exact. */
		uint64_t mantissa = splitmix64(&state) | (UINT64_C(1) << 63);
		uint16_t sign_exp = (uint16_t)(1 + splitmix64(&state) % 0x7ffe);
		sign_exp |= (uint16_t)((splitmix64(&state) & 1) << 15);
		memcpy(r->st[i], &mantissa, 8);
		memcpy(r->st[i] + 8, &sign_exp, 2);
	}
	/* Exceptions masked (bits 0-5), precision and rounding random (8-11). */
	r->fcw = (uint16_t)(0x003f | 0x0040 | ((splitmix64(&state) & 0xf) << 8));
	/* Exceptions masked (bits 7-12), rounding, FTZ, DAZ random. */
	r->mxcsr = (uint32_t)(0x1f80 | (splitmix64(&state) & 0xe040));
	fill_random(r->zmm, sizeof(r->zmm), &state);
	fill_random(r->k, sizeof(r->k), &state);
	/* Palette 1, every tile 16 rows of 64 bytes. */
	r->tilecfg[0] = 1;
	for (int t = 0; t < 8; t++) {
		uint16_t colsb = XF_TILE_BYTES_PER_ROW;
		memcpy(&r->tilecfg[16 + 2 * t], &colsb, 2);
		r->tilecfg[48 + t] = XF_TILE_ROWS;
	}
	fill_random(r->tiles, sizeof(r->tiles), &state);
}

static void hex(char *out, size_t out_size, const uint8_t *p, size_t n)
{
	size_t used = 0;

	/* Most significant byte first, as a register is written. */
	for (size_t i = n; i-- > 0 && used + 3 < out_size;)
		used += (size_t)snprintf(out + used, out_size - used, "%02x", p[i]);
}

static int differ(char *msg, unsigned msg_size, const char *cls, const char *reg, int idx,
		  const void *want, const void *got, size_t n)
{
	char w[300], g[300], name[32];

	if (!memcmp(want, got, n))
		return 0;
	hex(w, sizeof(w), want, n);
	hex(g, sizeof(g), got, n);
	if (idx >= 0)
		snprintf(name, sizeof(name), "%s%d", reg, idx);
	else
		snprintf(name, sizeof(name), "%s", reg);
	snprintf(msg, msg_size, "class %s, register %s: expected 0x%s, actual 0x%s", cls, name, w,
		 g);
	return 1;
}

int xf__regs_compare(const struct xf__regs *e, const struct xf__regs *a, unsigned classes,
		     char *msg, unsigned msg_size)
{
	if (classes & XF_REGS_X87) {
		if (differ(msg, msg_size, "x87", "fcw", -1, &e->fcw, &a->fcw, 2))
			return 1;
		for (int i = 0; i < 8; i++) {
			if (differ(msg, msg_size, "x87", "st", i, e->st[i], a->st[i], 10))
				return 1;
		}
	}
	if ((classes & XF_REGS_SSE) &&
	    differ(msg, msg_size, "sse", "mxcsr", -1, &e->mxcsr, &a->mxcsr, 4))
		return 1;
	if (classes & XF_REGS_AVX512) {
		for (int i = 0; i < 32; i++) {
			if (differ(msg, msg_size, "avx512", "zmm", i, e->zmm[i], a->zmm[i], 64))
				return 1;
		}
	} else if (classes & XF_REGS_AVX) {
		for (int i = 0; i < 16; i++) {
			if (differ(msg, msg_size, "avx", "ymm", i, e->zmm[i], a->zmm[i], 32))
				return 1;
		}
	} else if (classes & XF_REGS_SSE) {
		for (int i = 0; i < 16; i++) {
			if (differ(msg, msg_size, "sse", "xmm", i, e->zmm[i], a->zmm[i], 16))
				return 1;
		}
	}
	if (classes & XF_REGS_OPMASK) {
		for (int i = 0; i < 8; i++) {
			if (differ(msg, msg_size, "opmask", "k", i, &e->k[i], &a->k[i], 8))
				return 1;
		}
	}
	if (classes & XF_REGS_AMX) {
		if (differ(msg, msg_size, "amx", "tilecfg", -1, e->tilecfg, a->tilecfg, 64))
			return 1;
		for (int t = 0; t < 8; t++) {
			for (int row = 0; row < XF_TILE_ROWS; row++) {
				char reg[32];
				const size_t off = (size_t)row * XF_TILE_BYTES_PER_ROW;
				snprintf(reg, sizeof(reg), "tmm%d.row", t);
				if (differ(msg, msg_size, "amx", reg, row, e->tiles[t] + off,
					   a->tiles[t] + off, XF_TILE_BYTES_PER_ROW))
					return 1;
			}
		}
	}
	return 0;
}
