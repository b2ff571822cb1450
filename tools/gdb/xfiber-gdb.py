# xfiber-gdb.py - xfiber's fibers in gdb, in a live process or a core file.
#
# Loads by itself with libxfiber (the library carries this script in its
# .debug_gdb_scripts section; gdb asks for the library's directory to be in
# its auto-load safe-path), or by hand:  source /path/to/xfiber-gdb.py
#
#   info fibers                 every live fiber: id, name, state, worker and
#                               the function it is in
#   fiber ID                    selects fiber ID's frames: `bt`, `frame N`,
#                               `up`, `info locals` then show the fiber's
#   fiber                       which fiber is selected
#   fiber none                  back to the thread's own frames
#   fiber ID bt [ARGS]          fiber ID's backtrace
#   fiber apply all|ID... CMD   CMD with each fiber selected in turn
#
# Nothing here knows an offset: the library exports xf_debug_layout, a
# versioned list of names and values (field offsets, constants, the
# addresses of the runtime and of the fiber arena), which this script reads
# (src/sched/debug.c).  A switched-out fiber's frames start from its switch
# frame (src/arch/context.h): gdb is given its callee-saved registers, its
# stack pointer and its return address as the caller of the selected
# thread's innermost frame, which a frame filter then hides.  A preempted
# fiber's frames go on through the handler into the kernel's signal frame
# and the code it interrupted, as gdb unwinds any signal frame.

import struct

import gdb
import gdb.unwinder

LAYOUT_MAGIC = 0x74756F79616C6678  # "xflayout"
LAYOUT_VERSIONS = (1,)
FRAME_REGISTERS = ("r15", "r14", "r13", "r12", "rbx", "rbp")


class XfiberError(gdb.GdbError):
    pass


def _read(addr, size):
    try:
        return bytes(gdb.selected_inferior().read_memory(addr, size))
    except gdb.MemoryError as e:
        raise XfiberError("xfiber: cannot read 0x%x: %s" % (addr, e))


def _u64(addr):
    return struct.unpack("<Q", _read(addr, 8))[0]


def _u32(addr):
    return struct.unpack("<I", _read(addr, 4))[0]


def _i32(addr):
    return struct.unpack("<i", _read(addr, 4))[0]


def _u8(addr):
    return _read(addr, 1)[0]


def _cstring(addr, limit=64):
    if not addr:
        return None
    raw = _read(addr, limit)
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


class Layout:
    """The library's xf_debug_layout: names to values."""

    def __init__(self):
        try:
            addr = int(gdb.parse_and_eval("(unsigned long)&xf_debug_layout"))
        except gdb.error:
            raise XfiberError("xfiber: no xf_debug_layout in this program "
                              "(not linked with libxfiber, or stripped)")
        magic, version, nr, entries = struct.unpack("<QIIQ", _read(addr, 24))
        if magic != LAYOUT_MAGIC:
            raise XfiberError("xfiber: xf_debug_layout at 0x%x has no magic" % addr)
        if version not in LAYOUT_VERSIONS:
            raise XfiberError("xfiber: layout version %d; this script reads %s"
                              % (version, LAYOUT_VERSIONS))
        self.values = {}
        self.wait_kinds = {}
        for i in range(nr):
            name_ptr, value = struct.unpack("<QQ", _read(entries + 16 * i, 16))
            name = _cstring(name_ptr, 96)
            self.values[name] = value
            if name.startswith("wait_kind:"):
                self.wait_kinds[value] = name[len("wait_kind:"):]

    def __getitem__(self, name):
        try:
            return self.values[name]
        except KeyError:
            raise XfiberError("xfiber: the library's layout lacks %s" % name)


