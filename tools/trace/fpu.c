/* fpu.c - see fpu.h. */
#include <cpuid.h>
#include <stdlib.h>
#include <string.h>

#include "trace/fpu.h"
#include "xfiber.h"

#define CLONE_THREAD_FLAG 0x00010000 /* <linux/sched.h> CLONE_THREAD */

/* sched_switch prev_state bits (TASK_REPORT encoding): the task is gone. */
#define TASK_REPORT_DEAD (0x10 /* EXIT_DEAD, "X" */ | 0x20 /* EXIT_ZOMBIE, "Z" */)
#define TASK_REPORT_MASK 0xff /* above it: the preempted marker */

struct xf_fpu_cpu_state {
	int cur;	 /* the task running on this CPU, as far as the records say */
	bool cur_valid;	 /* cur is known: a record since tracing began or since a gap */
	bool cur_known;	 /* cur's stint began while we watched */
	bool cur_loaded; /* cur loaded its registers in this stint */
	/* A switch-out whose save, if any, is the very next record. */
	bool pending;
	int pending_tid;
	bool pending_known, pending_loaded;
};

int xf_fpu_trace_init(struct xf_fpu_trace *t, unsigned ncpus, int root_pid)
{
	xf_xstate_info info;

	memset(t, 0, sizeof(*t));
	t->root_pid = root_pid;
	t->ncpus = ncpus;
	t->cpus = calloc(ncpus ? ncpus : 1, sizeof(*t->cpus));
	if (!t->cpus)
		return -1;
	/* The sizes the library discovered for XCR0; CPUID for the rest, such
	 * as supervisor components that only the kernel's XSAVES writes. */
	xf_xstate_info_get(&info);
	for (unsigned bit = 2; bit < 63; bit++) {
		unsigned eax = 0, ebx, ecx, edx;

		if (__get_cpuid_count(0xd, bit, &eax, &ebx, &ecx, &edx))
			t->component_bytes[bit] = eax;
	}
	for (unsigned i = 0; i < info.ncomponents; i++)
		t->component_bytes[info.components[i].bit] = info.components[i].size;
	return 0;
}

uint64_t xf_fpu_xfeatures_bytes(const struct xf_fpu_trace *t, uint64_t xfeatures)
{
	uint64_t bytes = 0;

	for (unsigned bit = 0; bit < 64; bit++) {
		if (xfeatures & XF_XFEATURE_MASK(bit))
			bytes += t->component_bytes[bit];
	}
	return bytes;
}

static int grow_index(struct xf_fpu_trace *t)
{
	size_t nslots = t->nslots ? t->nslots * 2 : 256;
	int *slots = malloc(nslots * sizeof(*slots));

	if (!slots)
		return -1;
	memset(slots, -1, nslots * sizeof(*slots));
	for (size_t i = 0; i < t->ntasks; i++) {
		size_t s = (unsigned)t->tasks[i].tid & (nslots - 1);

		while (slots[s] >= 0)
			s = (s + 1) & (nslots - 1);
		slots[s] = (int)i;
	}
	free(t->slots);
	t->slots = slots;
	t->nslots = nslots;
	return 0;
}

/* The task with this tid, created on first sight; NULL when out of memory. */
static struct xf_fpu_task *task(struct xf_fpu_trace *t, int tid)
{
	size_t s;

	if (2 * (t->ntasks + 1) > t->nslots && grow_index(t))
		return NULL;
	for (s = (unsigned)tid & (t->nslots - 1); t->slots[s] >= 0; s = (s + 1) & (t->nslots - 1)) {
		if (t->tasks[t->slots[s]].tid == tid)
			return &t->tasks[t->slots[s]];
	}
	if (t->ntasks == t->tasks_cap) {
		size_t cap = t->tasks_cap ? t->tasks_cap * 2 : 64;
		struct xf_fpu_task *tasks = realloc(t->tasks, cap * sizeof(*tasks));

		if (!tasks)
			return NULL;
		t->tasks = tasks;
		t->tasks_cap = cap;
	}
	t->slots[s] = (int)t->ntasks;
	memset(&t->tasks[t->ntasks], 0, sizeof(t->tasks[0]));
	t->tasks[t->ntasks].tid = tid;
	return &t->tasks[t->ntasks++];
}

static void set_comm(struct xf_fpu_task *k, const char *comm, uint64_t ts)
{
	if (comm[0] && (!k->comm[0] || ts >= k->comm_ts)) {
		memcpy(k->comm, comm, sizeof(k->comm));
		k->comm_ts = ts;
	}
}

/* Adds n saves of xfeatures to a bin list; -1 when out of memory. */
static int add_to_bins(struct xf_fpu_xfeatures_bin **bins, size_t *nbins, size_t *cap,
		       uint64_t xfeatures, uint64_t n, uint64_t bytes_per_save)
{
	size_t i;

	for (i = 0; i < *nbins && (*bins)[i].xfeatures != xfeatures; i++)
		;
	if (i == *nbins) {
		if (*nbins == *cap) {
			size_t grown = *cap ? *cap * 2 : 4;
			struct xf_fpu_xfeatures_bin *b = realloc(*bins, grown * sizeof(*b));

			if (!b)
				return -1;
			*bins = b;
			*cap = grown;
		}
		(*bins)[(*nbins)++] = (struct xf_fpu_xfeatures_bin){xfeatures, 0, bytes_per_save};
	}
	(*bins)[i].saves += n;
	return 0;
}

