/*
 * discover.c - what extended state this CPU and kernel provide, read once.
 *
 * Sources: CPUID leaf 1 (XSAVE, OSXSAVE), leaf 7 (AMX), leaf 0xD (component
 * sizes, offsets, alignment, XFD, and the XSAVEOPT/XSAVEC/XGETBV1/XSAVES/XFD
 * flags), XGETBV(0) for XCR0, getauxval(AT_MINSIGSTKSZ) for the kernel's
 * signal frame, and arch_prctl(ARCH_GET_XCOMP_PERM) for AMX permission.
 *
 * The strategy is chosen here, once, in a constructor: XFIBER_XSAVE forces
 * one, otherwise the first supported of XSAVEOPT, XSAVEC, XSAVE, FXSAVE.
 * XSAVEOPT comes first because a save into the buffer the last restore came
 * from - the pattern of every context switch - skips what was not modified
 * since: its save+restore pair is the cheapest on both AMD Zen 4 and
 * Sapphire Rapids (`xfiber info --costs`, docs/xstate.md).  The price is one
 * rule for callers, stated in xfiber.h.
 *
 * XFIBER_CPUID_DISABLE=name[,name...] hides CPU features from discovery, as
 * the kernel's clearcpuid= does, so the fallbacks can be exercised on a CPU
 * that has everything: xsave, xsaveopt, xsavec, xgetbv1, avx, avx512, amx.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/compiler.h"
#include "xstate/xstate.h"

#ifndef AT_MINSIGSTKSZ
#define AT_MINSIGSTKSZ 51
#endif
#define ARCH_GET_XCOMP_SUPP 0x1021
#define ARCH_GET_XCOMP_PERM 0x1022
#define ARCH_REQ_XCOMP_PERM 0x1023

struct xf__xstate xf__xstate;

/* Feature bits discovery can be told to ignore (XFIBER_CPUID_DISABLE). */
enum {
	HIDE_XSAVE = 1 << 0,
	HIDE_XSAVEOPT = 1 << 1,
	HIDE_XSAVEC = 1 << 2,
	HIDE_XGETBV1 = 1 << 3,
	HIDE_AVX = 1 << 4,
	HIDE_AVX512 = 1 << 5,
	HIDE_AMX = 1 << 6,
};

static const struct {
	const char *name;
	unsigned flag;
} hideable[] = {
    {"xsave", HIDE_XSAVE},     {"xsaveopt", HIDE_XSAVEOPT}, {"xsavec", HIDE_XSAVEC},
    {"xgetbv1", HIDE_XGETBV1}, {"avx", HIDE_AVX},	    {"avx512", HIDE_AVX512},
    {"amx", HIDE_AMX},
};

static const char *const component_names[XF_XFEATURE_MAX] = {
    [XF_XFEATURE_X87] = "x87 floating point",
    [XF_XFEATURE_SSE] = "SSE",
    [XF_XFEATURE_YMM] = "AVX",
    [XF_XFEATURE_BNDREGS] = "MPX bounds registers",
    [XF_XFEATURE_BNDCSR] = "MPX CSR",
    [XF_XFEATURE_OPMASK] = "AVX-512 opmask",
    [XF_XFEATURE_ZMM_HI256] = "AVX-512 ZMM_Hi256",
    [XF_XFEATURE_HI16_ZMM] = "AVX-512 Hi16_ZMM",
    [8] = "Processor Trace",
    [XF_XFEATURE_PKRU] = "Protection Keys User registers",
    [10] = "PASID",
    [11] = "CET user",
    [12] = "CET supervisor",
    [13] = "HDC",
    [14] = "UINTR",
    [15] = "LBR",
    [16] = "HWP",
    [XF_XFEATURE_XTILECFG] = "AMX Tile config",
    [XF_XFEATURE_XTILEDATA] = "AMX Tile data",
    [XF_XFEATURE_APX] = "APX registers",
};

static unsigned parse_hidden(const char *list)
{
	unsigned hidden = 0;

	if (!list)
		return 0;
	while (*list) {
		size_t len = strcspn(list, ",");
		for (size_t i = 0; i < XF_ARRAY_SIZE(hideable); i++) {
			if (strlen(hideable[i].name) == len &&
			    !strncmp(list, hideable[i].name, len))
				hidden |= hideable[i].flag;
		}
		list += len;
		if (*list == ',')
			list++;
	}
	return hidden;
}

/* XCR0 as this library will use it: the OS-enabled user features, less any hidden. */
static uint64_t hidden_features(unsigned hidden)
{
	uint64_t mask = 0;

	if (hidden & (HIDE_AVX | HIDE_XSAVE))
		mask |= XF_XFEATURE_MASK(XF_XFEATURE_YMM);
	if (hidden & (HIDE_AVX512 | HIDE_AVX | HIDE_XSAVE))
		mask |= XF_XFEATURE_MASK_AVX512;
	if (hidden & (HIDE_AMX | HIDE_XSAVE))
		mask |= XF_XFEATURE_MASK_AMX;
	return mask;
}

