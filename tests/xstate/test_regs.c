/*
 * test_regs.c - every register class survives save, clobber, restore, with
 * whichever strategy XFIBER_XSAVE forces; and state in init at save time
 * comes back in init (the leak case).
 *
 * usage: test_regs roundtrip|leak CLASS [ITERATIONS]
 *   CLASS: x87 sse avx avx512 opmask amx all
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/compiler.h"
#include "seq.h"
#include "testlib.h"
#include "xfiber.h"
#include "xstate/xstate.h"

/* Components each class lives in, for the XINUSE checks of the leak case. */
static uint64_t class_features(unsigned classes)
{
	uint64_t f = 0;

	if (classes & XF_REGS_AVX)
		f |= XF_XFEATURE_MASK(XF_XFEATURE_YMM);
	if (classes & XF_REGS_AVX512)
		f |= XF_XFEATURE_MASK(XF_XFEATURE_YMM) | XF_XFEATURE_MASK(XF_XFEATURE_ZMM_HI256) |
		     XF_XFEATURE_MASK(XF_XFEATURE_HI16_ZMM);
	if (classes & XF_REGS_OPMASK)
		f |= XF_XFEATURE_MASK(XF_XFEATURE_OPMASK);
	if (classes & XF_REGS_AMX)
		f |= XF_XFEATURE_MASK_AMX;
	return f;
}

static void require(unsigned classes, const xf_xstate_info *info)
{
	unsigned have = xf__regs_classes_available();
	const char *forced = getenv("XFIBER_XSAVE");

	if ((classes & have) != classes)
		xf_test_skip("this CPU lacks register class 0x%x", classes & ~have);
	if (forced)
		xf_test_require_strategy(forced);
	if (info->strategy == XF_XSAVE_NONE)
		xf_test_fail("no strategy: %s", info->strategy_error);
	if (forced && strcmp(forced, info->strategy_name))
		xf_test_fail("XFIBER_XSAVE=%s but the engine chose %s", forced,
			     info->strategy_name);
	if (info->strategy == XF_XSAVE_FXSAVE && (classes & ~(XF_REGS_X87 | XF_REGS_SSE)))
		xf_test_fail("FXSAVE keeps only x87 and SSE; this test asks for more");
	if (classes & XF_REGS_AMX) {
		int err = xf_xstate_request_amx();
		if (err)
			xf_test_fail("AMX permission refused: %s", strerror(err));
	}
}

static void roundtrip(unsigned classes, unsigned iterations, const xf_xstate_info *info)
{
	size_t size = xf_xstate_size();
	void *buf = aligned_alloc(XF_XSTATE_ALIGN, XF_ALIGN_UP(size, XF_XSTATE_ALIGN));
	struct xf__regs *a = aligned_alloc(64, sizeof(*a));
	struct xf__regs *b = aligned_alloc(64, sizeof(*b));
	struct xf__regs *out = aligned_alloc(64, sizeof(*out));
	char msg[512];

	CHECK(buf && a && b && out);
	memset(buf, 0, size);
	for (unsigned i = 0; i < iterations; i++) {
		uint64_t xinuse, bv;
		int rc;

		xf__regs_randomize(a, 2 * i + 1);
		xf__regs_randomize(b, 2 * i + 2);
		memset(out, 0xa5, sizeof(*out));
		rc = xf_test_roundtrip(a, b, out, buf, size, classes, &xinuse);
		if (rc)
			xf_test_fail("iteration %u: save/restore returned %s", i,
				     xf_test_errname(rc));
		if (xf__regs_compare(a, out, classes, msg, sizeof(msg)))
			xf_test_fail("strategy %s, iteration %u: %s", info->strategy_name, i, msg);
		if (info->strategy == XF_XSAVE_FXSAVE)
			continue;
		/* The image says what it carries, exactly as the hardware reported
		 * (where it can say: without XGETBV1, XINUSE reads as all of XCR0). */
		bv = xf_xstate_image_features(buf);
		if (info->has_xgetbv1 && bv != (xinuse & info->xcr0))
			xf_test_fail("strategy %s: XSTATE_BV 0x%" PRIx64
				     " but XINUSE was 0x%" PRIx64,
				     info->strategy_name, bv, xinuse);
		if ((bv & class_features(classes)) != class_features(classes))
			xf_test_fail("XSTATE_BV 0x%" PRIx64
				     " lacks the loaded components 0x%" PRIx64,
				     bv, class_features(classes));
	}
	printf("%s: %u iterations of class 0x%x intact\n", info->strategy_name, iterations,
	       classes);
	free(buf);
	free(a);
	free(b);
	free(out);
}

