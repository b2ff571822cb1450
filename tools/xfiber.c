/* xfiber.c - the `xfiber` command: version, help, and dispatch to subcommands. */
#include <stdio.h>
#include <string.h>

#include "common/command.h"
#include "xfiber.h"

extern const struct xf_command __start_xf_commands[];
extern const struct xf_command __stop_xf_commands[];

int xf_wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return 1;
	}
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: xfiber [--version] [--help] COMMAND [ARGS...]\n\n"
		     "xfiber measures and shows how x86-64 extended register state (x87, SSE,\n"
		     "AVX, AVX-512, AMX) is saved and switched, for kernel threads and for\n"
		     "xfiber's user-level fibers.\n\ncommands:\n");
	for (const struct xf_command *c = __start_xf_commands; c < __stop_xf_commands; c++)
		fprintf(out, "  %-10s %s\n", c->name, c->summary);
	fprintf(out, "\n'xfiber COMMAND --help' describes one command.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("xfiber %s (commit %s)\n", xf_version(), xf_commit());
		return 0;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	for (const struct xf_command *c = __start_xf_commands; c < __stop_xf_commands; c++) {
		if (strcmp(argv[1], c->name))
			continue;
		if (xf_wants_help(argc - 1, argv + 1)) {
			c->help(stdout);
			return 0;
		}
		return c->run(argc - 1, argv + 1);
	}
	fprintf(stderr, "xfiber: unknown command '%s' (see 'xfiber --help')\n", argv[1]);
	return 2;
}
