# SwiftQueues — set-up, build, run and test on a Debian machine.
#
#   make run       install what is missing, build, run the Swift example program (sq-hashtree,
#                  Examples/SQHashTree) on RUN_DIR; `make run-c` runs the C one (cq-hashtree)
#   make lint      the C core's structure checks (scripts/lint.sh): no include from a lower layer
#                  into a higher one, a pairing note on every non-relaxed atomic, clang-format
#   make test      install what is missing, make lint, build, run the C tests (ctest), `swift test`
#                  and the tests of the Swift example and of the metrics package (test-examples)
#   make load      the example HTTP service (Examples/SQHTTPService) under wrk, its CPU work on
#                  Swift's default executor, on SwiftQueues and on Dispatch
#   make bench     build optimised and run the benchmarks with a progress line: cq-bench (the C
#                  core vs libdispatch), the HTTP server under wrk (bench/http_bench.py), the Swift
#                  layer vs the Dispatch overlay, Swift's default executor and Foundation's
#                  OperationQueue (Benchmarks/, sq-swift-bench); scripts/bench_report.py writes
#                  tables and SVG charts to bench/results/<UTC date-time>/ (~7 min; QUICK=1:
#                  small sizes, under 2 min once built, into bench/results/<...>-quick/)
#   make bench-ordo  the Swift layer under ordo-one's benchmark package (Benchmarks/Ordo):
#                  p50/p99 per operation and mallocs per operation, ours vs theirs
#   make sanitize  the C tests under ASan+UBSan and under TSan, and `swift test --sanitize=thread`
#   make soak      minutes of mixed load (SOAK_SECONDS, default 300): counts checked, tasks/s and
#                  RSS printed every 10 s; fails on a wrong count or RSS growth over 10 %
#   make fuzz      fuzz the C API with libFuzzer, clang, ASan and UBSan (FUZZ_SECONDS, default 600)
#   make model     the model checks alone (ring checker, spin models); `make test` runs them too
#   make clean     remove the build folders
#
# Installing packages needs root (as in CI); as another user, install them first:
#   sudo apt-get install liburcu-dev cmake ninja-build pkg-config gcc libblocksruntime-dev spin wrk \
#     clang-format systemtap-sdt-dev

SHELL := /bin/bash
BUILD ?= build
JOBS ?= $(shell nproc)
RUN_DIR ?= /usr/include
APT_PACKAGES := liburcu-dev cmake ninja-build pkg-config gcc libblocksruntime-dev spin wrk \
	clang-format systemtap-sdt-dev
SWIFT_SCRATCH ?= .build

.PHONY: all deps lint build run run-c test test-c test-swift test-examples bench bench-ordo sanitize \
	sanitize-c sanitize-swift soak fuzz model clean load

all: build

deps:
	@missing=""; \
	for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "need root to install:$$missing (or install them yourself)"; exit 1; fi; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get install -y --no-install-recommends $$missing >/dev/null 2>&1 || \
	    { apt-get update -qq && apt-get install -y --no-install-recommends $$missing; }; \
	fi

build: deps
	cmake -S . -B $(BUILD) -G Ninja -DCQ_WERROR=ON
	ninja -C $(BUILD)

run: deps
	swift run -c release --package-path Examples/SQHashTree --scratch-path Examples/SQHashTree/.build sq-hashtree $(RUN_DIR)

run-c: build
	./$(BUILD)/cq-hashtree $(RUN_DIR)

lint: deps
	scripts/lint.sh

# lint first: a layering or pairing-note failure stops the run before the long tests.
test: lint
	$(MAKE) test-c test-swift test-examples

test-c: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

test-swift: deps
	swift test --scratch-path $(SWIFT_SCRATCH) -Xswiftc -warnings-as-errors

test-examples: deps
	swift test --package-path Examples/SQHashTree --scratch-path Examples/SQHashTree/.build -Xswiftc -warnings-as-errors
	swift test --package-path Integrations/SwiftQueuesMetrics --scratch-path Integrations/SwiftQueuesMetrics/.build -Xswiftc -warnings-as-errors

# BENCH_ARGS, HTTP_BENCH_ARGS and SWIFT_BENCH_ARGS pass options (or workload names) to cq-bench,
# http_bench.py and sq-swift-bench; QUICK=1 gives each tool its --quick.
bench: deps
	cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DCQ_BUILD_TESTS=OFF
	ninja -C build-bench cq-bench cq-http-server cq-http-server-libdispatch cq-core-rtt
	swift build -c release --package-path Benchmarks --scratch-path .build-bench-swift
	python3 scripts/bench_report.py run $(if $(QUICK),--quick) --bin-dir build-bench/bench \
	  --swift-bench .build-bench-swift/release/sq-swift-bench --c-args "$(BENCH_ARGS)" \
	  --http-args "$(HTTP_BENCH_ARGS)" --swift-args "$(SWIFT_BENCH_ARGS)"

# ordo-one's benchmark package builds its own tool and the benchmark targets in release mode under
# Benchmarks/Ordo/.build; ORDO_ARGS passes options (e.g. --filter 'sync.*').
bench-ordo: deps
	swift package --package-path Benchmarks/Ordo benchmark $(ORDO_ARGS)

sanitize: sanitize-c sanitize-swift

sanitize-c: deps
	cmake -S . -B build-asan -G Ninja -DCMAKE_C_COMPILER=gcc -DCQ_BUILD_BENCH=OFF \
	  -DCQ_SANITIZE=address,undefined
	ninja -C build-asan
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  ctest --test-dir build-asan --output-on-failure -j $(JOBS)
	cmake -S . -B build-tsan -G Ninja -DCMAKE_C_COMPILER=gcc -DCQ_BUILD_BENCH=OFF \
	  -DCQ_SANITIZE=thread
	ninja -C build-tsan
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	  ctest --test-dir build-tsan --output-on-failure -j $(JOBS)

SOAK_SECONDS ?= 300
soak: deps
	cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DCQ_BUILD_TESTS=OFF
	ninja -C build-bench cq-soak
	./build-bench/cq-soak $(SOAK_SECONDS)

FUZZ_SECONDS ?= 600
fuzz: deps
	Tests/fuzz/run.sh $(FUZZ_SECONDS)

model: build
	ctest --test-dir $(BUILD) --output-on-failure -L model

# The example HTTP service (Examples/SQHTTPService) under wrk, once per executor placement.
load: deps
	swift build -c release --package-path Examples/SQHTTPService \
	  --scratch-path Examples/SQHTTPService/.build --product sq-http-service -Xswiftc -warnings-as-errors
	python3 Examples/SQHTTPService/load.py $(LOAD_ARGS)

sanitize-swift: deps
	# No backtracer: under the sanitizer its fork() in a crashing process trips TSan and hangs.
	SWIFT_BACKTRACE=enable=no swift test --scratch-path .build-tsan --sanitize=thread

clean:
	rm -rf $(BUILD) build-bench build-asan build-tsan build-fuzz $(SWIFT_SCRATCH) .build-tsan Examples/SQHashTree/.build Examples/SQHTTPService/.build \
	  .build-bench-swift Benchmarks/Ordo/.build
