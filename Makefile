# deeplocalize — top-level entry points. `make run` and `make test` install what is
# missing (Debian packages), configure and build in Release, then run.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
RUN_MODEL ?= models/demo/model.onnx
RUN_DATA ?= models/demo/data.csv
# The faulty demo (a softmax over one unit): `make run` diagnoses it and verifies a fix.
RUN_FAULTY_MODEL ?= models/demo/faulty/model.onnx
RUN_FAULTY_DATA ?= models/demo/faulty/data.csv

# Fuzzing (tests/fuzz): each target runs FUZZ_SECONDS on its corpus in build-fuzz.
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 30
FUZZ_TARGETS ?= onnx csv npy trace manifest merge
# Sanitizer runs: known third-party leaks (tests/lsan.supp); SANITIZE_CTEST_ARGS narrows
# the test set (CI passes -E conformance when time is short). A sanitizer report (ASan,
# LSan, UBSan) exits 86: the default, 1, is also deeplocalize's "faults found", which the
# test scripts accept, so a report in a CLI run would otherwise pass unnoticed.
SANITIZE_BUILD ?= build-sanitize
SANITIZE_CTEST_ARGS ?=
export ASAN_OPTIONS ?= exitcode=86
export LSAN_OPTIONS ?= suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS ?= print_stacktrace=1:halt_on_error=1:exitcode=86

.PHONY: all deps fuzz-deps build run test test-sanitize fuzz fuzz-ci bench suite suite-fixes clean

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# Builds only the executable (the tests are built by `make test`), then diagnoses the
# healthy demo (exit 0 expected) and the faulty one (exit 1 expected, with a verified fix).
run: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target deeplocalize
	./$(BUILD)/deeplocalize inspect $(RUN_MODEL)
	@echo "==== make run: a healthy model ($(RUN_MODEL))"
	./$(BUILD)/deeplocalize train $(RUN_MODEL) $(RUN_DATA)
	@echo "==== make run: a faulty model ($(RUN_FAULTY_MODEL)), with verified fixes"
	./$(BUILD)/deeplocalize train $(RUN_FAULTY_MODEL) $(RUN_FAULTY_DATA) --verify-fixes; status=$$?; \
	  if [ $$status -ne 1 ]; then echo "make run: expected the faulty demo to be diagnosed (exit 1), got $$status" >&2; exit 1; fi

CTEST_ARGS ?=
test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

# Training throughput vs PyTorch and probe overhead (bench/README.md); ROUNDS=5 by default.
bench: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target dl_bench_train
	cmake --build $(BUILD) -j $(JOBS) --target dl_micro_bench || echo "dl_micro_bench not built (libbenchmark-dev missing?)"
	bench/run.sh $(BUILD)

# The generated fault suite (models/suite/README.md): generated once into $(BUILD)/suite
# (PyTorch, ~1 h of CPU; SUITE_REGEN=1 regenerates), then both splits diagnosed and scored,
# and the verdict's seed stability checked on the committed sample (seed_stability.py).
SUITE ?= $(BUILD)/suite
suite: build
	@if [ ! -f $(SUITE)/heldout/manifest.json ] || [ -n "$(SUITE_REGEN)" ]; then \
	  scripts/install-deps.sh --dev && /usr/bin/python3 models/suite/generate.py --out $(SUITE) --jobs $(JOBS); fi
	./$(BUILD)/deeplocalize batch $(SUITE)/dev/manifest.json --jobs $(JOBS) -q --json $(SUITE)/dev.json; \
	  status=$$?; if [ $$status -gt 1 ]; then exit $$status; fi
	./$(BUILD)/deeplocalize batch $(SUITE)/heldout/manifest.json --jobs $(JOBS) -q --json $(SUITE)/heldout.json; \
	  status=$$?; if [ $$status -gt 1 ]; then exit $$status; fi
	/usr/bin/python3 models/suite/report.py $(SUITE)
	/usr/bin/python3 models/suite/seed_stability.py ./$(BUILD)/deeplocalize --jobs $(JOBS)

# Verified fixes on the suite (issue 15): `batch --verify-fixes` over a fixed, seeded sample
# of each split's buggy cases, stratified by mutation operator (FIX_PER_OP per operator;
# 0 = every buggy case), then the tables with the verified-fix rates (report.py).
FIX_PER_OP ?= 5
suite-fixes: build
	@test -f $(SUITE)/heldout/manifest.json || { echo "no suite in $(SUITE): run make suite first"; exit 2; }
	/usr/bin/python3 models/suite/fix_sample.py $(SUITE) $(SUITE) --per-op $(FIX_PER_OP)
	for split in dev heldout; do \
	  ./$(BUILD)/deeplocalize batch $(SUITE)/$$split-fixes/manifest.json --jobs $(JOBS) -q --verify-fixes \
	    --json $(SUITE)/$$split-fixes.json; status=$$?; if [ $$status -gt 1 ]; then exit $$status; fi; done
	/usr/bin/python3 models/suite/report.py $(SUITE)

# The CNN parity test (resnet18, mobilenet_v3_small) compares 2 steps under the sanitizers,
# where its 20 steps take minutes (tests/unit/pytorch_parity_cnn_test.cpp); DL_TESTS_LIGHT
# makes the heaviest script tests lighter there (the benchmark skips its repair trials).
test-sanitize: export DL_PARITY_CNN_STEPS ?= 2
test-sanitize: export DL_TESTS_LIGHT ?= 1
test-sanitize:
	$(MAKE) test BUILD=$(SANITIZE_BUILD) CMAKE_FLAGS="-DDL_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDL_BUILD_BENCH=OFF" \
	  CTEST_ARGS="$(SANITIZE_CTEST_ARGS)"

# libFuzzer needs clang: a separate build tree, instrumented throughout.
fuzz-deps:
	@scripts/install-deps.sh --fuzz

$(FUZZ_BUILD)/CMakeCache.txt: | fuzz-deps
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++-14 \
	  -DDL_FUZZ=ON -DDL_BUILD_BENCH=OFF

fuzz: fuzz-deps $(FUZZ_BUILD)/CMakeCache.txt
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_targets
	tests/fuzz/seed-corpus.sh $(FUZZ_BUILD) $(FUZZ_BUILD)/deeplocalize
	tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-ci:
	$(MAKE) fuzz FUZZ_SECONDS=60

clean:
	rm -rf $(BUILD) $(SANITIZE_BUILD) $(FUZZ_BUILD)
