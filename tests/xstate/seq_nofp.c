/*
 * seq_nofp.c - the register sequences of the xstate tests.
 *
 * WARNING: built -mgeneral-regs-only.  Between loading known values into the
 * registers and reading them back, only assembly and the engine (itself
 * general-regs-only) may run; a compiler-chosen SSE move or a libc call
 * (glibc's EVEX string functions dirty ZMM16-31 and k0-7) would corrupt the
 * very state under test.
 */
#include "seq.h"
#include "xfiber.h"

int xf_test_roundtrip(const struct xf__regs *a, const struct xf__regs *b, struct xf__regs *out,
		      void *buf, size_t size, unsigned classes, uint64_t *xinuse_at_save)
{
	int save_rc, restore_rc;

	xf__regs_load(a, classes);
	*xinuse_at_save = xf_xstate_inuse();
	save_rc = xf_xstate_save(buf, size);
	xf__regs_load(b, classes); /* clobber every register under test */
	restore_rc = xf_xstate_restore(buf, size);
	xf__regs_store(out, classes);
	return save_rc ? save_rc : restore_rc;
}

int xf_test_leak(const struct xf__regs *b, void *buf, size_t size, unsigned classes,
		 uint64_t init_mask, struct xf_test_leak_result *res)
{
	int save_rc, restore_rc;

	/* Everything the test class owns goes to init state first. */
	xf_xstate_vzeroupper();
	res->init_rc = init_mask ? xf_xstate_init_components(init_mask) : 0;
	xf_xstate_release_tiles();
	res->xinuse_at_save = xf_xstate_inuse();
	save_rc = xf_xstate_save(buf, size);
	xf__regs_load(b, classes); /* now another context's values are live */
	restore_rc = xf_xstate_restore(buf, size);
	res->xinuse_after = xf_xstate_inuse();
	/* Tiles in init state cannot be read (TILESTORED raises #UD). */
	xf__regs_store(&res->regs, classes & ~XF_REGS_AMX);
	return save_rc ? save_rc : restore_rc;
}
