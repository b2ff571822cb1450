/* command.c - `xfiber info`: the machine's extended-state picture. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/command.h"
#include "common/json.h"
#include "common/xsave_costs.h"
#include "xfiber.h"

#define COST_BATCHES 51
#define COST_ITERS   256

static void info_help(FILE *out)
{
	fprintf(out,
		"usage: xfiber info [--json] [--costs] [--amx]\n\n"
		"Shows the CPU's extended register state as xfiber sees it, like the kernel's\n"
		"'x86/fpu:' boot lines but from user space:\n"
		"  XCR0            the state components the OS enabled (XGETBV(0))\n"
		"  XINUSE          the components not in their init state right now (XGETBV(1));\n"
		"                  a component in init state costs nothing to save or restore\n"
		"  components      bit, name, size in bytes and offset in the standard XSAVE\n"
		"                  format; the offset in the compacted (XSAVEC) format; whether\n"
		"                  it is 64-byte aligned when compacted; whether XFD can arm it\n"
		"                  (the kernel then grants it per process, as with AMX tiles)\n"
		"  area sizes      bytes of a standard and of a compacted image of all of XCR0\n"
		"  instructions    which of XSAVEOPT, XSAVEC, XSAVES, XGETBV1 and XFD exist\n"
		"  strategy        the instruction xfiber saves with: the fastest correct one,\n"
		"                  or the one XFIBER_XSAVE=xsaveopt|xsavec|xsave|fxsave forces\n"
		"  AT_MINSIGSTKSZ  the bytes the kernel needs for a signal frame\n"
		"  AMX             whether this process may use tiles (ARCH_GET_XCOMP_PERM)\n\n"
		"options:\n"
		"  --json    print the same as one JSON object (keys: xcr0, xinuse,\n"
		"            xsave_size_standard, xsave_size_compacted, min_sigstksz, strategy,\n"
		"            amx_permitted, components[{bit, name, size, offset, ...}], ...)\n"
		"  --costs   also measure the median ns of XSAVEOPT, XSAVEC, XSAVE, XRSTOR and\n"
		"            FXSAVE with the registers in init, SSE, AVX, AVX-512 and AMX state,\n"
		"            and of a save+restore pair through xfiber's API against the raw\n"
		"            instructions (requests AMX permission to measure the AMX column)\n"
		"  --amx     request AMX permission before reporting\n");
}

static void print_mask_names(const xf_xstate_info *info, uint64_t mask)
{
	const char *sep = "";

	for (unsigned i = 0; i < info->ncomponents; i++) {
		if (mask & XF_XFEATURE_MASK(info->components[i].bit)) {
			printf("%s%s", sep, info->components[i].name);
			sep = ", ";
		}
	}
	if (!*sep)
		printf("all in init state");
}

static void print_text(const xf_xstate_info *info, int amx_request_error)
{
	printf("xfiber %s (commit %s)\n", xf_version(), xf_commit());
	printf("XCR0             0x%llx\n", (unsigned long long)info->xcr0);
	printf("XINUSE           0x%llx (", (unsigned long long)info->xinuse);
	print_mask_names(info, info->xinuse);
	printf(")%s\n", info->has_xgetbv1 ? "" : " [no XGETBV1: assumed all of XCR0]");
	printf("instructions     XSAVE %s, XSAVEOPT %s, XSAVEC %s, XSAVES %s, XGETBV1 %s, XFD %s\n",
	       info->has_xsave ? "yes" : "no", info->has_xsaveopt ? "yes" : "no",
	       info->has_xsavec ? "yes" : "no", info->has_xsaves ? "yes" : "no",
	       info->has_xgetbv1 ? "yes" : "no", info->has_xfd ? "yes" : "no");
	printf("components\n  bit  %-32s %6s %7s %10s %8s %4s\n", "name", "size", "offset",
	       "compacted", "align64", "xfd");
	for (unsigned i = 0; i < info->ncomponents; i++) {
		const xf_xstate_component *c = &info->components[i];
		printf("  %3u  %-32s %6u %7u %10u %8s %4s\n", c->bit, c->name, c->size, c->offset,
		       c->compacted_offset, c->align64 ? "yes" : "no", c->xfd ? "yes" : "no");
	}
	printf("area size        %u bytes standard, %u bytes compacted\n", info->size_standard,
	       info->size_compacted);
	printf("strategy         %s (save buffer %u bytes)\n", info->strategy_name,
	       info->save_size);
	printf("AT_MINSIGSTKSZ   %lu bytes\n", info->min_sigstksz);
	if (!info->has_amx)
		printf("AMX              not available on this CPU or kernel\n");
	else if (info->amx_permitted)
		printf("AMX              permitted (ARCH_GET_XCOMP_PERM 0x%llx)\n",
		       (unsigned long long)info->xcomp_perm);
	else
		printf("AMX              not permitted yet (ARCH_GET_XCOMP_PERM 0x%llx; "
		       "xf_xstate_request_amx() or --amx asks for it)\n",
		       (unsigned long long)info->xcomp_perm);
	if (amx_request_error)
		printf("AMX request      refused: %s\n", strerror(amx_request_error));
}

static void print_costs_text(const struct xf_xsave_costs *c, const xf_xstate_info *info)
{
	printf("\ncosts: median ns per operation (%d batches of %d), RFBM = XCR0\n", COST_BATCHES,
	       COST_ITERS);
	printf("  %-18s", "operation");
	for (int s = 0; s < XF_COST_NSTATES; s++)
		printf(" %8s", xf_cost_state_name(s));
	printf("\n");
	for (int op = 0; op < XF_COST_NOPS; op++) {
		if (!c->op_available[op])
			continue;
		printf("  %-18s", xf_cost_op_name(op));
		for (int s = 0; s < XF_COST_NSTATES; s++) {
			if (c->state_available[s])
				printf(" %8.1f", c->ns[op][s]);
			else
				printf(" %8s", "n/a");
		}
		printf("\n");
	}
	printf("  %-18s", "XINUSE");
	for (int s = 0; s < XF_COST_NSTATES; s++)
		printf(" %8llx", (unsigned long long)c->xinuse[s]);
	printf("\n  %-18s", "XSAVEC bytes");
	for (int s = 0; s < XF_COST_NSTATES; s++)
		printf(" %8u", c->xsavec_bytes[s]);
	printf("\n");
	if (c->state_available[XF_COST_AVX512] && c->op_available[XF_COST_PAIR_API]) {
		enum xf_cost_op same = info->strategy == XF_XSAVE_XSAVEOPT ? XF_COST_PAIR_XSAVEOPT
									   : XF_COST_PAIR_XSAVEC;
		double api = c->ns[XF_COST_PAIR_API][XF_COST_AVX512];

		printf("  api save+restore with AVX-512 dirty (%s): %.2fx the raw %s pair",
		       info->strategy_name, api / c->ns[same][XF_COST_AVX512],
		       xf_cost_op_name(same));
		if (same != XF_COST_PAIR_XSAVEOPT)
			printf(", %.2fx the raw xsaveopt+xrstor pair",
			       api / c->ns[XF_COST_PAIR_XSAVEOPT][XF_COST_AVX512]);
		printf("\n");
	}
	if (!c->state_available[XF_COST_AMX])
		printf("  (amx column: AMX %s)\n",
		       info->has_amx ? "permission was refused" : "is not available here");
}

static void print_json(const xf_xstate_info *info, const struct xf_xsave_costs *c)
{
	struct xf_json j;

	xf_json_init(&j, stdout);
	xf_json_begin_object(&j, NULL);
	xf_json_string(&j, "version", xf_version());
	xf_json_string(&j, "commit", xf_commit());
	xf_json_hex(&j, "xcr0", info->xcr0);
	xf_json_hex(&j, "xinuse", info->xinuse);
	xf_json_uint(&j, "xsave_size_standard", info->size_standard);
	xf_json_uint(&j, "xsave_size_compacted", info->size_compacted);
	xf_json_uint(&j, "min_sigstksz", info->min_sigstksz);
	xf_json_string(&j, "strategy", info->strategy_name);
	xf_json_uint(&j, "save_size", info->save_size);
	xf_json_bool(&j, "amx_available", info->has_amx);
	xf_json_bool(&j, "amx_permitted", info->amx_permitted);
	xf_json_hex(&j, "xcomp_perm", info->xcomp_perm);
	xf_json_begin_object(&j, "instructions");
	xf_json_bool(&j, "xsave", info->has_xsave);
	xf_json_bool(&j, "xsaveopt", info->has_xsaveopt);
	xf_json_bool(&j, "xsavec", info->has_xsavec);
	xf_json_bool(&j, "xsaves", info->has_xsaves);
	xf_json_bool(&j, "xgetbv1", info->has_xgetbv1);
	xf_json_bool(&j, "xfd", info->has_xfd);
	xf_json_end_object(&j);
	xf_json_begin_array(&j, "components");
	for (unsigned i = 0; i < info->ncomponents; i++) {
		const xf_xstate_component *comp = &info->components[i];
		xf_json_begin_object(&j, NULL);
		xf_json_uint(&j, "bit", comp->bit);
		xf_json_string(&j, "name", comp->name);
		xf_json_uint(&j, "size", comp->size);
		xf_json_uint(&j, "offset", comp->offset);
		xf_json_uint(&j, "compacted_offset", comp->compacted_offset);
		xf_json_bool(&j, "align64", comp->align64);
		xf_json_bool(&j, "xfd", comp->xfd);
		xf_json_end_object(&j);
	}
	xf_json_end_array(&j);
	if (c) {
		xf_json_begin_object(&j, "costs_ns");
		for (int op = 0; op < XF_COST_NOPS; op++) {
			if (!c->op_available[op])
				continue;
			xf_json_begin_object(&j, xf_cost_op_name(op));
			for (int s = 0; s < XF_COST_NSTATES; s++) {
				if (c->state_available[s])
					xf_json_double(&j, xf_cost_state_name(s), c->ns[op][s]);
				else
					xf_json_null(&j, xf_cost_state_name(s));
			}
			xf_json_end_object(&j);
		}
		xf_json_end_object(&j);
		xf_json_begin_object(&j, "xsavec_bytes");
		for (int s = 0; s < XF_COST_NSTATES; s++)
			xf_json_uint(&j, xf_cost_state_name(s), c->xsavec_bytes[s]);
		xf_json_end_object(&j);
	}
	xf_json_end_object(&j);
}

static int info_run(int argc, char **argv)
{
	bool json = false, costs = false, amx = false;
	struct xf_xsave_costs table;
	xf_xstate_info info;
	int amx_error = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (!strcmp(argv[i], "--costs"))
			costs = true;
		else if (!strcmp(argv[i], "--amx"))
			amx = true;
		else {
			fprintf(stderr,
				"xfiber info: unknown option '%s' (see 'xfiber info --help')\n",
				argv[i]);
			return 2;
		}
	}
	xf_xstate_info_get(&info);
	if (info.strategy == XF_XSAVE_NONE) {
		fprintf(stderr, "xfiber info: %s\n",
			info.strategy_error ? info.strategy_error : "no save strategy available");
		return 1;
	}
	if ((amx || costs) && info.has_amx) {
		amx_error = xf_xstate_request_amx();
		xf_xstate_info_get(&info);
	}
	if (costs) {
		int err = xf_xsave_costs_measure(&table, COST_BATCHES, COST_ITERS);
		if (err) {
			fprintf(stderr, "xfiber info: cannot measure costs: %s\n",
				err == ENOTSUP ? "this CPU has no XSAVEC" : strerror(err));
			return 1;
		}
	}
	if (json)
		print_json(&info, costs ? &table : NULL);
	else {
		print_text(&info, amx_error);
		if (costs)
			print_costs_text(&table, &info);
	}
	return 0;
}

XF_COMMAND(info_command) = {
    .name = "info",
    .summary = "show the CPU's extended state (XCR0, components, sizes, strategy)",
    .run = info_run,
    .help = info_help,
};
