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

# The suite under AddressSanitizer and UndefinedBehaviorSanitizer, twice: built for this
# CPU (the hand-vectorized paths users get, GCC with AVX) and portable (MBK_NATIVE=OFF:
# the scalar paths that other compilers and CPUs run).
test-asan: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DMBK_WERROR=ON -DMBK_SANITIZE=address,undefined -DMBK_NATIVE=ON
	cmake --build build-asan -j $(JOBS)
	ctest --test-dir build-asan --output-on-failure -j $(JOBS)
	cmake -S . -B build-asan-portable -DCMAKE_BUILD_TYPE=Debug -DMBK_WERROR=ON -DMBK_SANITIZE=address,undefined -DMBK_NATIVE=OFF
	cmake --build build-asan-portable -j $(JOBS)
	ctest --test-dir build-asan-portable --output-on-failure -j $(JOBS)

# The concurrency tests under ThreadSanitizer.
test-tsan: deps
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DMBK_WERROR=ON -DMBK_SANITIZE=thread -DMBK_WITH_SIMBODY=OFF
	cmake --build build-tsan -j $(JOBS)
	ctest --test-dir build-tsan --output-on-failure -L threads

# Side-by-side benchmark against Simbody, MuJoCo and Pinocchio (Release, -O3 -march=native
# -DNDEBUG for mbk; OpenBLAS kept to one thread: the solves are tiny and its idle threads
# compete for the cores; the Simbody side is compiled without NDEBUG). Pinocchio's headers come
# from PyPI into the benchmark's own virtual environment (scripts/bench-venv.sh, pinned in
# benchmarks/requirements-bench.txt). mbk's default build (the flags of `make build`, what users
# get) is built as a module in build-bench-default and timed in the same run beside the native
# Release build; the figures are compared with the previous benchmarks/results.csv. Drake is
# timed through pydrake (benchmarks/bench_drake.py) just before the main run, on the models and
# inputs the driver dumps, and its figures are read into the report.
# Then the Python side (benchmarks/bench_python.py with .venv, skipped without it): ydot overhead
# over C and solve_ivp beside the C runs of benchmarks/bench_pyhelper.c, into docs/benchmarks_python.md.
# Then the ensembles (scripts/bench-ensemble.sh, docs/benchmarks_ensemble.md) and the stiff whole run of
# issue 14 (benchmarks/bench_stiff.c: CVODE BDF, analytic against finite-difference Jacobians,
# docs/benchmarks_stiff.md).
# Writes docs/benchmarks.md and benchmarks/results.csv. BENCH_ARGS=--quick for a short smoke run.
BENCH_FLAGS = -O3 -march=native -DNDEBUG
BENCH_ARGS ?=
BENCH_VENV ?= build-bench/venv
bench: deps
	mkdir -p build-bench
	cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DMBK_BUILD_BENCHMARKS=ON \
	  "-DCMAKE_C_FLAGS_RELEASE=$(BENCH_FLAGS)" "-DCMAKE_CXX_FLAGS_RELEASE=$(BENCH_FLAGS)" \
	  "-DMBK_BENCH_PY_SITE=$$(bash scripts/bench-venv.sh $(BENCH_VENV))"
	cmake --build build-bench -j $(JOBS) --target mbk_bench mbk_bench_pyhelper mbk_bench_ensemble mbk_bench_stiff mbk
	cmake -S . -B build-bench-default $(CMAKE_FLAGS) -DMBK_BUILD_BENCHMARKS=ON -DMBK_BENCH_PY_SITE= \
	  -DMBK_PINOCCHIO_PREFIX= -DMBK_MUJOCO_PYPI_DIR=
	cmake --build build-bench-default -j $(JOBS) --target mbk_bench_default_side
	rm -rf build-bench/drake-io && mkdir -p build-bench/drake-io
	build-bench/benchmarks/mbk_bench --dump-models build-bench/drake-io
	if $(BENCH_VENV)/bin/python -c 'import pydrake' 2>/dev/null; then \
	  OPENBLAS_NUM_THREADS=1 $(BENCH_VENV)/bin/python benchmarks/bench_drake.py build-bench/drake-io; \
	else echo "bench: no pydrake in $(BENCH_VENV): the Drake section is left out"; fi
	OPENBLAS_NUM_THREADS=1 build-bench/benchmarks/mbk_bench --md docs/benchmarks.md --csv benchmarks/results.csv \
	  --default-side build-bench-default/benchmarks/mbk_bench_default_side.so --prev-csv benchmarks/results.csv \
	  --drake-csv build-bench/drake-io/drake.csv $(BENCH_ARGS)
	@if [ -x .venv/bin/python ]; then \
	  OPENBLAS_NUM_THREADS=1 PYTHONPATH=python MBK_LIBRARY=$(CURDIR)/build-bench/libmbk.so \
	    .venv/bin/python benchmarks/bench_python.py build-bench/benchmarks/mbk_bench_pyhelper \
	    --md docs/benchmarks_python.md $(filter --quick,$(BENCH_ARGS)); \
	else echo "bench: no .venv (scripts/python-env.sh): the Python section (docs/benchmarks_python.md) is skipped"; fi
	bash scripts/bench-ensemble.sh build-bench/benchmarks/mbk_bench_ensemble docs/benchmarks_ensemble.md
	OPENBLAS_NUM_THREADS=1 build-bench/benchmarks/mbk_bench_stiff --md docs/benchmarks_stiff.md \
	  $(if $(filter --quick,$(BENCH_ARGS)),--links 5 --repeat 1)

clean:
	rm -rf $(BUILD) build-asan build-tsan build-bench build-bench-default mbk-out
