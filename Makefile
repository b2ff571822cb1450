# The commands of the README.  Everything else is CMake and CTest.
#   make bench   build (optimized) and run the benchmark suite
#   make check   build with warnings as errors and run every test through ctest,
#                then build again under ASan+UBSan and run the tests there too,
#                and the preemption tests once more unoptimised (-O0), where the
#                compiler inlines nothing it is not told to
#   make check-cpus  the xstate, runtime and preemption tests again under
#                qemu-user's CPU models without XSAVE, without XSAVEC, and the
#                richest it runs (docs/cpus.md)

BUILD       ?= build
BENCH_BUILD ?= build-bench
ASAN_BUILD  ?= build-asan
O0_BUILD    ?= build-O0
PLOT_VENV   ?= build-venv
CPUS_BUILD  ?= build-cpus
JOBS        ?= $(shell nproc)
CMAKE       ?= cmake

# Debian packages: what the tests need (the HTTP example's parser, the probes'
# header and bpftrace to try them, gdb for the gdb extension, Valgrind for
# memcheck and its stack registration, SQLite for a real library's locks,
# clang-format for the style of changed lines, liburing for the io_uring
# engine, OpenSSL for a library that keys its state on the thread), and what
# the benchmark's peers, plots and validation use besides.
CHECK_PACKAGES = libhttp-parser-dev systemtap-sdt-dev bpftrace gdb valgrind libsqlite3-dev \
		 clang-format liburing-dev libssl-dev
BENCH_PACKAGES = $(CHECK_PACKAGES) libuv1-dev wrk nghttp2-client libboost-context-dev $(PLOT_PACKAGES) \
		 linux-perf rt-tests golang-go
# The plots, whose test `make check` runs too.
PLOT_PACKAGES  = python3-matplotlib

# A Python with matplotlib for the plots, handed to CMake: none when the
# system's python3 has it, else a virtual environment made in $(PLOT_VENV)
# with pip (bench/plot-python.sh, which says so in one line).
PLOT_PYTHON = -DXFIBER_PYTHON="$$(sh bench/plot-python.sh $(PLOT_VENV))"

# What make check-cpus runs the tests under: qemu-x86_64 and its CPU models.
CPUS_PACKAGES = qemu-user

.PHONY: all check check-cpus bench clean deps check-deps bench-deps

all: check-deps
	$(CMAKE) -S . -B $(BUILD) -DXFIBER_WERROR=ON -DXFIBER_DEBUG=ON $(PLOT_PYTHON)
	$(CMAKE) --build $(BUILD) -j $(JOBS)

check: all
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)
	$(CMAKE) -S . -B $(ASAN_BUILD) -DXFIBER_WERROR=ON -DXFIBER_DEBUG=ON \
		-DXFIBER_SANITIZE=address,undefined $(PLOT_PYTHON)
	$(CMAKE) --build $(ASAN_BUILD) -j $(JOBS)
	ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS)
	$(CMAKE) -S . -B $(O0_BUILD) -DCMAKE_BUILD_TYPE=Debug -DXFIBER_WERROR=ON -DXFIBER_DEBUG=ON
	$(CMAKE) --build $(O0_BUILD) -j $(JOBS) --target preempt_tests sync_tests
	ctest --test-dir $(O0_BUILD) --output-on-failure -j $(JOBS) -L preempt

check-cpus:
	@sh .ci/install-packages $(CPUS_PACKAGES)
	$(CMAKE) -S . -B $(CPUS_BUILD) -DXFIBER_WERROR=ON -DXFIBER_DEBUG=ON -DXFIBER_CHECK_CPUS=ON
	$(CMAKE) --build $(CPUS_BUILD) -j $(JOBS) --target cpus_tests
	# One test at a time: each runs 2 to 9 threads under TCG, and their
	# timing margins were set natively.
	ctest --test-dir $(CPUS_BUILD) --output-on-failure -L cpus

bench: bench-deps
	$(CMAKE) -S . -B $(BENCH_BUILD) -DCMAKE_BUILD_TYPE=Release -DXFIBER_RUST_PEERS=ON $(PLOT_PYTHON)
	$(CMAKE) --build $(BENCH_BUILD) -j $(JOBS) --target xfiber   # the tool and its peers, not the tests
	$(BENCH_BUILD)/tools/xfiber bench all --json=$(BENCH_BUILD)/bench.json
	@# The charts of that run; a plot that cannot be drawn says why in one line and fails nothing.
	-$(BENCH_BUILD)/tools/xfiber bench plot $(BENCH_BUILD)/bench.json $(BENCH_BUILD)/bench.png

# Everything, asked for (root, Debian).
deps:
	apt-get update
	apt-get install -y $(BENCH_PACKAGES) $(CPUS_PACKAGES)

# What is missing, installed without asking when root on Debian (one line
# says so); elsewhere one line says what to install, and the build goes on
# without what needs it.
check-deps:
	@sh .ci/install-packages $(CHECK_PACKAGES) $(PLOT_PACKAGES)
bench-deps:
	@sh .ci/install-packages $(BENCH_PACKAGES)

clean:
	rm -rf $(BUILD) $(BENCH_BUILD) $(ASAN_BUILD) $(O0_BUILD) $(PLOT_VENV) $(CPUS_BUILD)
