/*
 * command.h - how `xfiber` subcommands register themselves.
 *
 * Each subcommand's command.c (tools/bench/, tools/trace/, ...) defines one
 * XF_COMMAND; the linker gathers them into the section xf_commands, which
 * tools/xfiber.c walks.  Nothing else but tools/CMakeLists.txt's list of
 * folders needs editing to add a subcommand.
 */
#ifndef XF_TOOLS_COMMON_COMMAND_H
#define XF_TOOLS_COMMON_COMMAND_H

#include <stdio.h>

struct xf_command {
	const char *name;
	const char *summary;		   /* one line for `xfiber --help` */
	int (*run)(int argc, char **argv); /* argv[0] is the subcommand name */
	void (*help)(FILE *out);	   /* `xfiber NAME --help` */
};

#define XF_COMMAND(var)                                                                            \
	static const struct xf_command var                                                         \
	    __attribute__((used, section("xf_commands"), aligned(sizeof(void *))))

/* True if argv holds --help or -h before a "--". */
int xf_wants_help(int argc, char **argv);

#endif
