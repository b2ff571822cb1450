/*
 * ring.h - the pages that per_cpu/cpuN/trace_pipe_raw returns: the
 * kernel's ring-buffer sub-buffers, read in binary so that no text format
 * (comm names with spaces, changed print formats) can confuse the counts.
 *
 * A page is a header (timestamp, commit = bytes of data plus two flags for
 * lost events) followed by records, each a 32-bit header (type_len:5,
 * time_delta:27) and a payload.  events/header_page and events/header_event
 * in tracefs describe the layout; the kernel's ring_buffer.c defines it.
 */
#ifndef XF_TOOLS_TRACE_RING_H
#define XF_TOOLS_TRACE_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct xf_ring_layout {
	unsigned commit_offset, commit_size; /* from events/header_page */
	unsigned data_offset;
};

/* Reads events/header_page under base; falls back to the 64-bit layout
 * every kernel since 2.6.31 uses if the file is missing or unreadable. */
void xf_ring_layout_load(struct xf_ring_layout *l, const char *base);

/* True if the kernel lost records between the previous page and this one
 * (the buffer was full); the stats file says how many. */
bool xf_ring_page_missed(const struct xf_ring_layout *l, const uint8_t *page, size_t size);

/* Called for each data record: its timestamp and its payload (starting with
 * common_type). */
typedef void (*xf_ring_record_fn)(void *ctx, uint64_t ts, const uint8_t *payload, size_t len);

/* Walks one page of `size` bytes, never reading outside it.  Returns false
 * if it stopped early at a record that made no sense. */
bool xf_ring_page_parse(const struct xf_ring_layout *l, const uint8_t *page, size_t size,
			xf_ring_record_fn fn, void *ctx);

#endif
