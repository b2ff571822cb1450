# The two commands of the README.  Everything else is CMake and CTest.
#   make bench   build (optimized) and run the benchmark suite
#   make check   build with warnings as errors and run every test through ctest,
#                then build again under ASan+UBSan and run the tests there too,
#                and the preemption tests once more unoptimised (-O0), where the
#                compiler inlines nothing it is not told to

BUILD       ?= build
BENCH_BUILD ?= build-bench
ASAN_BUILD  ?= build-asan
O0_BUILD    ?= build-O0
JOBS        ?= $(shell nproc)
CMAKE       ?= cmake

.PHONY: all check bench clean deps

all:
	$(CMAKE) -S . -B $(BUILD) -DXFIBER_WERROR=ON -DXFIBER_DEBUG=ON
	$(CMAKE) --build $(BUILD) -j $(JOBS)

check: all
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)
	$(CMAKE) -S . -B $(ASAN_BUILD) -DXFIBER_WERROR=ON -DXFIBER_DEBUG=ON \
		-DXFIBER_SANITIZE=address,undefined
	$(CMAKE) --build $(ASAN_BUILD) -j $(JOBS)
	ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS)
	$(CMAKE) -S . -B $(O0_BUILD) -DCMAKE_BUILD_TYPE=Debug -DXFIBER_WERROR=ON -DXFIBER_DEBUG=ON
	$(CMAKE) --build $(O0_BUILD) -j $(JOBS) --target preempt_tests
	ctest --test-dir $(O0_BUILD) --output-on-failure -j $(JOBS) -L preempt

bench:
	$(CMAKE) -S . -B $(BENCH_BUILD) -DCMAKE_BUILD_TYPE=Release
	$(CMAKE) --build $(BENCH_BUILD) -j $(JOBS) --target xfiber   # the tool and its peers, not the tests
	$(BENCH_BUILD)/tools/xfiber bench all --json=$(BENCH_BUILD)/bench.json

# Optional: what the benchmark's peers, plots and validation use (root, Debian).
deps:
	apt-get update
	apt-get install -y libboost-context-dev python3-matplotlib linux-perf rt-tests

clean:
	rm -rf $(BUILD) $(BENCH_BUILD) $(ASAN_BUILD) $(O0_BUILD)
