/* ring.c - see ring.h. */
#include <stdio.h>
#include <string.h>

#include "trace/fs.h"
#include "trace/ring.h"

/* kernel/trace/ring_buffer.c */
#define RB_MISSED_EVENTS    (UINT64_C(1) << 31)	   /* records were lost before this page */
#define RB_MISSED_STORED    (UINT64_C(1) << 30)	   /* and their count follows the data */
#define RB_COMMIT_MASK	    (RB_MISSED_STORED - 1) /* the rest: bytes of data */
#define RB_TYPE_PADDING	    29 /* discarded record, or (delta 0) the end of the data */
#define RB_TYPE_TIME_EXTEND 30 /* delta too large for 27 bits: 8 bytes */
#define RB_TYPE_TIME_STAMP  31 /* absolute timestamp: 8 bytes */
#define RB_TYPE_DATA_MAX    28 /* 1..28: payload of type_len * 4 bytes */
#define RB_TS_SHIFT	    27
#define RB_HEADER_SIZE	    4

static void parse_header_field(struct xf_ring_layout *l, const char *text, const char *decl)
{
	const char *p = strstr(text, decl);
	unsigned offset, size;

	if (!p || sscanf(p + strlen(decl), "; offset:%u; size:%u;", &offset, &size) != 2)
		return;
	if (!strcmp(decl, "local_t commit")) {
		l->commit_offset = offset;
		l->commit_size = size;
	} else {
		l->data_offset = offset;
	}
}

void xf_ring_layout_load(struct xf_ring_layout *l, const char *base)
{
	char text[1024];

	l->commit_offset = 8;
	l->commit_size = 8;
	l->data_offset = 16;
	if (xf_tracefs_read(base, "events/header_page", text, sizeof(text)) <= 0)
		return;
	parse_header_field(l, text, "local_t commit");
	parse_header_field(l, text, "char data");
	if ((l->commit_size != 4 && l->commit_size != 8) || l->data_offset < 8 + l->commit_size) {
		l->commit_offset = 8;
		l->commit_size = 8;
		l->data_offset = 16;
	}
}

static uint32_t read_u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t read_uint(const uint8_t *p, unsigned size)
{
	uint64_t v = 0;

	memcpy(&v, p, size); /* little-endian: the low bytes come first */
	return v;
}

bool xf_ring_page_missed(const struct xf_ring_layout *l, const uint8_t *page, size_t size)
{
	return size >= l->data_offset &&
	       (read_uint(page + l->commit_offset, l->commit_size) & RB_MISSED_EVENTS);
}

bool xf_ring_page_parse(const struct xf_ring_layout *l, const uint8_t *page, size_t size,
			xf_ring_record_fn fn, void *ctx)
{
	uint64_t commit, ts;
	const uint8_t *p, *end;

	if (size < l->data_offset)
		return false;
	ts = read_uint(page, 8);
	commit = read_uint(page + l->commit_offset, l->commit_size);
	commit &= RB_COMMIT_MASK;
	if (commit > size - l->data_offset)
		return false;
	p = page + l->data_offset;
	end = p + commit;

	while (end - p >= RB_HEADER_SIZE) {
		uint32_t header = read_u32(p);
		unsigned type_len = header & 0x1f;
		uint32_t delta = header >> 5;
		size_t avail = (size_t)(end - p) - RB_HEADER_SIZE, length;
		const uint8_t *payload;

		if (type_len == RB_TYPE_PADDING) {
			if (delta == 0)
				return true; /* the rest of the page is unused */
			/* A discarded record: array[0] is its length, itself included. */
			if (avail < 4 || read_u32(p + 4) < 4 || read_u32(p + 4) > avail)
				return false;
			ts += delta;
			p += RB_HEADER_SIZE + read_u32(p + 4);
			continue;
		}
		if (type_len == RB_TYPE_TIME_EXTEND || type_len == RB_TYPE_TIME_STAMP) {
			uint64_t value;

			if (avail < 4)
				return false;
			value = ((uint64_t)read_u32(p + 4) << RB_TS_SHIFT) + delta;
			ts = type_len == RB_TYPE_TIME_EXTEND ? ts + value : value;
			p += 8;
			continue;
		}
		if (type_len == 0) {
			/* array[0] holds the length, itself included. */
			if (avail < 4 || read_u32(p + 4) < 4)
				return false;
			length = ((size_t)read_u32(p + 4) + 3) & ~(size_t)3;
			if (length > avail)
				return false;
			payload = p + 8;
			length -= 4;
		} else {
			length = (size_t)type_len * 4;
			if (length > avail)
				return false;
			payload = p + 4;
		}
		ts += delta;
		fn(ctx, ts, payload, length);
		p = payload + length;
	}
	return true;
}
