/*
 * xfiber_internal.h - the one internal header the xfiber command
 * (tools/) may include; everything else it uses is the public API
 * (xfiber.h).  A measuring tool needs what no library user does:
 *
 *  - the xstate engine (xstate/xstate.h): XCR0, the components, their
 *    sizes and the save strategy, for `info` and the XSAVE-cost rows;
 *  - register images (xstate/regs.h): fill, dirty and compare every
 *    register class around an operation, for the state-dependent rows;
 *  - the encoding of a forced preemption tick (preempt/tick.h), which the
 *    preemption rows send themselves to compare with bare signals;
 *  - the compiler helpers these headers use (common/compiler.h);
 *  - in assembly, the ELF and unwind housekeeping of the library's own
 *    (arch/asm.h).
 *
 * tools/CMakeLists.txt puts src/ on the command's include path for this
 * header alone; the test tools.internal_header fails on any other include
 * of a file under src/.
 */
#ifndef XFIBER_INTERNAL_H
#define XFIBER_INTERNAL_H

#ifdef __ASSEMBLER__
#include "arch/asm.h"
#else
#include "common/compiler.h"
#include "preempt/tick.h"
#include "xstate/regs.h"
#include "xstate/xstate.h"
#endif

#endif