class Fiber:
    """One fiber structure, read from the inferior."""

    def __init__(self, layout, addr, workers):
        L = layout
        self.addr = addr
        self.id = _u64(addr + L["xf_fiber.id"])
        self.name = _cstring(_u64(addr + L["xf_fiber.name"]), 32) or ""
        self.flags = _u32(addr + L["xf_fiber.flags"])
        self.sp = _u64(addr + L["xf_fiber.sp"])
        self.home = _i32(addr + L["xf_fiber.home"])
        self.fn = _u64(addr + L["xf_fiber.fn"])
        self.done = (_u8(addr + L["xf_fiber.state"]) == L["fiber_state:done"]
                     or bool(_u8(addr + L["xf_fiber.exiting"])))
        self.started = True
        on_cpu = _i32(addr + L["xf_fiber.on_cpu"])
        waiting = _i32(addr + L["xf_fiber.wait_state"]) == L["wait_state:waiting"]
        kind = _u8(addr + L["xf_fiber.wait_kind"])
        obj = _u64(addr + L["xf_fiber.wait_object"])
        self.worker = None
        self.tid = None
        for index, (current, tid) in enumerate(workers):
            if current == addr:
                self.worker, self.tid = index, tid
        self.switched_out = False
        if self.done:
            self.state = "finished"
        elif self.worker is not None and on_cpu == L["on_cpu:on"]:
            self.state = "running"
        elif on_cpu == L["on_cpu:on"]:
            self.state = "switching out"
        elif not self._frame_valid(L):
            self.state = "starting"  # a spawn not done yet
        else:
            self.switched_out = True
            self.worker = self.home
            self.started = (_u64(self.sp + L["frame.rip"]) != L["frame.rip_not_started"])
            if not self.started:
                self.state = "runnable, not started"
            elif _u8(addr + L["xf_fiber.preempted"]):
                self.state = "preempted"
            elif waiting and L.wait_kinds.get(kind) == "sleep":  # xf_sleep_ns or libc's
                self.state = "sleeping"
            elif waiting and kind in L.wait_kinds and L.wait_kinds[kind] != "nothing":
                self.state = "blocked on " + L.wait_kinds[kind]
                if kind in (L["wait_kind_object_is_fd"], L.values.get("wait_kind_object_is_fd_too")):
                    self.state += " fd %d" % obj
                elif kind == L["wait_kind_object_is_fiber"] and obj:
                    self.state += " of fiber %d" % _u64(obj + L["xf_fiber.id"])
                elif obj:
                    self.state += " " + _describe(obj)
            else:
                self.state = "runnable"

    def _frame_valid(self, L):
        """Whether its saved stack pointer lies in its own stack."""
        if self.flags & L["fiber_flag:first"]:
            return self.sp != 0
        base = _u64(self.addr + L["xf_fiber.stack.base"])
        size = _u64(self.addr + L["xf_fiber.stack.size"])
        return base != 0 and base <= self.sp and self.sp + L["frame.size"] <= base + size

    def registers(self, layout):
        """The registers its switch frame holds, as a caller's."""
        regs = {r: _u64(self.sp + layout["frame." + r]) for r in FRAME_REGISTERS}
        regs["rip"] = _u64(self.sp + layout["frame.rip"])
        if not regs["rip"]:
            raise XfiberError(
                "xfiber: fiber %d's stack is not in this core: gdb's gcore stops copying a "
                "mapping at the first page it cannot read, which a stack guard is; write "
                "cores of live programs with `fiber gcore FILE` (it lifts the guards while "
                "gcore runs), or use the kernel's core" % self.id)
        regs["rsp"] = self.sp + layout["frame.size"]
        return regs


def _describe(addr):
    """An address, with the symbol it is (a global mutex, say), if any."""
    try:
        sym = gdb.execute("info symbol 0x%x" % addr, to_string=True).strip()
    except gdb.error:
        sym = ""
    if sym and not sym.startswith("No symbol"):
        return "0x%x (%s)" % (addr, sym.split(" in section")[0])
    return "0x%x" % addr


