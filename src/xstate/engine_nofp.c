/*
 * engine_nofp.c - save and restore the calling thread's extended state.
 *
 * WARNING: this file is built -mgeneral-regs-only.  Everything here runs
 * between an API entry and the XSAVE (or after the XRSTOR), where a single
 * compiler-generated vector instruction - a spill, a vzeroupper, a call into
 * libc's memcpy - would change or destroy the very state being saved.  Call
 * nothing here that is not general-regs-only itself.
 *
 * The rules the engine keeps, and why:
 *
 *  - Save with RFBM = XCR0 and let the instruction skip what is in init
 *    state (XSAVEC, XSAVEOPT).  Plain XSAVE writes the whole 10.5 KB area
 *    with AMX enabled, whatever the state; it is here only when forced.
 *
 *  - Restore with RFBM = XCR0, never with the XSTATE_BV or XINUSE seen at
 *    save time.  XRSTOR puts every requested component whose XSTATE_BV bit
 *    is clear into its init state; a narrower RFBM would leave those
 *    registers holding whatever the thread ran last - another context's
 *    data (the leak Caladan's restore-with-XINUSE allows).
 *
 *  - XSTATE_BV in the image is the authority on what the image carries.
 *
 *  - XSAVEOPT's "modified" optimization skips components that have not
 *    changed since the XRSTOR that loaded them, if that XRSTOR used the same
 *    address.  The hardware does not look at the buffer, so the optimization
 *    is correct only if nothing wrote the buffer between that XRSTOR and
 *    this XSAVEOPT.  The engine relies on it in exactly one place: a save
 *    into a buffer previously passed to xf_xstate_restore().  Callers keep
 *    that buffer untouched (see xfiber.h); the engine itself only clears the
 *    64-byte header before each save, which XSAVEOPT rewrites in full and
 *    which holds no register data.
 */
#include <errno.h>
#include <stdint.h>

#include "common/compiler.h"
#include "xstate/xstate.h"

static inline bool buffer_ok(const void *buf, size_t size, const struct xf__xstate_engine *e)
{
	return buf && !((uintptr_t)buf & (XF_XSTATE_ALIGN - 1)) && size >= e->save_size;
}

static inline int buffer_error(const void *buf, const struct xf__xstate_engine *e)
{
	if (unlikely(e->strategy == XF_XSAVE_NONE))
		return e->error ? e->error : ENOTSUP;
	if (!buf || ((uintptr_t)buf & (XF_XSTATE_ALIGN - 1)))
		return EINVAL;
	return ERANGE;
}

size_t xf_xstate_size(void)
{
	return xf__xstate.engine.save_size;
}

int xf_xstate_save(void *buf, size_t size)
{
	const struct xf__xstate_engine *e = &xf__xstate.engine;

	if (unlikely(!buffer_ok(buf, size, e) || e->strategy == XF_XSAVE_NONE))
		return buffer_error(buf, e);
	switch (e->strategy) {
	case XF_XSAVE_XSAVEC: xf__xsavec(buf, e->xcr0); break;
	case XF_XSAVE_XSAVEOPT: xf__xsaveopt(buf, e->xcr0); break;
	case XF_XSAVE_XSAVE: xf__xsave(buf, e->xcr0); break;
	default: xf__fxsave(buf); break;
	}
	return 0;
}

static inline uint32_t image_mxcsr(const void *buf)
{
	return *(const uint32_t *)((const char *)buf + FXSAVE_MXCSR_OFFSET);
}

/*
 * Would XRSTOR (or FXRSTOR) accept this image?  The checks are the SDM's
 * #GP conditions (13.8); without them a corrupted image kills the process
 * with SIGSEGV instead of returning EINVAL.
 */
