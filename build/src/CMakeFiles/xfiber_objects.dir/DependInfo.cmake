
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  "ASM"
  )
# The set of files for implicit dependencies of each language:
set(CMAKE_DEPENDS_CHECK_ASM
  "/work/main/src/arch/switch_x86_64_sysv_elf_gas.S" "/work/main/build/src/CMakeFiles/xfiber_objects.dir/arch/switch_x86_64_sysv_elf_gas.S.o"
  "/work/main/src/xstate/regs_x86_64_sysv_elf_gas.S" "/work/main/build/src/CMakeFiles/xfiber_objects.dir/xstate/regs_x86_64_sysv_elf_gas.S.o"
  "/work/main/src/xstate/xsave_x86_64_sysv_elf_gas.S" "/work/main/build/src/CMakeFiles/xfiber_objects.dir/xstate/xsave_x86_64_sysv_elf_gas.S.o"
  )
set(CMAKE_ASM_COMPILER_ID "GNU")

# Preprocessor definitions for this target.
set(CMAKE_TARGET_DEFINITIONS_ASM
  "XFIBER_DEBUG=1"
  )

# The include file search paths:
set(CMAKE_ASM_TARGET_INCLUDE_PATH
  "/work/main/include"
  "/work/main/src"
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/build/generated/build_info.c" "src/CMakeFiles/xfiber_objects.dir/__/generated/build_info.c.o" "gcc" "src/CMakeFiles/xfiber_objects.dir/__/generated/build_info.c.o.d"
  "/work/main/src/arch/context.c" "src/CMakeFiles/xfiber_objects.dir/arch/context.c.o" "gcc" "src/CMakeFiles/xfiber_objects.dir/arch/context.c.o.d"
  "/work/main/src/common/version.c" "src/CMakeFiles/xfiber_objects.dir/common/version.c.o" "gcc" "src/CMakeFiles/xfiber_objects.dir/common/version.c.o.d"
  "/work/main/src/preempt/signal.c" "src/CMakeFiles/xfiber_objects.dir/preempt/signal.c.o" "gcc" "src/CMakeFiles/xfiber_objects.dir/preempt/signal.c.o.d"
  "/work/main/src/preempt/stats.c" "src/CMakeFiles/xfiber_objects.dir/preempt/stats.c.o" "gcc" "src/CMakeFiles/xfiber_objects.dir/preempt/stats.c.o.d"
  "/work/main/src/preempt/ticker.c" "src/CMakeFiles/xfiber_objects.dir/preempt/ticker.c.o" "gcc" "src/CMakeFiles/xfiber_objects.dir/preempt/ticker.c.o.d"
  "/work/main/src/sched/fiber.c" "src/CMakeFiles/xfiber_objects.dir/sched/fiber.c.o" "gcc" "src/CMakeFiles/xfiber_objects.dir/sched/fiber.c.o.d"
  "/work/main/src/sched/runtime.c" "src/CMakeFiles/xfiber_objects.dir/sched/runtime.c.o" "gcc" "src/CMakeFiles/xfiber_objects.dir/sched/runtime.c.o.d"
  "/work/main/src/sched/schedule.c" "src/CMakeFiles/xfiber_objects.dir/sched/schedule.c.o" "gcc" "src/CMakeFiles/xfiber_objects.dir/sched/schedule.c.o.d"
  "/work/main/src/sched/stack.c" "src/CMakeFiles/xfiber_objects.dir/sched/stack.c.o" "gcc" "src/CMakeFiles/xfiber_objects.dir/sched/stack.c.o.d"
  "/work/main/src/sched/timer.c" "src/CMakeFiles/xfiber_objects.dir/sched/timer.c.o" "gcc" "src/CMakeFiles/xfiber_objects.dir/sched/timer.c.o.d"
  "/work/main/src/sched/worker.c" "src/CMakeFiles/xfiber_objects.dir/sched/worker.c.o" "gcc" "src/CMakeFiles/xfiber_objects.dir/sched/worker.c.o.d"
  "/work/main/src/sync/chan.c" "src/CMakeFiles/xfiber_objects.dir/sync/chan.c.o" "gcc" "src/CMakeFiles/xfiber_objects.dir/sync/chan.c.o.d"
  "/work/main/src/sync/cond.c" "src/CMakeFiles/xfiber_objects.dir/sync/cond.c.o" "gcc" "src/CMakeFiles/xfiber_objects.dir/sync/cond.c.o.d"
  "/work/main/src/sync/mutex.c" "src/CMakeFiles/xfiber_objects.dir/sync/mutex.c.o" "gcc" "src/CMakeFiles/xfiber_objects.dir/sync/mutex.c.o.d"
  "/work/main/src/sync/sem.c" "src/CMakeFiles/xfiber_objects.dir/sync/sem.c.o" "gcc" "src/CMakeFiles/xfiber_objects.dir/sync/sem.c.o.d"
  "/work/main/src/sync/waitq.c" "src/CMakeFiles/xfiber_objects.dir/sync/waitq.c.o" "gcc" "src/CMakeFiles/xfiber_objects.dir/sync/waitq.c.o.d"
  "/work/main/src/xstate/discover.c" "src/CMakeFiles/xfiber_objects.dir/xstate/discover.c.o" "gcc" "src/CMakeFiles/xfiber_objects.dir/xstate/discover.c.o.d"
  "/work/main/src/xstate/engine_nofp.c" "src/CMakeFiles/xfiber_objects.dir/xstate/engine_nofp.c.o" "gcc" "src/CMakeFiles/xfiber_objects.dir/xstate/engine_nofp.c.o.d"
  "/work/main/src/xstate/regs.c" "src/CMakeFiles/xfiber_objects.dir/xstate/regs.c.o" "gcc" "src/CMakeFiles/xfiber_objects.dir/xstate/regs.c.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
