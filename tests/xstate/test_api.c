/*
 * test_api.c - the engine's answers to bad input: clear errnos, nothing
 * written out of bounds, no fault on a corrupted image.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/compiler.h"
#include "testlib.h"
#include "xfiber.h"
#include "xstate/xstate.h"

#define GUARD	256
#define PATTERN 0x5a

static void check_untouched(const uint8_t *p, size_t n, const char *what)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] != PATTERN)
			xf_test_fail("%s: byte %zu was written", what, i);
	}
}

int main(void)
{
	xf_xstate_info info;
	const size_t size = xf_xstate_size();
	const size_t total = GUARD + XF_ALIGN_UP(size, 64) + GUARD;
	uint8_t *area = aligned_alloc(64, total);
	uint8_t *buf = area + GUARD;

	CHECK(area);
	CHECK_ERR(xf_xstate_info_get(NULL), EINVAL);
	CHECK_ERR(xf_xstate_info_get(&info), 0);
	if (getenv("XFIBER_XSAVE"))
		xf_test_require_strategy(getenv("XFIBER_XSAVE"));
	if (info.strategy == XF_XSAVE_NONE)
		xf_test_fail("no strategy: %s", info.strategy_error);
	CHECK(size == info.save_size && size > 0);

	/* Misaligned, NULL and too small: an errno, and not one byte written. */
	memset(area, PATTERN, total);
	CHECK_ERR(xf_xstate_save(NULL, size), EINVAL);
	CHECK_ERR(xf_xstate_save(buf + 8, size), EINVAL);
	CHECK_ERR(xf_xstate_save(buf + 32, size), EINVAL);
	CHECK_ERR(xf_xstate_save(buf, size - 1), ERANGE);
	CHECK_ERR(xf_xstate_save(buf, 0), ERANGE);
	CHECK_ERR(xf_xstate_restore(NULL, size), EINVAL);
	CHECK_ERR(xf_xstate_restore(buf + 16, size), EINVAL);
	CHECK_ERR(xf_xstate_restore(buf, size - 1), ERANGE);
	check_untouched(area, total, "rejected calls");
	CHECK(xf_xstate_image_features(NULL) == 0);
	CHECK(xf_xstate_image_features(buf + 1) == 0);

	/* A good save writes only inside [buf, buf + size). */
	CHECK_ERR(xf_xstate_save(buf, size), 0);
	check_untouched(area, GUARD, "bytes before the buffer");
	check_untouched(buf + size, GUARD + XF_ALIGN_UP(size, 64) - size, "bytes after the buffer");
	CHECK_ERR(xf_xstate_restore(buf, size), 0);

	if (info.strategy != XF_XSAVE_FXSAVE) {
		struct xsave_header *h = (struct xsave_header *)(buf + XSAVE_HEADER_OFFSET);
		struct xsave_header good;
		uint32_t mxcsr;

		CHECK(xf_xstate_image_features(buf) == h->xstate_bv);
		CHECK((h->xstate_bv & ~info.xcr0) == 0);
		memcpy(&good, h, sizeof(good));
		/* Each of these would make XRSTOR raise #GP: refused instead. */
		h->reserved[3] = 1;
		CHECK_ERR(xf_xstate_restore(buf, size), EINVAL);
		memcpy(h, &good, sizeof(good));
		h->xstate_bv |= UINT64_C(1) << 62;
		CHECK_ERR(xf_xstate_restore(buf, size), EINVAL);
		memcpy(h, &good, sizeof(good));
		h->xcomp_bv ^= (info.strategy == XF_XSAVE_XSAVEC) ? 1 : 4;
		CHECK_ERR(xf_xstate_restore(buf, size), EINVAL);
		memcpy(h, &good, sizeof(good));
		memcpy(&mxcsr, buf + FXSAVE_MXCSR_OFFSET, 4);
		memcpy(buf + FXSAVE_MXCSR_OFFSET, &(uint32_t){0xffffffffu}, 4);
		CHECK_ERR(xf_xstate_restore(buf, size), EINVAL);
		memcpy(buf + FXSAVE_MXCSR_OFFSET, &mxcsr, 4);
		CHECK_ERR(xf_xstate_restore(buf, size), 0);
	}

	/* Init helpers: x87/SSE and unknown components are refused; without
	 * XSAVE there is nothing they can do, and they say so first. */
	CHECK_ERR(xf_xstate_init_components(XF_XFEATURE_MASK(XF_XFEATURE_X87)),
		  info.has_xsave ? EINVAL : ENOTSUP);
	CHECK_ERR(xf_xstate_init_components(XF_XFEATURE_MASK(XF_XFEATURE_SSE)),
		  info.has_xsave ? EINVAL : ENOTSUP);
	CHECK_ERR(xf_xstate_init_components(UINT64_C(1) << 62), info.has_xsave ? EINVAL : ENOTSUP);
	CHECK_ERR(xf_xstate_init_components(0), info.has_xsave ? 0 : ENOTSUP);
	if ((info.xcr0 & XF_XFEATURE_MASK_AVX512) == XF_XFEATURE_MASK_AVX512) {
		CHECK_ERR(xf_xstate_init_components(XF_XFEATURE_MASK(XF_XFEATURE_OPMASK) |
						    XF_XFEATURE_MASK(XF_XFEATURE_HI16_ZMM)),
			  0);
		if (info.has_xgetbv1)
			CHECK((xf_xstate_inuse() & (XF_XFEATURE_MASK(XF_XFEATURE_OPMASK) |
						    XF_XFEATURE_MASK(XF_XFEATURE_HI16_ZMM))) == 0);
	}
	/* MXCSR survives the init helper, even when AVX (which makes XRSTOR load
	 * MXCSR from the image) is among the components. */
	if (info.xcr0 & XF_XFEATURE_MASK(XF_XFEATURE_YMM)) {
		uint32_t saved = xf__stmxcsr(), odd = 0x1f80 | 0x6000 | 0x40;

		__asm__ volatile("ldmxcsr %0" ::"m"(odd));
		CHECK_ERR(xf_xstate_init_components(XF_XFEATURE_MASK(XF_XFEATURE_YMM)), 0);
		CHECK(xf__stmxcsr() == odd);
		__asm__ volatile("ldmxcsr %0" ::"m"(saved));
	}

	/* AMX: granted here, or a clear ENOTSUP where there is none. */
	if (info.has_amx) {
		CHECK_ERR(xf_xstate_request_amx(), 0);
		CHECK_ERR(xf_xstate_request_amx(), 0); /* asking twice is fine */
		CHECK_ERR(xf_xstate_info_get(&info), 0);
		CHECK(info.amx_permitted);
	} else {
		CHECK_ERR(xf_xstate_request_amx(), ENOTSUP);
	}
	CHECK(!strcmp(xf_xsave_strategy_name((xf_xsave_strategy)99), "none"));
	free(area);
	printf("api: errors and bounds ok (strategy %s)\n", info.strategy_name);
	return 0;
}
