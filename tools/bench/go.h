/*
 * go.h - running the Go peer (bench/go, built with the tool when a Go
 * toolchain is found) for the rows that set goroutines against fibers.
 */
#ifndef XF_TOOLS_BENCH_GO_H
#define XF_TOOLS_BENCH_GO_H

#include <stddef.h>
#include <stdint.h>

/* Why the Go rows cannot run here (one line), or NULL if they can. */
const char *xf_bench_go_missing(void);

/* Runs the peer as `xfiber-bench-go -mode mode -n n` with GOMAXPROCS=1,
 * pinned as the calling thread is, and reads its line "COUNT NANOSECONDS".
 * 0, or an errno value with one line in note. */
int xf_bench_go_run(const char *mode, uint64_t n, unsigned long long *count, double *ns,
		    char *note, size_t note_size);

#endif
