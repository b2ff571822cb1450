/*
 * test_units.c - the parts of `xfiber trace` that real workloads on
 * one machine may never exercise, fed with made-up input:
 *   ring    ring-buffer pages with time extends, absolute timestamps,
 *           discarded records, long records, lost-record flags and garbage
 *   stints  record sequences for each way a stint ends (load, registers
 *           still valid, never back in user space, unknown start), an
 *           unrecorded switch-in, lost records, and the process tree
 */
#include <string.h>

#include "testlib.h"
#include "trace/fpu.h"
#include "trace/ring.h"
#include "xfiber.h"

/* ---- ring pages ---- */

#define PAGE_SIZE_TEST 4096

static const struct xf_ring_layout layout = {
    .commit_offset = 8, .commit_size = 8, .data_offset = 16};

struct page_builder {
	uint8_t page[PAGE_SIZE_TEST];
	size_t used; /* bytes of data after the header */
};

static void put_u32(struct page_builder *b, uint32_t v)
{
	memcpy(b->page + layout.data_offset + b->used, &v, 4);
	b->used += 4;
}

static uint32_t header(unsigned type_len, uint32_t delta)
{
	return type_len | (delta << 5);
}

/* A small record: type_len words of payload, each word = its index + tag. */
static void put_small(struct page_builder *b, uint32_t delta, unsigned words, uint32_t tag)
{
	put_u32(b, header(words, delta));
	for (unsigned i = 0; i < words; i++)
		put_u32(b, tag + i);
}

static void finish_page(struct page_builder *b, uint64_t ts, uint64_t flags)
{
	uint64_t commit = b->used | flags;

	memcpy(b->page, &ts, 8);
	memcpy(b->page + 8, &commit, 8);
}

struct seen {
	unsigned n;
	uint64_t ts[8];
	size_t len[8];
	uint32_t first_word[8];
};

static void collect(void *ctx, uint64_t ts, const uint8_t *payload, size_t len)
{
	struct seen *s = ctx;

	if (s->n < 8) {
		s->ts[s->n] = ts;
		s->len[s->n] = len;
		memcpy(&s->first_word[s->n], payload, 4);
	}
	s->n++;
}

static void test_ring(void)
{
	struct page_builder b;
	struct seen s;

	memset(&b, 0, sizeof(b));
	put_small(&b, 5, 2, 100);   /* ts 1005, 8 bytes */
	put_u32(&b, header(30, 7)); /* time extend: + (3 << 27) + 7 */
	put_u32(&b, 3);
	put_small(&b, 1, 1, 200);   /* + 1 */
	put_u32(&b, header(29, 2)); /* a discarded record of 16 bytes */
	put_u32(&b, 12);
	put_u32(&b, 0xdead);
	put_u32(&b, 0xbeef);
	put_u32(&b, header(0, 4)); /* a long record: array[0] = 4 + 120 */
	put_u32(&b, 124);
	for (unsigned i = 0; i < 30; i++)
		put_u32(&b, 300 + i);
	put_u32(&b, header(31, 9)); /* absolute timestamp (5 << 27) + 9 */
	put_u32(&b, 5);
	put_small(&b, 0, 1, 400);
	finish_page(&b, 1000, 0);

	memset(&s, 0, sizeof(s));
	CHECK(xf_ring_page_parse(&layout, b.page, sizeof(b.page), collect, &s));
	CHECK(s.n == 4);
	CHECK(s.ts[0] == 1005 && s.len[0] == 8 && s.first_word[0] == 100);
	CHECK(s.ts[1] == 1005 + (UINT64_C(3) << 27) + 7 + 1 && s.len[1] == 4);
	CHECK(s.first_word[1] == 200);
	CHECK(s.ts[2] == s.ts[1] + 2 + 4 && s.len[2] == 120 && s.first_word[2] == 300);
	CHECK(s.ts[3] == (UINT64_C(5) << 27) + 9 && s.first_word[3] == 400);
	CHECK(!xf_ring_page_missed(&layout, b.page, sizeof(b.page)));

	/* Lost records before the page: flagged in commit, data unchanged. */
	finish_page(&b, 1000, UINT64_C(1) << 31);
	CHECK(xf_ring_page_missed(&layout, b.page, sizeof(b.page)));
	memset(&s, 0, sizeof(s));
	CHECK(xf_ring_page_parse(&layout, b.page, sizeof(b.page), collect, &s) && s.n == 4);

	/* A null padding record ends the data early. */
	memset(&b, 0, sizeof(b));
	put_small(&b, 1, 1, 1);
	put_u32(&b, header(29, 0));
	put_small(&b, 1, 1, 2);
	finish_page(&b, 0, 0);
	memset(&s, 0, sizeof(s));
	CHECK(xf_ring_page_parse(&layout, b.page, sizeof(b.page), collect, &s) && s.n == 1);

	/* Garbage: a commit beyond the page, a record beyond the commit, a
	 * long record too short to hold its own length: refused, no overrun. */
	finish_page(&b, 0, PAGE_SIZE_TEST);
	CHECK(!xf_ring_page_parse(&layout, b.page, sizeof(b.page), collect, &s));
	memset(&b, 0, sizeof(b));
	put_u32(&b, header(28, 0));
	finish_page(&b, 0, 0);
	CHECK(!xf_ring_page_parse(&layout, b.page, sizeof(b.page), collect, &s));
	memset(&b, 0, sizeof(b));
	put_u32(&b, header(0, 0));
	put_u32(&b, 2);
	finish_page(&b, 0, 0);
	CHECK(!xf_ring_page_parse(&layout, b.page, sizeof(b.page), collect, &s));
	CHECK(!xf_ring_page_parse(&layout, b.page, 8, collect, &s));
	printf("ring pages: records, time extends, padding, long records, garbage: ok\n");
}

