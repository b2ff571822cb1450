/*
 * copy.h - memcpy for code that must not touch vector registers.
 *
 * libc's memcpy may use them: on AVX-512 machines glibc picks EVEX variants
 * that use ymm16-31, which puts Hi16_ZMM (1 KB) in use behind the caller's
 * back - every later kernel switch and signal frame then carries it, and
 * VZEROUPPER does not give it back.  The runtime's own copies (channel
 * messages) use general registers and `rep movsb` instead, whose microcode
 * leaves the extended state as it was.  Include only from files built
 * -mgeneral-regs-only -fno-tree-loop-distribute-patterns, so that the
 * compiler neither vectorises these loops nor turns them back into memcpy.
 */
#ifndef XF_COMMON_COPY_H
#define XF_COMMON_COPY_H

#include <stddef.h>
#include <stdint.h>

static inline void xf__copy(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

#ifdef __SANITIZE_ADDRESS__
	const size_t words_up_to = SIZE_MAX; /* ASan checks the word loop, not rep movsb */
#else
	const size_t words_up_to = 256; /* rep movsb's start-up pays off above */
#endif

	if (n >= 8 && n <= words_up_to) {
		/* Whole words, then the last word again, overlapping: no byte loop. */
		uint64_t last;

		__builtin_memcpy(&last, s + n - 8, 8);
		for (size_t i = 0; i + 8 <= n; i += 8) {
			uint64_t w;
			__builtin_memcpy(&w, s + i, 8);
			__builtin_memcpy(d + i, &w, 8);
		}
		__builtin_memcpy(d + n - 8, &last, 8);
	} else if (n < 8) {
		for (size_t i = 0; i < n; i++)
			d[i] = s[i];
	} else {
		__asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
	}
}

#endif
