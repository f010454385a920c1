# foxhunt entry points. `make demo` and `make test` each set up a fresh machine
# (Debian packages through scripts/setup.sh), configure, build and run.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
# CI builds CUDA code for one architecture only (set CUDA_ARCHS= to use the full release list).
ifdef CI
CUDA_ARCHS ?= 90
endif
ifneq ($(strip $(CUDA_ARCHS)),)
CMAKE_FLAGS += -DCMAKE_CUDA_ARCHITECTURES=$(CUDA_ARCHS)
endif

.PHONY: all setup configure build test test-sanitize demo bench fuzz format clean

all: build

setup:
	@bash scripts/setup.sh

$(BUILD)/CMakeCache.txt:
	@$(MAKE) --no-print-directory setup
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

configure: $(BUILD)/CMakeCache.txt

build: setup configure
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The test suite under AddressSanitizer + UndefinedBehaviorSanitizer (CPU code only). The
# end-to-end pipeline programs (ctest label e2e) run in `make test` only: under ASan they
# cost most of CI's time and already run, unsanitized, in the Release build, so the sanitizer
# build does not build them. SANITIZE_SKIP: the largest model gradient checks and overfit runs,
# pure arithmetic at full size whose index paths the small checks of the same ops cover
# (docs/DECISIONS.md, "CI time").
SANITIZE_SKIP ?= ^(PerceptionGrad\.RealSizes|Perception\.OverfitB(32|4Stride4))
test-sanitize: setup
	cmake -S . -B $(BUILD)-asan -DCMAKE_BUILD_TYPE=Debug -DFXT_SANITIZE=ON -DFXT_CUDA=OFF -DFXT_BENCH=OFF
	cmake --build $(BUILD)-asan -j $(JOBS)
	cd $(BUILD)-asan && ctest --output-on-failure -j $(JOBS) -LE e2e -E '$(SANITIZE_SKIP)'

# The Python module: PYTHONPATH=$(BUILD)/python python3 -c "import foxhunt" (docs/PYTHON.md).
.PHONY: python
PYTHON ?= /usr/bin/python3
python: setup configure
	cmake --build $(BUILD) -j $(JOBS) --target python
	PYTHONPATH=$(BUILD)/python $(PYTHON) -c "import foxhunt; print('import foxhunt: ok, from', foxhunt.__file__)"

demo: build
	bash scripts/demo.sh $(BUILD)/bin/fxt

bench: build
	bash scripts/bench.sh $(BUILD)

# libFuzzer targets (clang): make fuzz, then build-fuzz/fuzz/fuzz_dbn CORPUS_DIR
fuzz:
	@FXT_SETUP_FUZZ=1 bash scripts/setup.sh
	CC=clang CXX=clang++ cmake -S . -B $(BUILD)-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFXT_FUZZ=ON -DFXT_CUDA=OFF -DFXT_BENCH=OFF
	cmake --build $(BUILD)-fuzz -j $(JOBS) --target fuzz_dbn fuzz_binance

format:
	find src tests bench fuzz -name '*.cc' -o -name '*.h' -o -name '*.cu' | xargs clang-format -i

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-fuzz