def read_fibers():
    """Every fiber of the arena that is live, main first, in id order."""
    L = Layout()
    rt = L["runtime.address"]
    nr_workers = _u32(rt + L["xf__runtime.nr_workers"])
    workers_addr = _u64(rt + L["xf__runtime.workers"])
    workers = []
    for i in range(nr_workers):
        w = workers_addr + i * L["xf__worker.size"]
        workers.append((_u64(w + L["xf__worker.current"]), _i32(w + L["xf__worker.tid"])))
    arena = L["arena.address"]
    chunks = _u64(arena + L["xf__fiber_arena.chunks"])
    nr_chunks = _u64(arena + L["xf__fiber_arena.nr"])
    size = L["xf_fiber.size"]
    per_chunk = L["arena.chunk_fibers"]
    fibers = []
    for c in range(nr_chunks):
        chunk = _u64(chunks + 8 * c)
        raw = _read(chunk, size * per_chunk)  # one read a chunk: cores are slow
        for i in range(per_chunk):
            base = i * size
            magic = struct.unpack_from("<I", raw, base + L["xf_fiber.magic"])[0]
            flags = struct.unpack_from("<I", raw, base + L["xf_fiber.flags"])[0]
            if magic != L["fiber_magic"] or flags & L["fiber_flag:idle"]:
                continue
            fibers.append(Fiber(L, chunk + base, workers))
    fibers.sort(key=lambda f: f.id)
    return L, fibers


def _thread_of(tid):
    for thread in gdb.selected_inferior().threads():
        if thread.ptid[1] == tid:
            return thread
    return None


class FrameId:
    def __init__(self, sp, pc):
        self.sp = sp
        self.pc = pc


class FiberUnwinder(gdb.unwinder.Unwinder):
    """Makes the selected fiber the caller of the thread's innermost frame."""

    def __init__(self):
        super().__init__("xfiber")
        self.regs = None
        self.thread = None

    def __call__(self, pending_frame):
        if self.regs is None or pending_frame.level() != 0:
            return None
        if gdb.selected_thread() is None or gdb.selected_thread().num != self.thread:
            return None
        # The thread's frame #0 takes the identity of the fiber's switch:
        # gdb stops a backtrace whose next frame lies below the one
        # before, and the fiber's stack may lie anywhere.
        ulong = gdb.lookup_type("unsigned long")
        pc = pending_frame.read_register("rip")
        sp = gdb.Value(self.regs["rsp"] - 8).cast(ulong)
        info = pending_frame.create_unwind_info(FrameId(sp, pc))
        for reg, value in self.regs.items():
            info.add_saved_register(reg, gdb.Value(value).cast(ulong))
        return info


class HideThreadFrame:
    """While a fiber is selected, bt leaves out the thread's own frame #0."""

    def __init__(self):
        self.name = "xfiber"
        self.priority = 100
        self.enabled = True
        gdb.frame_filters[self.name] = self

    def filter(self, frames):
        if UNWINDER.regs is None:
            return frames
        return (f for f in frames if f.inferior_frame().level() != 0)


UNWINDER = FiberUnwinder()
gdb.unwinder.register_unwinder(None, UNWINDER, replace=True)
HideThreadFrame()
SELECTED = {"fiber": None}


# gdb ends a backtrace at main: the thread's frame #0 may be main (a crash
# there), and the fiber's frames hang below it.
PAST_MAIN = {"saved": None}


def _deselect():
    if UNWINDER.regs is not None:
        UNWINDER.regs = None
        UNWINDER.thread = None
        SELECTED["fiber"] = None
        if PAST_MAIN["saved"] is not None:
            gdb.execute("set backtrace past-main " + PAST_MAIN["saved"], to_string=True)
            PAST_MAIN["saved"] = None
        gdb.invalidate_cached_frames()


def _select(layout, fiber):
    """Shows fiber's frames in its thread (running) or the current thread."""
    _deselect()
    if fiber.state == "running":
        thread = _thread_of(fiber.tid)
        if thread is None:
            raise XfiberError("xfiber: fiber %d runs on thread %d, which gdb does not see"
                              % (fiber.id, fiber.tid))
        thread.switch()
        SELECTED["fiber"] = fiber
        return
    if not fiber.switched_out:
        raise XfiberError("xfiber: fiber %d is %s: no frames to show" % (fiber.id, fiber.state))
    PAST_MAIN["saved"] = gdb.parameter("backtrace past-main") and "on" or "off"
    gdb.execute("set backtrace past-main on", to_string=True)
    UNWINDER.regs = fiber.registers(layout)
    UNWINDER.thread = gdb.selected_thread().num
    SELECTED["fiber"] = fiber
    gdb.invalidate_cached_frames()


