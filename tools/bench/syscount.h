/*
 * syscount.h - system calls made by another process, counted by the
 * kernel's raw_syscalls:sys_enter tracepoint (a software counter: no
 * hardware counters needed, nothing slowed but the count itself), one
 * counter per thread, inherited by the threads each one starts.
 */
#ifndef XF_BENCH_SYSCOUNT_H
#define XF_BENCH_SYSCOUNT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define XF_SYSCOUNT_THREADS_MAX 256

struct xf_syscount {
	int fds[XF_SYSCOUNT_THREADS_MAX];
	unsigned n;
};

/* Starts counting the calls of every thread of pid now alive.  0, or an
 * errno value with one line in note (no tracefs, not permitted: needs
 * root or kernel.perf_event_paranoid <= -1). */
int xf_syscount_start(struct xf_syscount *c, pid_t pid, char *note, size_t note_size);
/* The calls counted so far. */
uint64_t xf_syscount_read(const struct xf_syscount *c);
void xf_syscount_stop(struct xf_syscount *c);

#endif
