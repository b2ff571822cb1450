/*
 * cxx.c - the C++ runtime's per-thread state, made per fiber.
 *
 * libstdc++ keeps the exceptions being handled - the stack of caught
 * exceptions that `throw;` and std::current_exception() read, and the count
 * std::uncaught_exceptions() returns - per thread, in the structure
 * __cxa_get_globals() returns (the Itanium C++ ABI, section 2.2.2).  Fibers
 * share threads and move between them, so per thread is wrong twice over: a
 * fiber that switched inside a catch block would rethrow another fiber's
 * exception, and one that moved would find another thread's.
 *
 * So this file defines __cxa_get_globals() and __cxa_get_globals_fast()
 * itself, and returns the calling fiber's own copy.  Every reader inside
 * libstdc++ calls them through its PLT (its only access to the thread-local
 * storage is inside these two functions), so this definition - in
 * libxfiber.so, which a program links before libstdc++, or in the executable
 * when the static library is linked in - is the one libstdc++ binds to.  No
 * switch pays anything: the state simply lives in the fiber.  A plain
 * thread, a worker's idle context and the first fiber (which is its thread,
 * pinned to it) use a thread-local copy of their own.  A C program never
 * calls these, and needs no libstdc++.  xf_init() checks that the binding
 * took (xf__cxx_check), and says so on stderr when it did not (libxfiber
 * loaded after libstdc++, e.g. dlopen()ed): exceptions are then per thread,
 * as without xfiber.
 *
 * The other per-thread state of libstdc++ that a fiber can carry across a
 * switch is std::call_once's: the callable lives in two thread-local
 * pointers (std::__once_callable, std::__once_call) from its setting, in the
 * caller's inline code, to its use inside pthread_once.  A fiber preempted
 * in between, and another that runs call_once on the same thread meanwhile,
 * would leave the first with a null callable.  Preemption saves and restores
 * them (xf__cxx_once_get/set into the fiber's once_kept, preempt/signal.c).  A voluntary switch
 * happens in that window too: pthread_once waits as a fiber while another
 * runs the routine (sync/pthread.c), and may resume on another thread, or
 * after a fiber of its thread whose callable threw has cleared them (as
 * call_once does on its way out).  So pthread_once takes the two from its
 * caller's thread on entry and puts them on the thread the routine runs
 * on, right before it (once_passed, by the same two calls).
 *
 * Last, the personality of the bottom frame of every fiber
 * (xf__fiber_start): an exception no frame of the fiber catches reaches it
 * in the unwinder's search phase, and it names the fiber before
 * std::terminate's own message (type and what()) follows.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>
#include <unistd.h>
#include <unwind.h>

#include "common/fmt.h"
#include "sched/sched.h"

/* The Itanium ABI's __cxa_eh_globals, as libstdc++ lays it out. */
_Static_assert(sizeof(struct xf__cxa_eh_globals) == 16, "__cxa_eh_globals");

static __thread struct xf__cxa_eh_globals thread_eh;

static struct xf__cxa_eh_globals *eh_globals(void)
{
	struct xf_fiber *f = xf__self();

	if (f && !(f->flags & XF_FIBER_F_FIRST))
		return &f->eh;
	return &thread_eh;
}

__attribute__((visibility("default"))) void *__cxa_get_globals(void);
__attribute__((visibility("default"))) void *__cxa_get_globals_fast(void);

void *__cxa_get_globals(void)
{
	return eh_globals();
}

void *__cxa_get_globals_fast(void)
{
	return eh_globals();
}

/* --- std::call_once's thread-local callable --- */

/* The addresses of this thread's two std::call_once pointers, or NULL
 * without libstdc++.  dlsym() on a thread-local symbol answers for the
 * calling thread. */
void xf__cxx_once_locate(struct xf__worker *w)
{
	w->once_callable = dlsym(RTLD_DEFAULT, "_ZSt15__once_callable");
	w->once_call = dlsym(RTLD_DEFAULT, "_ZSt11__once_call");
	if (!w->once_callable || !w->once_call)
		w->once_callable = w->once_call = NULL;
}

/* This thread's two pointers (w's) into pair; NULLs without libstdc++. */
void xf__cxx_once_get(struct xf__worker *w, void *pair[2])
{
	pair[0] = w->once_callable ? *w->once_callable : NULL;
	pair[1] = w->once_callable ? *w->once_call : NULL;
}

void xf__cxx_once_set(struct xf__worker *w, void *const pair[2])
{
	if (!w->once_callable)
		return;
	*w->once_callable = pair[0];
	*w->once_call = pair[1];
}

/* --- binding --- */

void xf__cxx_check(void)
{
	void *bound = dlsym(RTLD_DEFAULT, "__cxa_get_globals");
	static const char msg[] =
	    "xfiber: libstdc++ does not use xfiber's __cxa_get_globals (was libxfiber loaded "
	    "after libstdc++?): C++ exception state stays per thread, and a fiber that "
	    "switches inside a catch block may see another fiber's exception; link "
	    "-lxfiber before -lstdc++\n";

	if (bound && bound != (void *)__cxa_get_globals) {
		if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0) {
			/* nowhere to report to */
		}
	}
}

/* --- the personality of a fiber's bottom frame --- */

static void say(const char *s)
{
	if (write(STDERR_FILENO, s, strlen(s)) < 0) {
		/* nowhere to report to */
	}
}

_Unwind_Reason_Code xf__fiber_personality(int version, _Unwind_Action actions,
					  _Unwind_Exception_Class cls,
					  struct _Unwind_Exception *exc, struct _Unwind_Context *ctx);

_Unwind_Reason_Code xf__fiber_personality(int version, _Unwind_Action actions,
					  _Unwind_Exception_Class cls,
					  struct _Unwind_Exception *exc, struct _Unwind_Context *ctx)
{
	struct xf_fiber *f = xf__self();
	char id[24];

	(void)version;
	(void)cls;
	(void)exc;
	(void)ctx;
	id[xf__fmt_u64(id, f ? f->id : 0)] = 0;
	if (actions & _UA_FORCE_UNWIND) {
		/* pthread_exit() or cancellation: they would unwind into the
		 * worker thread's own frames, which this stack does not have. */
		say("xfiber: fiber ");
		say(id);
		say(" called pthread_exit() or was cancelled; fibers end with xf_exit() or by "
		    "returning\n");
		abort();
	}
	if (actions & _UA_SEARCH_PHASE) {
		say("xfiber: fiber ");
		say(id);
		say(": an exception escaped the fiber's function; std::terminate() follows\n");
	}
	return _URC_CONTINUE_UNWIND;
}
