/*
 * xfiber.h - preemptive M:N fibers for x86-64 Linux that keep every register.
 *
 * How to use it
 * -------------
 * Every function returns 0 on success or a positive errno value on failure
 * (EINVAL for a bad argument, ENOMEM, ENOTSUP for a CPU that lacks a feature,
 * ...); none of them sets errno.  Link with `pkg-config --cflags --libs xfiber`.
 *
 * Extended state (x87, SSE, AVX, AVX-512, AMX) is described by xf_xstate_info
 * and saved/restored by xf_xstate_save()/xf_xstate_restore() into a buffer
 * the caller provides:
 *
 *     size_t size = xf_xstate_size();
 *     void *buf = aligned_alloc(XF_XSTATE_ALIGN, size);
 *     if (xf_xstate_save(buf, size) == 0) {
 *             ... the calling thread's registers may now be clobbered ...
 *             xf_xstate_restore(buf, size);
 *     }
 *
 * The engine picks the fastest correct instruction once, when the library is
 * loaded; XFIBER_XSAVE=xsaveopt|xsavec|xsave|fxsave overrides the choice.  An
 * image must be restored by the same process that saved it.
 */
#ifndef XFIBER_H
#define XFIBER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define XF_API __attribute__((visibility("default")))

/* ---------------------------------------------------------------------------
 * Version
 */

/* "MAJOR.MINOR.PATCH", from the one place the version is kept (CMakeLists.txt). */
XF_API const char *xf_version(void);
/* The commit the library was built from (`git describe --dirty`), or "unknown". */
XF_API const char *xf_commit(void);

/* ---------------------------------------------------------------------------
 * Extended state: discovery
 */

/* XSAVE state-component numbers (Intel SDM vol. 1, ch. 13). */
enum {
	XF_XFEATURE_X87 = 0,
	XF_XFEATURE_SSE = 1,
	XF_XFEATURE_YMM = 2,	   /* upper halves of YMM0-15 */
	XF_XFEATURE_BNDREGS = 3,   /* MPX (obsolete) */
	XF_XFEATURE_BNDCSR = 4,	   /* MPX (obsolete) */
	XF_XFEATURE_OPMASK = 5,	   /* k0-7 */
	XF_XFEATURE_ZMM_HI256 = 6, /* upper 256 bits of ZMM0-15 */
	XF_XFEATURE_HI16_ZMM = 7,  /* ZMM16-31 */
	XF_XFEATURE_PKRU = 9,
	XF_XFEATURE_XTILECFG = 17,  /* AMX TILECFG */
	XF_XFEATURE_XTILEDATA = 18, /* AMX TMM0-7 */
	XF_XFEATURE_APX = 19,	    /* APX extended GPRs R16-R31 */
	XF_XFEATURE_MAX = 64,
};

#define XF_XFEATURE_MASK(bit) (UINT64_C(1) << (bit))
#define XF_XFEATURE_MASK_AVX512                                                                    \
	(XF_XFEATURE_MASK(XF_XFEATURE_OPMASK) | XF_XFEATURE_MASK(XF_XFEATURE_ZMM_HI256) |          \
	 XF_XFEATURE_MASK(XF_XFEATURE_HI16_ZMM))
#define XF_XFEATURE_MASK_AMX                                                                       \
	(XF_XFEATURE_MASK(XF_XFEATURE_XTILECFG) | XF_XFEATURE_MASK(XF_XFEATURE_XTILEDATA))

/* Every xf_xstate_save() buffer must be aligned to this many bytes. */
#define XF_XSTATE_ALIGN 64

/* One enabled state component, as CPUID leaf 0xD describes it. */
typedef struct xf_xstate_component {
	unsigned bit;		   /* component number, an XF_XFEATURE_* value */
	const char *name;	   /* e.g. "AVX-512 ZMM_Hi256" */
	uint32_t size;		   /* bytes in an XSAVE image */
	uint32_t offset;	   /* offset in the standard (non-compacted) format */
	uint32_t compacted_offset; /* offset in a compacted image holding all of XCR0 */
	bool align64;		   /* aligned to 64 bytes in the compacted format */
	bool xfd;		   /* can be armed by XFD (first use faults until permitted) */
} xf_xstate_component;

/* How the engine saves and restores.  XF_XSAVE_NONE means no choice was
 * possible (see xf_xstate_info.strategy_error). */
typedef enum xf_xsave_strategy {
	XF_XSAVE_NONE = 0,
	XF_XSAVE_XSAVEOPT,
	XF_XSAVE_XSAVEC,
	XF_XSAVE_XSAVE,
	XF_XSAVE_FXSAVE,
} xf_xsave_strategy;

