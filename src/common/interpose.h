/*
 * interpose.h - C library functions that libxfiber replaces.
 *
 * Some calls must behave differently in a fiber than in a thread: a
 * pthread wait that must not keep other fibers of its thread from running,
 * a sleep that must not end early, sigaction() for a signal the runtime
 * owns.  libxfiber defines them under their own names, exported, so that
 * the dynamic linker binds every caller to its definition - a program links
 * libxfiber before libc, and the static library puts the definition in the
 * executable, whose symbols come first.  Each definition calls the one it
 * replaces, the next in lookup order, when the call is not a fiber's.
 *
 *   XF_INTERPOSE(int, usleep, (useconds_t us))
 *   {
 *           if (!in a fiber)
 *                   return XF_REAL(usleep)(us);
 *           ...
 *   }
 */
#ifndef XF_COMMON_INTERPOSE_H
#define XF_COMMON_INTERPOSE_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* The definition of name after this object's (dlvsym with version, if not
 * NULL); never NULL: aborts with a message if there is none. */
void *xf__interpose_next(const char *name, const char *version);

#define XF_INTERPOSE(ret, name, params)                                                            \
	static __typeof__(name) *xf__real_##name;                                                  \
	__attribute__((visibility("default"))) ret name params

/* A replacement that never calls the definition it replaces. */
#define XF_REPLACE(ret, name, params) __attribute__((visibility("default"))) ret name params

/* The replaced definition, found on first use (a racing first use finds the
 * same pointer twice). */
#define XF_REAL(name) XF_REAL_VERSION(name, NULL)
#define XF_REAL_VERSION(name, version)                                                             \
	(__atomic_load_n(&xf__real_##name, __ATOMIC_RELAXED)                                       \
	     ?: (__atomic_store_n(&xf__real_##name,                                               \
				  (__typeof__(name) *)xf__interpose_next(#name, version),          \
				  __ATOMIC_RELAXED),                                               \
		 xf__real_##name))

/* Whether the calls that read their arguments here, before the kernel
 * would (a fiber's poll, select, readv, sleeps), refuse p with EFAULT as
 * the kernel does rather than fault on it: a pointer into the page at 0,
 * which is never mapped (vm.mmap_min_addr) - NULL and small offsets from
 * it, the usual bad pointers.  Others fault, as in the C library's own
 * wrappers that read their arguments. */
static inline bool xf__user_ptr_bad(const void *p)
{
	return (uintptr_t)p < 4096;
}

/* A timeout the kernel takes (timespec64_valid): EINVAL otherwise, before
 * anything waits - a fiber's wait would take a negative one for a huge
 * one, or none at all. */
static inline bool xf__timespec_valid(const struct timespec *ts)
{
	return ts->tv_sec >= 0 && ts->tv_nsec >= 0 && ts->tv_nsec < 1000000000;
}

#endif