def _fiber_frames_start():
    """The innermost frame that is the selected fiber's."""
    frame = gdb.newest_frame()
    if UNWINDER.regs is not None:
        frame = frame.older()
    return frame


FIBER_BOTTOM = ("xf__fiber_main", "xf__fiber_start")


def _section_range(name):
    """[start, stop) of a section the linker bounds with __start_/__stop_
    symbols, or None."""
    try:
        return (int(gdb.parse_and_eval("(unsigned long)&__start_" + name)),
                int(gdb.parse_and_eval("(unsigned long)&__stop_" + name)))
    except gdb.error:
        return None


def _is_runtime(frame):
    """Whether frame is the runtime's: the kernel's signal frame, an xf_
    function, anything in libxfiber.so, or in the sections a static link
    puts libxfiber.a's code in (xf_lib_text, xf_nopreempt_text)."""
    if frame.type() == gdb.SIGTRAMP_FRAME:
        return True
    name = frame.name() or ""
    if name.startswith("xf_") or name == "__restore_rt":
        return True
    pc = frame.pc()
    if "libxfiber" in (gdb.solib_name(pc) or ""):
        return True
    for section in ("xf_lib_text", "xf_nopreempt_text"):
        bounds = _section_range(section)
        if bounds and bounds[0] <= pc < bounds[1]:
            return True
    return False


def _where(layout, fiber):
    """The function of the fiber's own that it is in: the frame right
    outside the outermost runtime frame (below the fiber's start), or the
    innermost frame when the runtime has none on the stack (a yield's fast
    path returns straight to its caller)."""
    if not fiber.switched_out and fiber.state != "running":
        return ""
    if not fiber.started:
        return _symbol(fiber.fn)
    previous = gdb.selected_thread()
    try:
        _select(layout, fiber)
        frames = []
        frame = _fiber_frames_start()
        while frame is not None and len(frames) < 64 and frame.name() not in FIBER_BOTTOM:
            frames.append(frame)
            frame = frame.older()
        if not frames:
            return "?"
        boundary = [i for i, f in enumerate(frames) if _is_runtime(f)]
        user = frames[boundary[-1] + 1] if boundary and boundary[-1] + 1 < len(frames) else frames[0]
        return user.name() or "0x%x" % user.pc()
    except (gdb.error, gdb.GdbError):
        return "?"
    finally:
        _deselect()
        if previous is not None:
            previous.switch()


class InfoFibers(gdb.Command):
    """List xfiber's live fibers: id, name, state, worker, function."""

    def __init__(self):
        super().__init__("info fibers", gdb.COMMAND_STATUS)

    def invoke(self, arg, from_tty):
        layout, fibers = read_fibers()
        if not fibers:
            print("No fibers (the runtime has not started, or has stopped).")
            return
        selected = SELECTED["fiber"]
        rows = []
        for f in fibers:
            worker = "" if f.worker is None or f.worker < 0 else str(f.worker)
            mark = "*" if selected is not None and selected.addr == f.addr else " "
            rows.append((mark, str(f.id), f.name, f.state, worker, _where(layout, f)))
        head = (" ", "Id", "Name", "State", "Worker", "Function")
        widths = [max(len(r[i]) for r in rows + [head]) for i in range(5)]
        for r in [head] + rows:
            print(" ".join(r[i].ljust(widths[i]) for i in range(5)) + " " + r[5])


def _find(fibers, text):
    try:
        wanted = int(text, 0)
    except ValueError:
        raise XfiberError("xfiber: not a fiber id: %s" % text)
    for f in fibers:
        if f.id == wanted:
            return f
    raise XfiberError("xfiber: no live fiber %d (info fibers lists them)" % wanted)