static inline bool image_ok(const void *buf, const struct xf__xstate_engine *e)
{
	const struct xsave_header *h;

	if (image_mxcsr(buf) & ~e->mxcsr_mask)
		return false;
	if (e->strategy == XF_XSAVE_FXSAVE)
		return true;
	h = (const struct xsave_header *)((const char *)buf + XSAVE_HEADER_OFFSET);
	if (h->xstate_bv & ~e->xcr0)
		return false;
	for (unsigned i = 0; i < XF_ARRAY_SIZE(h->reserved); i++) {
		if (h->reserved[i])
			return false;
	}
	if (!(h->xcomp_bv & XSAVE_XCOMP_BV_COMPACTED))
		return h->xcomp_bv == 0;
	/* Compacted: XCOMP_BV must match what our XSAVEC writes, and XSTATE_BV fit in it. */
	return (h->xcomp_bv & ~XSAVE_XCOMP_BV_COMPACTED) == e->xcr0 &&
	       !(h->xstate_bv & ~h->xcomp_bv);
}

int xf_xstate_restore(const void *buf, size_t size)
{
	const struct xf__xstate_engine *e = &xf__xstate.engine;

	if (unlikely(!buffer_ok(buf, size, e) || e->strategy == XF_XSAVE_NONE))
		return buffer_error(buf, e);
	if (unlikely(!image_ok(buf, e)))
		return EINVAL;
	if (e->strategy == XF_XSAVE_FXSAVE)
		xf__fxrstor(buf);
	else
		xf__xrstor(buf, e->xcr0);
	return 0;
}

uint64_t xf_xstate_image_features(const void *buf)
{
	const struct xf__xstate_engine *e = &xf__xstate.engine;

	if (!buf || ((uintptr_t)buf & (XF_XSTATE_ALIGN - 1)) || e->strategy == XF_XSAVE_NONE)
		return 0;
	if (e->strategy == XF_XSAVE_FXSAVE)
		return XF_XFEATURE_MASK(XF_XFEATURE_X87) | XF_XFEATURE_MASK(XF_XFEATURE_SSE);
	return ((const struct xsave_header *)((const char *)buf + XSAVE_HEADER_OFFSET))->xstate_bv;
}

uint64_t xf_xstate_inuse(void)
{
	const struct xf__xstate_engine *e = &xf__xstate.engine;

	return e->has_xgetbv1 ? xf__xgetbv(1) & e->xcr0 : e->xcr0;
}

void xf_xstate_release_tiles(void)
{
	/* TILERELEASE needs AMX permission once tiles are configured; checking
	 * XINUSE first both avoids the fault-free-but-pointless instruction and
	 * guarantees that, when it runs, the tiles were usable. */
	if (xf_xstate_inuse() & XF_XFEATURE_MASK_AMX)
		xf__tilerelease();
}

void xf_xstate_vzeroupper(void)
{
	if (xf__xstate.engine.xcr0 & XF_XFEATURE_MASK(XF_XFEATURE_YMM))
		xf__vzeroupper();
}

/* XRSTOR of a standard-format image whose XSTATE_BV is 0: every component
 * in mask goes to its init state.  XRSTOR still loads MXCSR from the legacy
 * region when mask names SSE or AVX, so the caller says which MXCSR. */
static void xrstor_zero_image(uint64_t mask, uint32_t mxcsr)
{
	uint64_t image[XSAVE_EXTENDED_OFFSET / sizeof(uint64_t)] __attribute__((aligned(64)));

	for (unsigned i = 0; i < XF_ARRAY_SIZE(image); i++)
		image[i] = 0;
	image[FXSAVE_MXCSR_OFFSET / sizeof(uint64_t)] = mxcsr;
	xf__xrstor(image, mask);
}

int xf_xstate_init_components(uint64_t mask)
{
	const struct xf__xstate_engine *e = &xf__xstate.engine;
	const uint64_t legacy =
	    XF_XFEATURE_MASK(XF_XFEATURE_X87) | XF_XFEATURE_MASK(XF_XFEATURE_SSE);

	if (!xf__xstate.info.has_xsave)
		return ENOTSUP;
	if ((mask & ~e->xcr0) || (mask & legacy))
		return EINVAL;
	if (mask)
		xrstor_zero_image(mask, xf__stmxcsr()); /* MXCSR is kept */
	return 0;
}

void xf__xstate_reset_all(void)
{
	if (xf__xstate.info.has_xsave)
		xrstor_zero_image(xf__xstate.engine.xcr0, MXCSR_DEFAULT);
}
