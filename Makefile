# deeplocalize — top-level entry points. `make run` and `make test` install what is
# missing (Debian packages), configure and build in Release, then run.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
RUN_MODEL ?= models/demo/model.onnx
RUN_DATA ?= models/demo/data.csv

.PHONY: all deps build run test test-sanitize clean

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

test-sanitize:
	$(MAKE) test BUILD=build-sanitize CMAKE_FLAGS="-DDL_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo"

clean:
	rm -rf $(BUILD) build-sanitize