static void check_zero(const uint8_t *p, size_t n, const char *what, int idx)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i])
			xf_test_fail("leak: %s%d byte %zu is 0x%02x after restoring an init-state "
				     "image (another context's value came back)",
				     what, idx, i, p[i]);
	}
}

static void leak(unsigned classes, unsigned iterations, const xf_xstate_info *info)
{
	const uint64_t features = class_features(classes);
	const uint64_t init_mask = features & (XF_XFEATURE_MASK(XF_XFEATURE_OPMASK) |
					       XF_XFEATURE_MASK(XF_XFEATURE_HI16_ZMM));
	size_t size = xf_xstate_size();
	void *buf = aligned_alloc(XF_XSTATE_ALIGN, XF_ALIGN_UP(size, XF_XSTATE_ALIGN));
	struct xf__regs *b = aligned_alloc(64, sizeof(*b));
	struct xf_test_leak_result *res = aligned_alloc(64, sizeof(*res));

	CHECK(buf && b && res);
	if (!features)
		xf_test_fail("the leak case needs a class above SSE (avx, avx512, opmask, amx)");
	for (unsigned i = 0; i < iterations; i++) {
		uint64_t bv;
		int rc;

		xf__regs_randomize(b, i + 99);
		rc = xf_test_leak(b, buf, size, classes, init_mask, res);
		if (rc || res->init_rc)
			xf_test_fail("iteration %u: engine returned %s / init %s", i,
				     xf_test_errname(rc), xf_test_errname(res->init_rc));
		/* The case needs an image that carries the class in init state
		 * (XSTATE_BV bits clear).  A CPU may keep a component in use
		 * though it is in init state (SDM 13.6); qemu's TCG does so for
		 * every component, and there is nothing to leak. */
		bv = xf_xstate_image_features(buf);
		if (bv & features) {
			if (xf_test_xinuse_tracks_init())
				xf_test_fail("set-up: the image's XSTATE_BV 0x%" PRIx64
					     " still carries 0x%" PRIx64 " (XINUSE 0x%" PRIx64 ")",
					     bv, features, res->xinuse_at_save);
			xf_test_skip("this CPU keeps components 0x%" PRIx64
				     " in use after VZEROUPPER and an init XRSTOR (XSTATE_BV 0x%" PRIx64
				     "): no image carries them in init state",
				     features, bv);
		}
		if (info->has_xgetbv1 && (res->xinuse_after & features))
			xf_test_fail(
			    "strategy %s: XINUSE 0x%" PRIx64 " after restore: components 0x%" PRIx64
			    " came back in use, not in init state",
			    info->strategy_name, res->xinuse_after, res->xinuse_after & features);
		for (int r = 0; r < 16 && (classes & (XF_REGS_AVX | XF_REGS_AVX512)); r++)
			check_zero(res->regs.zmm[r] + 16, (classes & XF_REGS_AVX512) ? 48 : 16,
				   "zmm/ymm upper of register ", r);
		for (int r = 16; r < 32 && (classes & XF_REGS_AVX512); r++)
			check_zero(res->regs.zmm[r], 64, "zmm", r);
		for (int r = 0; r < 8 && (classes & XF_REGS_OPMASK); r++)
			check_zero((const uint8_t *)&res->regs.k[r], 8, "k", r);
	}
	printf("%s: %u iterations, class 0x%x stayed in init state\n", info->strategy_name,
	       iterations, classes);
	free(buf);
	free(b);
	free(res);
}

int main(int argc, char **argv)
{
	xf_xstate_info info;
	unsigned classes, iterations;

	if (argc < 3)
		xf_test_fail("usage: test_regs roundtrip|leak CLASS [ITERATIONS]");
	classes = xf_test_parse_class(argv[2]);
	iterations = argc > 3 ? (unsigned)atoi(argv[3]) : 300;
	CHECK_ERR(xf_xstate_info_get(&info), 0);
	require(classes, &info);
	if (!strcmp(argv[1], "roundtrip"))
		roundtrip(classes, iterations, &info);
	else if (!strcmp(argv[1], "leak"))
		leak(classes, iterations, &info);
	else
		xf_test_fail("unknown mode '%s'", argv[1]);
	return 0;
}
