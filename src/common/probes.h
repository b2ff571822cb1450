/* probes.h - the runtime's USDT probes (provider "xfiber"), for bpftrace,
 * perf and SystemTap: docs/observability.md lists them with their
 * arguments.  Each is a single nop in the code and a note in the ELF file
 * (<sys/sdt.h> from Debian's systemtap-sdt-dev, header only); a tracer
 * that attaches replaces the nop with a breakpoint.  Built without the
 * header, they are nothing, and the probe test says so. */
#ifndef XF_COMMON_PROBES_H
#define XF_COMMON_PROBES_H

#if __has_include(<sys/sdt.h>)
#include <sys/sdt.h>
#define XF_PROBES_BUILT 1
#define XF_PROBE1(name, a)	     DTRACE_PROBE1(xfiber, name, a)
#define XF_PROBE2(name, a, b)	     DTRACE_PROBE2(xfiber, name, a, b)
#define XF_PROBE3(name, a, b, c)     DTRACE_PROBE3(xfiber, name, a, b, c)
#else
#define XF_PROBES_BUILT 0
#define XF_PROBE1(name, a)	     ((void)(a))
#define XF_PROBE2(name, a, b)	     ((void)(a), (void)(b))
#define XF_PROBE3(name, a, b, c)     ((void)(a), (void)(b), (void)(c))
#endif

#endif
