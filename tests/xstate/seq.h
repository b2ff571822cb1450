/* seq.h - register sequences for the xstate tests (seq_nofp.c). */
#ifndef XF_TESTS_XSTATE_SEQ_H
#define XF_TESTS_XSTATE_SEQ_H

#include <stddef.h>
#include <stdint.h>

#include "xstate/regs.h"

/* Loads a, saves, loads b, restores, stores into out.  0 or the first error. */
int xf_test_roundtrip(const struct xf__regs *a, const struct xf__regs *b, struct xf__regs *out,
		      void *buf, size_t size, unsigned classes, uint64_t *xinuse_at_save);

struct xf_test_leak_result {
	struct xf__regs regs;	 /* what the registers held after the restore */
	uint64_t xinuse_at_save; /* XINUSE when the image was taken */
	uint64_t xinuse_after;	 /* XINUSE after the restore */
	int init_rc;		 /* xf_xstate_init_components() */
};

/* Puts the class into init state, saves, loads b, restores.  A correct
 * engine leaves the class in init state: b's values must not survive. */
int xf_test_leak(const struct xf__regs *b, void *buf, size_t size, unsigned classes,
		 uint64_t init_mask, struct xf_test_leak_result *res);

#endif