typedef struct xf_xstate_info {
	uint64_t xcr0;		 /* enabled features, XGETBV(0) */
	uint64_t xinuse;	 /* XGETBV(1) now, or xcr0 where XGETBV1 is absent */
	uint32_t size_standard;	 /* bytes of a standard-format image of all of xcr0 */
	uint32_t size_compacted; /* bytes of a compacted image of all of xcr0 */
	bool has_xsave;		 /* CPUID.1:ECX.XSAVE and the OS enabled it (OSXSAVE) */
	bool has_xsaveopt;
	bool has_xsavec;
	bool has_xsaves; /* supervisor-only; reported, never used */
	bool has_xgetbv1;
	bool has_xfd;
	bool has_amx;		    /* CPU and OS support tiles (xcr0 has both AMX bits) */
	bool amx_permitted;	    /* this process may use tiles (ARCH_GET_XCOMP_PERM) */
	uint64_t xcomp_perm;	    /* ARCH_GET_XCOMP_PERM, or 0 where the kernel lacks it */
	unsigned long min_sigstksz; /* getauxval(AT_MINSIGSTKSZ): the kernel's signal frame */
	xf_xsave_strategy strategy; /* what xf_xstate_save() uses */
	const char *strategy_name;  /* "xsavec", ..., or "none" */
	const char *strategy_error; /* why strategy is XF_XSAVE_NONE, else NULL */
	uint32_t save_size;	    /* bytes xf_xstate_save() needs (xf_xstate_size()) */
	unsigned ncomponents;	    /* entries used in components[] */
	xf_xstate_component components[XF_XFEATURE_MAX];
} xf_xstate_info;

/* Fills *out with the machine's picture.  EINVAL if out is NULL. */
XF_API int xf_xstate_info_get(xf_xstate_info *out);

/* The name of a strategy ("xsaveopt", ...), or "none" for an unknown value. */
XF_API const char *xf_xsave_strategy_name(xf_xsave_strategy s);

/* Asks the kernel for AMX tile permission (ARCH_REQ_XCOMP_PERM, component 18)
 * for the whole process.  0 when granted (or already granted); ENOTSUP when the
 * CPU or kernel has no AMX; the kernel's errno (EPERM, ENOSPC, ...) when it
 * refuses, e.g. because sigaltstacks in use are too small for AMX frames. */
XF_API int xf_xstate_request_amx(void);

/* ---------------------------------------------------------------------------
 * Extended state: the save/restore engine
 *
 * These functions run on general registers only: nothing between their entry
 * and the XSAVE touches a vector register.  Rules the engine keeps:
 *  - components in their init state are not written (XSAVEC/XSAVEOPT), and
 *    the image's XSTATE_BV says which components it carries;
 *  - restore always asks for every enabled component (RFBM = XCR0), so a
 *    component absent from the image comes back in its init state;
 *  - with XSAVEOPT, a buffer must not be written by anything else between the
 *    xf_xstate_restore() that loaded it and the next xf_xstate_save() into it.
 */

/* Bytes a save buffer needs with the chosen strategy. */
XF_API size_t xf_xstate_size(void);

/* Saves the calling thread's extended state.  EINVAL if buf is NULL or not
 * XF_XSTATE_ALIGN-aligned, ERANGE if size < xf_xstate_size(), ENOTSUP if no
 * strategy could be chosen.  Nothing is written on error. */
XF_API int xf_xstate_save(void *buf, size_t size);

/* Restores state saved by xf_xstate_save() into the calling thread.  Errors as
 * for xf_xstate_save(), and EINVAL for an image whose header the CPU would
 * reject (it would otherwise fault). */
XF_API int xf_xstate_restore(const void *buf, size_t size);

/* XSTATE_BV of a saved image: which components it carries (0 on error). */
XF_API uint64_t xf_xstate_image_features(const void *buf);

/* XGETBV(1): the components not in their init state right now.  Where the CPU
 * lacks XGETBV1 this returns XCR0, the safe over-estimate. */
XF_API uint64_t xf_xstate_inuse(void);

/* Returning dead state to init, so kernel switches and signal frames skip it. */
XF_API void xf_xstate_release_tiles(void); /* TILERELEASE if tiles are in use */
XF_API void xf_xstate_vzeroupper(void);	   /* YMM/ZMM upper halves (bits 2, 6) */
/* Puts the components in mask into their init state with an XRSTOR whose
 * XSTATE_BV is zero; MXCSR and the x87 control word are kept.  mask may name
 * any enabled component but x87 and SSE (EINVAL).  Typical use:
 * XF_XFEATURE_MASK(XF_XFEATURE_OPMASK) | XF_XFEATURE_MASK(XF_XFEATURE_HI16_ZMM). */
XF_API int xf_xstate_init_components(uint64_t mask);

#ifdef __cplusplus
}
#endif

#endif /* XFIBER_H */