/* ---- stints ---- */

enum { ROOT = 100, THREAD = 101, CHILD = 102, OTHER = 200, IDLE = 0 };
#define XF 0xe7 /* xfeatures of every save and load below */

static struct xf_fpu_trace trace;
static uint64_t clock_ns;

static void feed(unsigned cpu, struct xf_trace_record r)
{
	r.cpu = cpu;
	r.ts = ++clock_ns;
	r.has_load_fpu = true;
	if (xf_fpu_trace_record(&trace, &r))
		xf_test_fail("out of memory");
}

static void sw(unsigned cpu, int prev, int next, int64_t state)
{
	feed(cpu, (struct xf_trace_record){.kind = XF_EV_SCHED_SWITCH,
					   .pid = prev,
					   .prev_pid = prev,
					   .next_pid = next,
					   .prev_state = state});
}

static void save(unsigned cpu, int pid)
{
	feed(cpu,
	     (struct xf_trace_record){
		 .kind = XF_EV_REGS_DEACTIVATED, .pid = pid, .load_fpu = true, .xfeatures = XF});
}

static void load(unsigned cpu, int pid)
{
	feed(cpu, (struct xf_trace_record){
		      .kind = XF_EV_REGS_ACTIVATED, .pid = pid, .load_fpu = true, .xfeatures = XF});
}

static void newtask(unsigned cpu, int parent, int child, bool thread)
{
	feed(cpu, (struct xf_trace_record){.kind = XF_EV_TASK_NEWTASK,
					   .pid = parent,
					   .child_pid = child,
					   .clone_flags = thread ? 0x10000 : 0x1200000});
}

static const struct xf_fpu_task *find_task(int tid)
{
	for (size_t i = 0; i < trace.ntasks; i++) {
		if (trace.tasks[i].tid == tid)
			return &trace.tasks[i];
	}
	xf_test_fail("task %d not in the report", tid);
}

static void test_stints(void)
{
	const struct xf_fpu_task *k;

	CHECK(xf_fpu_trace_init(&trace, 2, ROOT) == 0);
	/* CPU 0: ROOT was running when tracing began: its first stint is unknown. */
	newtask(0, ROOT, THREAD, true);
	sw(0, ROOT, THREAD, 1);
	save(0, ROOT);
	/* THREAD: switched in, loads, back out with a save: a stint with load. */
	load(0, THREAD);
	sw(0, THREAD, ROOT, 1);
	save(0, THREAD);
	/* ROOT: no load, then a save: it found its registers still valid. */
	sw(0, ROOT, IDLE, 1);
	save(0, ROOT);
	/* Idle's switch-in of ROOT is not recorded (as on some kernels); ROOT
	 * switches out without a save: it never returned to user space. */
	sw(0, ROOT, OTHER, 2);
	/* An unrelated task: counted nowhere in the report. */
	load(0, OTHER);
	sw(0, OTHER, ROOT, 1);
	save(0, OTHER);
	/* ROOT forks a process and exits (dead: prev_state Z). */
	newtask(0, ROOT, CHILD, false);
	load(0, ROOT);
	sw(0, ROOT, CHILD, 0x20);
	save(0, ROOT);
	/* CPU 1: records were lost, so CHILD's stint there is unclassified. */
	sw(1, IDLE, CHILD, 0);
	xf_fpu_trace_gap(&trace, 1);
	load(1, CHILD);
	sw(1, CHILD, IDLE, 0x10);
	save(1, CHILD);
	CHECK(!xf_fpu_trace_all_exited(&trace)); /* THREAD still runs */
	/* THREAD, switched in from idle unrecorded, dies in the kernel. */
	sw(1, THREAD, IDLE, 0x10);
	load(1, OTHER); /* the next record shows no save followed */
	CHECK(xf_fpu_trace_all_exited(&trace));
	CHECK(xf_fpu_trace_finish(&trace) == 0);

	CHECK(trace.ntasks == 3); /* ROOT, THREAD, CHILD; not OTHER, not idle */
	k = find_task(ROOT);
	CHECK(k->pid == ROOT && k->c.context_switches == 4);
	CHECK(k->c.switches_unclassified == 1 && k->c.no_load_registers_valid == 1);
	CHECK(k->c.no_load_not_returned == 1 && k->c.switches_with_load == 1);
	CHECK(k->c.saves_at_switch == 3 && k->c.saves_skipped == 1 && k->c.fpu_loads == 1);
	k = find_task(THREAD);
	CHECK(k->pid == ROOT && k->c.switches_with_load == 1 && k->c.saves_at_switch == 1);
	CHECK(k->c.no_load_not_returned == 1 && k->c.saves_skipped == 1);
	k = find_task(CHILD);
	CHECK(k->pid == CHILD && k->c.switches_unclassified == 1 && k->c.saves_at_switch == 1);
	CHECK(trace.totals.context_switches == 7 && trace.totals.fpu_loads == 3);
	CHECK(trace.nbins == 1 && trace.bins[0].xfeatures == XF && trace.bins[0].saves == 5);
	CHECK(trace.bins[0].bytes_per_save == xf_fpu_xfeatures_bytes(&trace, XF));
	CHECK(trace.totals.bytes_saved == 5 * xf_fpu_xfeatures_bytes(&trace, XF));
	xf_fpu_trace_free(&trace);
	printf("stints: with load, registers valid, not returned, unknown; tree: ok\n");
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "ring"))
		test_ring();
	else if (argc == 2 && !strcmp(argv[1], "stints"))
		test_stints();
	else
		xf_test_fail("usage: test_units ring|stints");
	return 0;
}