static void discover_components(xf_xstate_info *info)
{
	uint32_t compacted = XSAVE_EXTENDED_OFFSET;
	unsigned eax, ebx, ecx, edx;

	info->ncomponents = 0;
	for (unsigned bit = 0; bit < XF_XFEATURE_MAX; bit++) {
		xf_xstate_component *c;

		if (!(info->xcr0 & XF_XFEATURE_MASK(bit)))
			continue;
		c = &info->components[info->ncomponents++];
		c->bit = bit;
		c->name = component_names[bit] ? component_names[bit] : "unknown";
		if (bit == XF_XFEATURE_X87 || bit == XF_XFEATURE_SSE) {
			/* Both live in the 512-byte legacy region at fixed places. */
			c->offset = bit == XF_XFEATURE_X87 ? 0 : 160;
			c->size = bit == XF_XFEATURE_X87 ? 160 : 256;
			c->compacted_offset = c->offset;
			continue;
		}
		__cpuid_count(0xd, bit, eax, ebx, ecx, edx);
		c->size = eax;
		c->offset = ebx;
		c->align64 = ecx & (1u << 1);
		c->xfd = ecx & (1u << 2);
		if (c->align64)
			compacted = XF_ALIGN_UP(compacted, 64);
		c->compacted_offset = compacted;
		compacted += c->size;
	}
	info->size_compacted = compacted;
	/* CPUID(0xD,0).EBX is the standard size for what XCR0 enables now; it
	 * would include hidden features, so derive the size from the components. */
	info->size_standard = XSAVE_EXTENDED_OFFSET;
	for (unsigned i = 0; i < info->ncomponents; i++) {
		const xf_xstate_component *c = &info->components[i];
		if (c->offset + c->size > info->size_standard)
			info->size_standard = c->offset + c->size;
	}
}

static void discover(xf_xstate_info *info, unsigned hidden)
{
	unsigned eax, ebx, ecx, edx;
	bool osxsave;

	__cpuid(1, eax, ebx, ecx, edx);
	osxsave = (ecx & bit_XSAVE) && (ecx & bit_OSXSAVE);
	info->has_xsave = osxsave && !(hidden & HIDE_XSAVE);
	if (!osxsave) {
		/* FXSAVE-only machine: x87 and SSE, in the 512-byte legacy image. */
		info->xcr0 = XF_XFEATURE_MASK(XF_XFEATURE_X87) | XF_XFEATURE_MASK(XF_XFEATURE_SSE);
		discover_components(info);
		info->size_standard = info->size_compacted = XSAVE_LEGACY_SIZE;
		return;
	}
	info->xcr0 = xf__xgetbv(0) & ~hidden_features(hidden);
	if (!info->has_xsave)
		info->xcr0 &= XF_XFEATURE_MASK(XF_XFEATURE_X87) | XF_XFEATURE_MASK(XF_XFEATURE_SSE);

	__cpuid_count(0xd, 1, eax, ebx, ecx, edx);
	info->has_xsaveopt = info->has_xsave && (eax & (1u << 0)) && !(hidden & HIDE_XSAVEOPT);
	info->has_xsavec = info->has_xsave && (eax & (1u << 1)) && !(hidden & HIDE_XSAVEC);
	info->has_xgetbv1 = (eax & (1u << 2)) && !(hidden & HIDE_XGETBV1);
	info->has_xsaves = info->has_xsave && (eax & (1u << 3));
	info->has_xfd = eax & (1u << 4);
	info->has_amx = (info->xcr0 & XF_XFEATURE_MASK_AMX) == XF_XFEATURE_MASK_AMX;
	discover_components(info);
}

uint32_t xf__xstate_component_bytes(uint64_t mask)
{
	const xf_xstate_info *info = &xf__xstate.info;
	uint32_t bytes = 0;

	for (unsigned i = 0; i < info->ncomponents; i++) {
		if (mask & XF_XFEATURE_MASK(info->components[i].bit))
			bytes += info->components[i].size;
	}
	return bytes;
}

xf_xsave_strategy xf__xsave_strategy_parse(const char *name)
{
	for (xf_xsave_strategy s = XF_XSAVE_XSAVEOPT; s <= XF_XSAVE_FXSAVE; s++) {
		if (!strcmp(name, xf_xsave_strategy_name(s)))
			return s;
	}
	return XF_XSAVE_NONE;
}

bool xf__xsave_strategy_supported(xf_xsave_strategy s)
{
	const xf_xstate_info *info = &xf__xstate.info;

	switch (s) {
	case XF_XSAVE_XSAVEOPT: return info->has_xsaveopt;
	case XF_XSAVE_XSAVEC: return info->has_xsavec;
	case XF_XSAVE_XSAVE: return info->has_xsave;
	case XF_XSAVE_FXSAVE: return true; /* every x86-64 CPU has FXSAVE */
	default: return false;
	}
}

