# Convenience front end to CMake. `make run` and `make test` install what is
# missing (Debian packages; the Python venv .venv with pinned packages from PyPI),
# configure, build, then run.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMBK_WERROR=ON
RUN_ARGS ?=
PREFIX ?= /usr/local

.PHONY: all deps build run test install test-asan test-tsan bench clean

all: build

deps:
	@bash scripts/install-deps.sh
	@bash scripts/python-env.sh

build: deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

# The main job: simulate the built-in model, print a summary, write mbk-out/.
run: build
	$(BUILD)/apps/mbk run $(RUN_ARGS)

# The whole test suite.
test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# Install the library, headers, CMake and pkg-config files and the program into
# PREFIX (default /usr/local); PREFIX/bin/mbk finds PREFIX/lib by its RPATH.
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# The suite under AddressSanitizer and UndefinedBehaviorSanitizer.
test-asan: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DMBK_WERROR=ON -DMBK_SANITIZE=address,undefined
	cmake --build build-asan -j $(JOBS)
	ctest --test-dir build-asan --output-on-failure -j $(JOBS)

# The concurrency tests under ThreadSanitizer.
test-tsan: deps
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DMBK_WERROR=ON -DMBK_SANITIZE=thread -DMBK_WITH_SIMBODY=OFF
	cmake --build build-tsan -j $(JOBS)
	ctest --test-dir build-tsan --output-on-failure -L threads

# Side-by-side benchmark against Simbody (Release, -O3 -march=native -DNDEBUG for mbk;
# OpenBLAS kept to one thread: the solves are tiny and its idle threads compete for the cores;
# the Simbody side is compiled without NDEBUG). Writes docs/benchmarks.md and
# benchmarks/results.csv. BENCH_ARGS=--quick for a short smoke run.
BENCH_FLAGS = -O3 -march=native -DNDEBUG
BENCH_ARGS ?=
bench: deps
	cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DMBK_BUILD_BENCHMARKS=ON \
	  "-DCMAKE_C_FLAGS_RELEASE=$(BENCH_FLAGS)" "-DCMAKE_CXX_FLAGS_RELEASE=$(BENCH_FLAGS)"
	cmake --build build-bench -j $(JOBS) --target mbk_bench
	OPENBLAS_NUM_THREADS=1 build-bench/benchmarks/mbk_bench --md docs/benchmarks.md --csv benchmarks/results.csv $(BENCH_ARGS)

clean:
	rm -rf $(BUILD) build-asan build-tsan mbk-out
