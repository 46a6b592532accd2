# deeplocalize — top-level entry points. `make run` and `make test` install what is
# missing (Debian packages), configure and build in Release, then run.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
RUN_MODEL ?= models/demo/model.onnx
RUN_DATA ?= models/demo/data.csv

.PHONY: all deps build run test test-sanitize bench clean

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

run: build
	./$(BUILD)/deeplocalize inspect $(RUN_MODEL)
	./$(BUILD)/deeplocalize train $(RUN_MODEL) $(RUN_DATA); status=$$?; \
	  if [ $$status -gt 1 ]; then exit $$status; fi

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Training throughput vs PyTorch and probe overhead (bench/README.md); ROUNDS=5 by default.
bench: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target dl_bench_train
	cmake --build $(BUILD) -j $(JOBS) --target dl_micro_bench || echo "dl_micro_bench not built (libbenchmark-dev missing?)"
	bench/run.sh $(BUILD)

test-sanitize:
	$(MAKE) test BUILD=build-sanitize CMAKE_FLAGS="-DDL_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo"

clean:
	rm -rf $(BUILD) build-sanitize
