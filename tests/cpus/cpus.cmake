# `make check-cpus` (XFIBER_CHECK_CPUS): the xstate, info, runtime and
# preempt tests once more under each of qemu-user's CPU models below, as
# cpus.MODEL.TEST (label cpus), and per model a check that discovery found
# the XCR0 and chose the strategy named here.  docs/cpus.md says what qemu
# 7.2 can and cannot show, and so why these models and these exclusions.
option(XFIBER_CHECK_CPUS "Add the tests of make check-cpus (runs qemu-x86_64)" OFF)
if(NOT XFIBER_CHECK_CPUS)
  function(xf_add_cpus_twins)
  endfunction()
  return()
endif()

find_program(XF_QEMU qemu-x86_64)
if(NOT XF_QEMU)
  message(FATAL_ERROR "XFIBER_CHECK_CPUS needs qemu-x86_64 (Debian: qemu-user)")
endif()

# MODEL, then the strategy and XCR0 discovery must find under it.
set(XF_CPU_MODELS
  Nehalem fxsave 0x3      # no XSAVE at all: the FXSAVE path
  Haswell xsaveopt 0x7    # XSAVE and XSAVEOPT; no XSAVEC, no XGETBV1
  # The richest model qemu 7.2 runs: AVX2, MPX, PKRU, XGETBV1.  Its TCG has
  # no AVX-512 (Skylake-Server loses it, and XSAVEC, with a warning), no AMX.
  max xsaveopt 0x21f)
# Left out under every model, and why (docs/cpus.md):
#   runtime.probes.*         readelf, which runs natively, reads /proc/PID/exe: qemu itself
#   runtime.fork.fiber|first qemu 7.2 aborts in the child (an assertion in its RCU
#                            or plugin code) when a fiber forks and the child runs
#                            fibers on; fork.exec, .thread and .ghosts run
#   sched.overflow           qemu 7.2 ignores MADV_GUARD_INSTALL and returns 0, so
#                            there is no guard to hit (sched.overflow.mprotect runs)
#   sched.steal.*            a deadline on how soon an idle worker takes queued work
#                            (1 s), which under TCG on a shared machine came within 7%
#                            of failing; nothing in them depends on the CPU model
#   preempt.batch.many       the CPU-bound fibers' share beside a ping-pong, whose
#                            switches cost far more under TCG (0.57 of their rate
#                            alone under max, 0.82 under Nehalem, 0.9-1.0 natively);
#                            nothing in it depends on the CPU model
# And tests whose program is not one of the project's (below).
set(XF_CPU_EXCLUDED
    "^(runtime\\.(probes\\.|fork\\.(fiber|first)$)|sched\\.(overflow$|steal\\.)|preempt\\.batch\\.many$)")
# The engine's, the runtime's and preemption's tests, and `xfiber info`'s,
# which checks discovery against CPUID.
set(XF_CPU_FOLDERS xstate info runtime sched preempt)
# And of sync/, the runtime's own objects (the C library's locks are not).
set(XF_CPU_ALSO "^sync\\.(objects|chan_xstate)$")
# TCG runs the tests several times slower; a hang still fails.
set(XF_CPU_TIMEOUT_FACTOR 2)

add_custom_target(cpus_tests)

# A program given as $<TARGET_FILE:exe> is one the test runs itself: under
# qemu-user it would run natively (qemu 7.2 execs a guest's x86-64 child on
# the host), so the twin runs it under the same model.
function(xf_cpus_program arg model out)
  set(${out} "${arg}" PARENT_SCOPE)
  if(NOT arg MATCHES "^\\$<TARGET_FILE:([^>]+)>$")
    return()
  endif()
  set(target ${CMAKE_MATCH_1})
  if(NOT TARGET ${target})
    return()
  endif()
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "EXECUTABLE")
    add_dependencies(cpus_tests ${target})
    set(${out} "${XF_QEMU} -cpu ${model} ${arg}" PARENT_SCOPE)
  endif()
endfunction()

# xf_add_cpus_twins(NAME FOLDER TIMEOUT ENV PASS PROGRAM ARGS...): called by
# xf_add_test for every test.
function(xf_add_cpus_twins name folder timeout env pass program)
  if(NOT (folder IN_LIST XF_CPU_FOLDERS OR name MATCHES "${XF_CPU_ALSO}") OR
     name MATCHES "${XF_CPU_EXCLUDED}")
    return()
  endif()
  # Only the project's own programs: a script (runtime.memcheck's Valgrind)
  # is no guest for qemu-x86_64.
  if(NOT TARGET ${program})
    return()
  endif()
  add_dependencies(cpus_tests ${program})
  set(program $<TARGET_FILE:${program}>)
  math(EXPR timeout "${timeout} * ${XF_CPU_TIMEOUT_FACTOR}")
  # A real-time ticker's signals crash qemu 7.2's user mode itself (an
  # assertion in its RCU, or a SIGSEGV) in 1 run in 5-10 of preempt.yield:
  # the fair ticker under TCG (docs/cpus.md).  Nothing here is about the
  # ticker's class.
  list(APPEND env XFIBER_TICKER=fair)
  set(models ${XF_CPU_MODELS})
  while(models)
    list(POP_FRONT models model strategy xcr0)
    set(args)
    foreach(arg ${ARGN})
      xf_cpus_program("${arg}" ${model} arg)
      list(APPEND args "${arg}")
    endforeach()
    add_test(NAME cpus.${model}.${name} COMMAND ${XF_QEMU} -cpu ${model} ${program} ${args})
    set_tests_properties(cpus.${model}.${name} PROPERTIES SKIP_RETURN_CODE ${XF_TEST_SKIP}
                         TIMEOUT ${timeout} ENVIRONMENT "${env}" LABELS "cpus;cpus.${model}")
    if(pass)
      set_tests_properties(cpus.${model}.${name} PROPERTIES PASS_REGULAR_EXPRESSION "${pass}")
    endif()
  endwhile()
endfunction()

# The right strategy on each model: the one named above, with the XCR0
# named above, chosen by default and working.
add_dependencies(cpus_tests xstate_test_strategy)
set(models ${XF_CPU_MODELS})
while(models)
  list(POP_FRONT models model strategy xcr0)
  add_test(NAME cpus.${model}.strategy
           COMMAND ${XF_QEMU} -cpu ${model} $<TARGET_FILE:xstate_test_strategy> ${strategy} ${xcr0})
  set_tests_properties(cpus.${model}.strategy PROPERTIES TIMEOUT 30 LABELS "cpus;cpus.${model}")
endwhile()
