# The two commands of the README.  Everything else is CMake and CTest.
#   make bench   build (optimized) and run the benchmark suite
#   make check   build with warnings as errors and run every test through ctest
#                (then again under ASan+UBSan, once the runtime lands)

BUILD       ?= build
BENCH_BUILD ?= build-bench
JOBS        ?= $(shell nproc)
CMAKE       ?= cmake

.PHONY: all check bench clean install-deps

all:
	$(CMAKE) -S . -B $(BUILD) -DXFIBER_WERROR=ON -DXFIBER_DEBUG=ON
	$(CMAKE) --build $(BUILD) -j $(JOBS)

check: all
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

bench:
	$(CMAKE) -S . -B $(BENCH_BUILD) -DCMAKE_BUILD_TYPE=Release
	$(CMAKE) --build $(BENCH_BUILD) -j $(JOBS)
	$(BENCH_BUILD)/tools/xfiber bench all --json=$(BENCH_BUILD)/bench.json

clean:
	rm -rf $(BUILD) $(BENCH_BUILD)
