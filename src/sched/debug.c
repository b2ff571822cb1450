/*
 * debug.c - what lets a debugger and the dump see inside: the layout
 * description debuggers read, the names of wait kinds, and stopping the
 * world (the dump itself is runtime/dump.c).
 *
 * The registry is the fiber arena (fiber.c): every fiber structure lives in
 * one of its chunks until the runtime's memory is released, and a live one
 * carries XF_FIBER_MAGIC.  Nothing is added to spawn or exit.
 *
 * Debuggers (tools/gdb/xfiber-gdb.py) read the exported xf_debug_layout: a
 * versioned list of names and values - field offsets, constants, the
 * addresses of the runtime and the arena - so that no offset is written
 * down outside the C that defines it.
 *
 * A dump reads switched-out fibers' stacks while their workers run, so it
 * stops the world first, as Go's does: no worker may switch into a fiber
 * until it is done.  Fibers that run go on running (they are reported as
 * running); only switches wait.  The protocol, with no fence on the switch
 * path:
 *
 *   worker, at every switch:       dump:
 *     in_switch = 1                  xf__world_stopped = 1
 *     look at xf__world_stopped      heavy barrier (membarrier): every
 *       set: in_switch = 0, wait       worker's earlier stores are visible
 *     claim next (on_cpu = ON)         and its later loads see the flag
 *     in_switch = 0                  wait while any in_switch is 1
 *                                    read, unwind; xf__world_stopped = 0
 *
 * A worker whose look came before the barrier has in_switch set where the
 * dump sees it, and finishes that one switch before the dump reads; any
 * later look sees the flag.  The fast path of xf_yield does the same
 * (arch/switch_x86_64_sysv_elf_gas.S).
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "arch/context.h"
#include "sched/sched.h"

_Atomic uint32_t xf__world_stopped;

/* --- the layout debuggers read --- */

#define XF_DEBUG_LAYOUT_MAGIC	0x74756f79616c6678ull /* "xflayout" */
#define XF_DEBUG_LAYOUT_VERSION 1

struct xf_debug_entry {
	const char *name;
	uint64_t value;
};

/* Version 1: magic at 0, version (u32) at 8, the number of entries (u32)
 * at 12, a pointer to them at 16; each entry is a pointer to its name and a
 * u64 value.  New entries may be added in any version; a change of meaning
 * takes a new version. */
struct xf_debug_layout {
	uint64_t magic;
	uint32_t version;
	uint32_t nr;
	const struct xf_debug_entry *entries;
};

#define OFF(type, field)   {#type "." #field, offsetof(struct type, field)}
#define VALUE(name, value) {name, (uint64_t)(value)}
#define WAIT_KIND(kind, text) {"wait_kind:" text, XF_WAIT_ON_##kind}

/* clang-format off: a table, aligned by hand */
static const struct xf_debug_entry layout_entries[] = {
    VALUE("xf_fiber.size", sizeof(struct xf_fiber)),
    OFF(xf_fiber, magic),
    OFF(xf_fiber, flags),
    OFF(xf_fiber, sp),
    OFF(xf_fiber, on_cpu),
    OFF(xf_fiber, state),
    OFF(xf_fiber, id),
    OFF(xf_fiber, wait_state),
    OFF(xf_fiber, wait_kind),
    OFF(xf_fiber, wait_object),
    OFF(xf_fiber, preempted),
    OFF(xf_fiber, home),
    OFF(xf_fiber, fn),
    OFF(xf_fiber, name),
    OFF(xf_fiber, spawn_site),
    OFF(xf_fiber, stack.base),
    OFF(xf_fiber, stack.size),
    OFF(xf_fiber, exiting),
    VALUE("fiber_magic", XF_FIBER_MAGIC),
    VALUE("fiber_flag:idle", XF_FIBER_F_IDLE),
    VALUE("fiber_flag:first", XF_FIBER_F_FIRST),
    VALUE("fiber_flag:pinned", XF_FIBER_F_PINNED),
    VALUE("fiber_state:done", XF_FIBER_DONE),
    VALUE("on_cpu:on", XF_ON_CPU),
    VALUE("wait_state:waiting", XF_WAIT_WAITING),
    VALUE("wait_kind_object_is_fd", XF_WAIT_ON_IO),		/* its object is a number */
    VALUE("wait_kind_object_is_fd_too", XF_WAIT_ON_IO_REQUEST), /* likewise */
    VALUE("wait_kind_object_is_fiber", XF_WAIT_ON_JOIN),	/* its object is a fiber */
    WAIT_KIND(MUTEX, "mutex"),
    WAIT_KIND(COND, "condition variable"),
    WAIT_KIND(SEM, "semaphore"),
    WAIT_KIND(CHAN_SEND, "channel send"),
    WAIT_KIND(CHAN_RECV, "channel receive"),
    WAIT_KIND(JOIN, "join"),
    WAIT_KIND(SLEEP, "sleep"),
    WAIT_KIND(IO, "I/O"),
    WAIT_KIND(POLL, "poll"),
    WAIT_KIND(BLOCKING_CALL, "blocking call"),
    WAIT_KIND(LOCK, "thread lock"),
    WAIT_KIND(SHUTDOWN, "shutdown"),
    WAIT_KIND(SELECT, "select"),
    WAIT_KIND(WG, "wait group"),
    WAIT_KIND(LIBC_SLEEP, "sleep"),
    WAIT_KIND(IO_REQUEST, "I/O request"),
    /* The switch frame, from the saved stack pointer (arch/context.h). */
    VALUE("frame.r15", XF_CTX_R15),
    VALUE("frame.r14", XF_CTX_R14),
    VALUE("frame.r13", XF_CTX_R13),
    VALUE("frame.r12", XF_CTX_R12),
    VALUE("frame.rbx", XF_CTX_RBX),
    VALUE("frame.rbp", XF_CTX_RBP),
    VALUE("frame.rip", XF_CTX_RIP),
    VALUE("frame.size", XF_CTX_RIP + 8), /* the stack pointer after the switch's ret */
    VALUE("frame.rip_not_started", (uintptr_t)xf__fiber_start), /* a fiber that never ran */
    /* Where to start. */
    VALUE("runtime.address", (uintptr_t)&xf__rt),
    OFF(xf__runtime, running),
    OFF(xf__runtime, nr_workers),
    OFF(xf__runtime, workers),
    VALUE("xf__worker.size", sizeof(struct xf__worker)),
    OFF(xf__worker, current),
    OFF(xf__worker, id),
    OFF(xf__worker, tid),
    VALUE("arena.address", (uintptr_t)&xf__fiber_arena),
    OFF(xf__fiber_arena, chunks),
    OFF(xf__fiber_arena, nr),
    VALUE("arena.chunk_fibers", XF_ARENA_CHUNK),
};
/* clang-format on */