def _symbol(addr):
    try:
        text = gdb.execute("info symbol 0x%x" % addr, to_string=True).strip()
    except gdb.error:
        return "0x%x" % addr
    return text.split(" ")[0] if not text.startswith("No symbol") else "0x%x" % addr


def _run_in(layout, fiber, command):
    if not fiber.started:
        print("Not started yet: it will enter %s." % _symbol(fiber.fn))
        return
    previous = gdb.selected_thread()
    try:
        _select(layout, fiber)
        gdb.execute(command)
    finally:
        _deselect()
        if previous is not None:
            previous.switch()


class FiberCommand(gdb.Command):
    """Select a fiber's frames, or run a command in fibers.

fiber                      which fiber is selected
fiber ID                   select fiber ID: bt, frame, up, info locals show its frames
fiber none                 back to the thread's own frames
fiber ID bt [ARGS]         fiber ID's backtrace
fiber apply all|ID... CMD  run CMD in each fiber (e.g. fiber apply all bt)
fiber gcore [FILE]         gcore, with every fiber stack in the core"""

    def __init__(self):
        super().__init__("fiber", gdb.COMMAND_STACK, prefix=True)

    def invoke(self, arg, from_tty):
        words = arg.split()
        if not words:
            f = SELECTED["fiber"]
            print("No fiber selected." if f is None else
                  "Fiber %d \"%s\" (%s) is selected." % (f.id, f.name, f.state))
            return
        if words[0] == "none":
            _deselect()
            return
        if words[0] == "apply":
            self.apply(words[1:])
            return
        if words[0] == "gcore":
            self.gcore(words[1:])
            return
        layout, fibers = read_fibers()
        fiber = _find(fibers, words[0])
        if len(words) > 1:
            _run_in(layout, fiber, " ".join(words[1:]))
            return
        _select(layout, fiber)
        print("Fiber %d \"%s\" (%s)" % (fiber.id, fiber.name, fiber.state))
        frame = _fiber_frames_start()
        if frame is not None:
            frame.select()
            gdb.execute("frame", to_string=False)

    def gcore(self, words):
        """gcore, with the stack guards lifted meanwhile: gdb's gcore stops
        copying a mapping at the first page it cannot read, and the
        runtime's guards (MADV_GUARD_INSTALL) are such pages inside its
        slabs of stacks.  The library lifts and restores them
        (xf_debug_stack_guards); every thread stays stopped in between."""
        if len(words) > 1:
            raise XfiberError("usage: fiber gcore [FILE]")
        lifted = False
        try:
            lifted = int(gdb.parse_and_eval("(int) xf_debug_stack_guards(0)")) > 0
        except gdb.error as e:
            print("xfiber: could not lift the stack guards (%s): fiber stacks past the "
                  "first guard of each slab will be missing" % e)
        try:
            gdb.execute("gcore " + " ".join(words))
        finally:
            if lifted:
                gdb.parse_and_eval("(int) xf_debug_stack_guards(1)")

    def apply(self, words):
        if len(words) < 2:
            raise XfiberError("usage: fiber apply all|ID... COMMAND")
        layout, fibers = read_fibers()
        if words[0] == "all":
            chosen, command = fibers, words[1:]
        else:
            chosen = []
            while words and words[0][0].isdigit():
                chosen.append(_find(fibers, words.pop(0)))
            command = words
        if not command:
            raise XfiberError("usage: fiber apply all|ID... COMMAND")
        for f in chosen:
            print("\nFiber %d \"%s\" (%s):" % (f.id, f.name, f.state))
            if f.state in ("finished", "switching out", "starting"):
                continue
            try:
                _run_in(layout, f, " ".join(command))
            except (gdb.error, gdb.GdbError) as e:
                print(str(e))


def _on_continue(event):
    _deselect()


gdb.events.cont.connect(_on_continue)
InfoFibers()
FiberCommand()