static int count_save(struct xf_fpu_trace *t, struct xf_fpu_task *k, uint64_t xfeatures)
{
	uint64_t bytes = xf_fpu_xfeatures_bytes(t, xfeatures);

	k->c.bytes_saved += bytes;
	k->c.saves_with_avx512 += (xfeatures & XF_XFEATURE_MASK_AVX512) != 0;
	k->c.saves_with_amx += (xfeatures & XF_XFEATURE_MASK_AMX) != 0;
	return add_to_bins(&k->bins, &k->nbins, &k->bins_cap, xfeatures, 1, bytes);
}

/* The switch-out waiting in cs is decided: `saved` says whether its save
 * followed; `known` false when the records that would say were lost. */
static int close_stint(struct xf_fpu_trace *t, struct xf_fpu_cpu_state *cs, bool saved, bool known)
{
	struct xf_fpu_task *k = task(t, cs->pending_tid);

	cs->pending = false;
	if (!k)
		return -1;
	if (!known || !cs->pending_known)
		k->c.switches_unclassified++;
	else if (cs->pending_loaded)
		k->c.switches_with_load++;
	else if (saved)
		k->c.no_load_registers_valid++;
	else
		k->c.no_load_not_returned++;
	if (known && !saved)
		k->c.saves_skipped++;
	return 0;
}

static int on_switch(struct xf_fpu_trace *t, struct xf_fpu_cpu_state *cs,
		     const struct xf_trace_record *r)
{
	struct xf_fpu_task *prev = task(t, r->prev_pid), *next;

	if (!prev)
		return -1;
	prev->c.context_switches++;
	set_comm(prev, r->prev_comm, r->ts);
	if ((r->prev_state & TASK_REPORT_MASK) & TASK_REPORT_DEAD)
		prev->exited = true;
	cs->pending = true;
	cs->pending_tid = r->prev_pid;
	cs->pending_known = cs->cur_known;
	cs->pending_loaded = cs->cur_loaded;

	next = task(t, r->next_pid);
	if (!next)
		return -1;
	set_comm(next, r->next_comm, r->ts);
	cs->cur = r->next_pid;
	cs->cur_valid = true;
	cs->cur_known = true;
	cs->cur_loaded = false;
	return 0;
}

int xf_fpu_trace_record(struct xf_fpu_trace *t, const struct xf_trace_record *r)
{
	struct xf_fpu_cpu_state *cs;
	struct xf_fpu_task *k, *child;
	int running;

	if (r->cpu >= t->ncpus)
		return 0;
	cs = &t->cpus[r->cpu];
	if (cs->pending) {
		/* switch_fpu() runs in __switch_to(), right after the sched_switch
		 * tracepoint and with interrupts off: its save is the next record. */
		bool saved = r->kind == XF_EV_REGS_DEACTIVATED && r->pid == cs->pending_tid;

		if (saved) {
			k = task(t, r->pid);
			if (!k || count_save(t, k, r->xfeatures))
				return -1;
			k->c.saves_at_switch++;
		}
		if (close_stint(t, cs, saved, true))
			return -1;
		if (saved)
			return 0;
	}
	running = r->kind == XF_EV_SCHED_SWITCH ? r->prev_pid : r->pid;
	if (!cs->cur_valid || running != cs->cur) {
		/* A switch-in that was not recorded.  Some kernels record
		 * nothing while certain tasks run (a CPU's idle task, say), so
		 * a switch away from them is missing; but every record of the
		 * running task is made while it runs, so its stint is still
		 * seen whole, unless we do not know what ran before it. */
		cs->cur_known = cs->cur_valid;
		cs->cur_valid = true;
		cs->cur = running;
		cs->cur_loaded = false;
	}
	if (r->kind == XF_EV_SCHED_SWITCH)
		return on_switch(t, cs, r);

	k = task(t, r->pid); /* the running task made the record */
	if (!k)
		return -1;
	switch (r->kind) {
	case XF_EV_TASK_NEWTASK:
		child = task(t, r->child_pid);
		if (!child)
			return -1;
		child->parent = r->pid;
		child->is_thread = (r->clone_flags & CLONE_THREAD_FLAG) != 0;
		set_comm(child, r->comm, r->ts);
		break;
	case XF_EV_REGS_ACTIVATED:
	case XF_EV_AFTER_RESTORE:
		if (r->kind == XF_EV_REGS_ACTIVATED && r->has_load_fpu && !r->load_fpu) {
			k->c.set_in_place++;
			break;
		}
		k->c.fpu_loads++;
		k->c.bytes_loaded += xf_fpu_xfeatures_bytes(t, r->xfeatures);
		cs->cur_loaded = true;
		break;
	case XF_EV_AFTER_SAVE:
		if (r->has_load_fpu && r->load_fpu)
			break; /* registers were already in memory: nothing written */
		if (count_save(t, k, r->xfeatures))
			return -1;
		k->c.saves_on_demand++;
		break;
	case XF_EV_COPY_DST:
		if (count_save(t, k, r->xfeatures))
			return -1;
		k->c.saves_at_fork++;
		break;
	case XF_EV_DROPPED: k->c.drops++; break;
	default: break;
	}
	return 0;
}

