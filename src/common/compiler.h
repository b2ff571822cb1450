/* compiler.h - small compiler helpers shared by every part of the library. */
#ifndef XF_COMMON_COMPILER_H
#define XF_COMMON_COMPILER_H

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/*
 * XF_WARN_ON(cond): a debug-only check, like the kernel's WARN_ON_FPU.  In
 * debug builds (XFIBER_DEBUG) a true condition prints where and aborts; in
 * release builds the condition still type-checks but generates no code, so a
 * checker cannot rot unnoticed.
 */
#ifdef XFIBER_DEBUG
#define XF_WARN_ON(cond)                                                                           \
	do {                                                                                       \
		if (unlikely(cond)) {                                                              \
			fprintf(stderr, "xfiber: %s:%d: invariant broken: %s\n", __FILE__,         \
				__LINE__, #cond);                                                  \
			abort();                                                                   \
		}                                                                                  \
	} while (0)
#else
#define XF_WARN_ON(cond) ((void)sizeof(!(cond)))
#endif

/* A function expanded at each call, specialised for its constant
 * arguments, as a macro would be (the C library's waits, sync/). */
#define XF_ALWAYS_INLINE inline __attribute__((always_inline))

#define XF_ARRAY_SIZE(a)  (sizeof(a) / sizeof((a)[0]))
#define XF_ALIGN_UP(x, a) (((x) + (a)-1) & ~((__typeof__(x))(a)-1))

#endif