__attribute__((used, visibility("default"))) const struct xf_debug_layout xf_debug_layout = {
	.magic = XF_DEBUG_LAYOUT_MAGIC,
	.version = XF_DEBUG_LAYOUT_VERSION,
	.nr = sizeof(layout_entries) / sizeof(layout_entries[0]),
	.entries = layout_entries,
};

/* gdb's extension travels with the library, in the section gdb reads
 * scripts from (type 4: Python text, its name on the first line): it loads
 * wherever libxfiber's code is, shared or static, once the object's
 * directory is in gdb's auto-load safe-path (docs/observability.md). */
__asm__(".pushsection .debug_gdb_scripts, \"MS\", @progbits, 1\n"
	".byte 4\n"
	".ascii \"xfiber-gdb.py\\n\"\n"
	".incbin \"" XF_GDB_SCRIPT "\"\n"
	".byte 0\n"
	".popsection\n");

const char *xf__wait_kind_name(unsigned kind)
{
	for (size_t i = 0; i < xf_debug_layout.nr; i++)
		if (!strncmp(layout_entries[i].name, "wait_kind:", 10) &&
		    layout_entries[i].value == kind)
			return layout_entries[i].name + 10;
	return "something";
}

/* --- stopping the world --- */

static long futex(_Atomic uint32_t *word, int op, uint32_t val)
{
	return syscall(SYS_futex, word, op, val, NULL, NULL, 0);
}

void xf__world_wait(struct xf__worker *w)
{
	do {
		atomic_store_explicit(&w->in_switch, 0, memory_order_release);
		while (atomic_load_explicit(&xf__world_stopped, memory_order_acquire))
			futex(&xf__world_stopped, FUTEX_WAIT_PRIVATE, 1);
		atomic_store_explicit(&w->in_switch, 1, memory_order_relaxed);
		atomic_signal_fence(memory_order_seq_cst);
	} while (atomic_load_explicit(&xf__world_stopped, memory_order_relaxed));
}

/* A full barrier on every thread of the process that runs now: after it,
 * their earlier stores are visible here and their later loads see ours.
 * membarrier() where the kernel has it; else changing a page's protection,
 * whose TLB shootdown interrupts every CPU that runs one of our threads. */
static pthread_mutex_t heavy_barrier_lock = PTHREAD_MUTEX_INITIALIZER;
static int heavy_barrier_registered; /* 1 yes, -1 refused, 0 not yet asked */

/* Lock held. */
static void heavy_barrier_register(void)
{
	if (!heavy_barrier_registered)
		heavy_barrier_registered =
		    syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) ? -1
											     : 1;
}

/* Registering waits for an RCU grace period once the process has more
 * than one thread (17 ms here), and the first xf_cancel or xf_dump paid
 * it, its worker blocked meanwhile: xf_init registers before it starts
 * any thread, where it is nearly free. */
void xf__heavy_barrier_prepare(void)
{
	pthread_mutex_lock(&heavy_barrier_lock);
	heavy_barrier_register();
	pthread_mutex_unlock(&heavy_barrier_lock);
}

void xf__heavy_barrier(void)
{
	static char *page;

	pthread_mutex_lock(&heavy_barrier_lock); /* a dump and cancellers may come at once */
	heavy_barrier_register();
	if (heavy_barrier_registered > 0 &&
	    syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
		goto out;
	if (!page) {
		page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (page == MAP_FAILED) {
			page = NULL;
			goto out;
		}
	}
	*(volatile char *)page = 1; /* present, so that the change must shoot it down */
	mprotect(page, 4096, PROT_READ);
	mprotect(page, 4096, PROT_READ | PROT_WRITE);
out:
	pthread_mutex_unlock(&heavy_barrier_lock);
}

void xf__world_stop(void)
{
	atomic_store_explicit(&xf__world_stopped, 1, memory_order_seq_cst);
	xf__heavy_barrier();
	for (unsigned i = 0; i < xf__rt.nr_workers; i++)
		while (atomic_load_explicit(&xf__rt.workers[i].in_switch, memory_order_acquire))
			__builtin_ia32_pause(); /* one switch: a few dozen instructions */
}

void xf__world_start(void)
{
	atomic_store_explicit(&xf__world_stopped, 0, memory_order_release);
	futex(&xf__world_stopped, FUTEX_WAKE_PRIVATE, INT32_MAX);
}