uint32_t xf__xsave_strategy_size(xf_xsave_strategy s)
{
	switch (s) {
	case XF_XSAVE_XSAVEC: return xf__xstate.info.size_compacted;
	case XF_XSAVE_XSAVEOPT:
	case XF_XSAVE_XSAVE: return xf__xstate.info.size_standard;
	case XF_XSAVE_FXSAVE: return XSAVE_LEGACY_SIZE;
	default: return 0;
	}
}

static void choose_strategy(struct xf__xstate *xs)
{
	static const xf_xsave_strategy preference[] = {XF_XSAVE_XSAVEOPT, XF_XSAVE_XSAVEC,
						       XF_XSAVE_XSAVE, XF_XSAVE_FXSAVE};
	const char *forced = getenv("XFIBER_XSAVE");
	xf_xsave_strategy s = XF_XSAVE_NONE;

	if (forced && *forced) {
		s = xf__xsave_strategy_parse(forced);
		if (s == XF_XSAVE_NONE) {
			snprintf(xs->strategy_error, sizeof(xs->strategy_error),
				 "XFIBER_XSAVE=%s: unknown strategy (expected xsaveopt, xsavec, "
				 "xsave or fxsave)",
				 forced);
			xs->engine.error = EINVAL;
		} else if (!xf__xsave_strategy_supported(s)) {
			snprintf(xs->strategy_error, sizeof(xs->strategy_error),
				 "XFIBER_XSAVE=%s: this CPU or kernel does not support %s", forced,
				 forced);
			xs->engine.error = ENOTSUP;
			s = XF_XSAVE_NONE;
		}
	} else {
		for (size_t i = 0; i < XF_ARRAY_SIZE(preference); i++) {
			if (xf__xsave_strategy_supported(preference[i])) {
				s = preference[i];
				break;
			}
		}
	}
	xs->engine.strategy = s;
	xs->engine.save_size = xf__xsave_strategy_size(s);
}

/* MXCSR_MASK from an FXSAVE image; 0 there means the architectural 0xffbf. */
static uint32_t read_mxcsr_mask(void)
{
	uint8_t image[XSAVE_LEGACY_SIZE] __attribute__((aligned(16))) = {0};
	uint32_t mask;

	xf__fxsave(image);
	memcpy(&mask, image + FXSAVE_MXCSR_MASK_OFFSET, sizeof(mask));
	return mask ? mask : 0xffbf;
}

static uint64_t read_xcomp_perm(void)
{
	uint64_t perm = 0;

	if (syscall(SYS_arch_prctl, ARCH_GET_XCOMP_PERM, &perm) != 0)
		return 0;
	return perm;
}

__attribute__((constructor(101))) static void xf__xstate_setup(void)
{
	struct xf__xstate *xs = &xf__xstate;
	xf_xstate_info *info = &xs->info;

	discover(info, parse_hidden(getenv("XFIBER_CPUID_DISABLE")));
	info->min_sigstksz = getauxval(AT_MINSIGSTKSZ);
	xs->engine.xcr0 = info->xcr0;
	xs->engine.has_xgetbv1 = info->has_xgetbv1;
	xs->engine.mxcsr_mask = read_mxcsr_mask();
	choose_strategy(xs);
	info->strategy = xs->engine.strategy;
	info->strategy_name = xf_xsave_strategy_name(xs->engine.strategy);
	info->strategy_error = xs->strategy_error[0] ? xs->strategy_error : NULL;
	info->save_size = xs->engine.save_size;
	xs->amx_granted = info->has_amx && (read_xcomp_perm() & XF_XFEATURE_MASK_AMX) ==
						   XF_XFEATURE_MASK_AMX;
}

const char *xf_xsave_strategy_name(xf_xsave_strategy s)
{
	switch (s) {
	case XF_XSAVE_XSAVEOPT: return "xsaveopt";
	case XF_XSAVE_XSAVEC: return "xsavec";
	case XF_XSAVE_XSAVE: return "xsave";
	case XF_XSAVE_FXSAVE: return "fxsave";
	default: return "none";
	}
}

int xf_xstate_info_get(xf_xstate_info *out)
{
	if (!out)
		return EINVAL;
	*out = xf__xstate.info;
	out->xinuse = xf_xstate_inuse();
	out->xcomp_perm = read_xcomp_perm();
	out->amx_permitted =
	    out->has_amx && (out->xcomp_perm & XF_XFEATURE_MASK_AMX) == XF_XFEATURE_MASK_AMX;
	return 0;
}

int xf_xstate_request_amx(void)
{
	uint64_t supported = 0;

	if (!xf__xstate.info.has_amx)
		return ENOTSUP;
	if (syscall(SYS_arch_prctl, ARCH_GET_XCOMP_SUPP, &supported) != 0)
		return errno == EINVAL ? ENOTSUP : errno; /* kernel older than 5.16 */
	if (!(supported & XF_XFEATURE_MASK(XF_XFEATURE_XTILEDATA)))
		return ENOTSUP;
	if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XF_XFEATURE_XTILEDATA) != 0)
		return errno;
	__atomic_store_n(&xf__xstate.amx_granted, true, __ATOMIC_RELAXED);
	return 0;
}