void xf_fpu_trace_gap(struct xf_fpu_trace *t, unsigned cpu)
{
	struct xf_fpu_cpu_state *cs;

	if (cpu >= t->ncpus)
		return;
	cs = &t->cpus[cpu];
	if (cs->pending)
		close_stint(t, cs, false, false);
	cs->cur_valid = false;
}

static struct xf_fpu_task *find(const struct xf_fpu_trace *t, int tid)
{
	if (!t->nslots)
		return NULL;
	for (size_t s = (unsigned)tid & (t->nslots - 1); t->slots[s] >= 0;
	     s = (s + 1) & (t->nslots - 1)) {
		if (t->tasks[t->slots[s]].tid == tid)
			return &t->tasks[t->slots[s]];
	}
	return NULL;
}

/* COMMAND's tasks are its root and everything created from it
 * (task_newtask); the walk up the creators is bounded in case a reused tid
 * made a loop. */
static bool is_ours(const struct xf_fpu_trace *t, const struct xf_fpu_task *k)
{
	for (unsigned steps = 0; k && k->tid != 0 && steps < 100000; steps++) {
		if (k->tid == t->root_pid)
			return true;
		k = k->parent ? find(t, k->parent) : NULL;
	}
	return false;
}

bool xf_fpu_trace_all_exited(const struct xf_fpu_trace *t)
{
	for (size_t i = 0; i < t->ntasks; i++) {
		if (!t->tasks[i].exited && is_ours(t, &t->tasks[i]))
			return false;
	}
	return true;
}

/* A thread belongs to its creator's thread group; a process is its own. */
static int thread_group(const struct xf_fpu_trace *t, const struct xf_fpu_task *k)
{
	for (unsigned steps = 0; k && steps < 100000; steps++) {
		if (k->tid == t->root_pid || !k->is_thread)
			return k->tid;
		k = find(t, k->parent);
	}
	return -1;
}

static void add_counts(struct xf_fpu_counts *sum, const struct xf_fpu_counts *c)
{
	const uint64_t *from = (const uint64_t *)c;
	uint64_t *to = (uint64_t *)sum;

	for (size_t i = 0; i < sizeof(*c) / sizeof(uint64_t); i++)
		to[i] += from[i];
}

static int by_pid_tid(const void *a, const void *b)
{
	const struct xf_fpu_task *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

static int by_xfeatures(const void *a, const void *b)
{
	const struct xf_fpu_xfeatures_bin *x = a, *y = b;

	return (x->xfeatures > y->xfeatures) - (x->xfeatures < y->xfeatures);
}

int xf_fpu_trace_finish(struct xf_fpu_trace *t)
{
	size_t kept = 0;

	for (unsigned cpu = 0; cpu < t->ncpus; cpu++) {
		if (t->cpus[cpu].pending)
			close_stint(t, &t->cpus[cpu], false, false);
	}
	for (size_t i = 0; i < t->ntasks; i++) {
		t->tasks[i].ours = is_ours(t, &t->tasks[i]);
		t->tasks[i].pid = thread_group(t, &t->tasks[i]);
	}
	for (size_t i = 0; i < t->ntasks; i++) {
		struct xf_fpu_task *k = &t->tasks[i];

		for (size_t b = 0; k->ours && b < k->nbins; b++) {
			if (add_to_bins(&t->bins, &t->nbins, &t->bins_cap, k->bins[b].xfeatures,
					k->bins[b].saves, k->bins[b].bytes_per_save))
				return -1;
		}
		free(k->bins);
		k->bins = NULL;
		if (k->ours)
			t->tasks[kept++] = *k;
	}
	t->ntasks = kept;
	free(t->slots); /* the index no longer matches */
	t->slots = NULL;
	t->nslots = 0;
	qsort(t->tasks, t->ntasks, sizeof(t->tasks[0]), by_pid_tid);
	qsort(t->bins, t->nbins, sizeof(t->bins[0]), by_xfeatures);
	memset(&t->totals, 0, sizeof(t->totals));
	for (size_t i = 0; i < t->ntasks; i++)
		add_counts(&t->totals, &t->tasks[i].c);
	return 0;
}

void xf_fpu_trace_free(struct xf_fpu_trace *t)
{
	for (size_t i = 0; i < t->ntasks; i++)
		free(t->tasks[i].bins);
	free(t->tasks);
	free(t->slots);
	free(t->cpus);
	free(t->bins);
	memset(t, 0, sizeof(*t));
}
