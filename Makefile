# TorchScan: `make run` (set up + demo) and `make test` (set up + every test).
VENV    ?= .venv
PY      := $(VENV)/bin/python
PIP     := $(VENV)/bin/pip
MESON   := $(VENV)/bin/meson
STAMP   := $(VENV)/.deps-stamp
BUILT   := $(VENV)/.built-stamp
CSRC    := $(wildcard src/*/*.c src/*/*.h include/torchscan/*.h) meson.build meson.options docs/torchscan.1
PYSRC   := $(wildcard python/torchscan/*.py python/torchscan/*/*.py) pyproject.toml

.PHONY: readme-screenshot run test build deps ctest asan asan-ext valgrind coverage coverage-core coverage-ext pytest browser-test vision-env vision-build vision-test ext-layers bench bench-instructions lint format format-check clean

run: build
	$(PY) -m torchscan demo

test: format-check ext-layers ctest asan asan-ext pytest browser-test vision-test

deps: $(STAMP)
$(STAMP): requirements-dev.txt tools/install-system-deps.sh
	sh tools/install-system-deps.sh
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -r requirements-dev.txt
	touch $@

build: $(BUILT)
$(BUILT): $(STAMP) $(CSRC) $(PYSRC)
	$(PIP) install -q --no-build-isolation --no-deps . -Csetup-args=-Dwerror=true
	touch $@

# The second test environment, .venv-vision: torch, torchvision and timm as pinned in requirements-vision.txt
# (a CUDA build of torch, about 5.5 GB, that runs on CPU). tools/vision-env.sh installs them once per machine
# into a cache outside the clone, keyed by the pins, and makes .venv-vision a small environment of the clone
# that reads the cache; torchscan is built (build-vision/, per clone) and installed into .venv-vision only.
VISION  := .venv-vision
VPY     := $(VISION)/bin/python
VBUILT  := $(VISION)/.built-stamp

vision-env: $(STAMP)
	sh tools/vision-env.sh

vision-build: vision-env
	@$(MAKE) --no-print-directory $(VBUILT)
$(VBUILT): $(CSRC) $(PYSRC) requirements-vision.txt tools/vision-env.sh
	PATH="$(CURDIR)/$(VISION)/cache/bin:$$PATH" \
	    $(VPY) -m pip install -q --no-build-isolation --no-deps -Cbuild-dir=build-vision -Csetup-args=-Dwerror=true .
	touch $@

# torchvision's and timm's models (tests/vision) in .venv-vision; VISION_ARGS=--run-slow adds the slow ones.
vision-test: vision-build
	$(VPY) -m pytest tests/vision -q -rs $(VISION_ARGS)

# C unit tests, warnings as errors.
ctest: $(STAMP)
	test -d build-c || $(MESON) setup build-c -Dpython=false -Dtests=true -Dwerror=true --buildtype=debug
	$(MESON) compile -C build-c
	@set -e; for t in build-c/test_*; do [ -f "$$t" ] && [ -x "$$t" ] || continue; echo "== $$t"; $$t; done

# The same C tests under AddressSanitizer + UndefinedBehaviorSanitizer.
asan: $(STAMP)
	test -d build-asan || $(MESON) setup build-asan -Dpython=false -Dtests=true -Dwerror=true --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false
	$(MESON) compile -C build-asan
	@set -e; for t in build-asan/test_*; do [ -f "$$t" ] && [ -x "$$t" ] || continue; echo "== asan $$t"; UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 $$t; done

# The extension itself under AddressSanitizer + UndefinedBehaviorSanitizer: built into build-asan-ext/site (the
# .venv's build is left alone), loaded with the sanitizer runtimes preloaded, and run on the thread, interrupt,
# crawl-contract and saved-activation tests (leak detection is off: the interpreter keeps what it allocated at exit).
ASAN_RUNTIME = $$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libubsan.so)
asan-ext: $(STAMP)
	$(PIP) install -q --no-build-isolation --no-deps . -Cbuild-dir=build-asan-ext -Csetup-args=-Dwerror=true \
	    -Csetup-args=-Db_sanitize=address,undefined -Csetup-args=-Db_lundef=false -Csetup-args=-Dbuildtype=debug \
	    --upgrade --target build-asan-ext/site
	PYTHONPATH=build-asan-ext/site LD_PRELOAD="$(ASAN_RUNTIME)" ASAN_OPTIONS=detect_leaks=0:halt_on_error=1 \
	    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 $(PY) -m pytest -q -p no:cacheprovider \
	    tests/python/test_threads.py tests/python/test_interrupts.py tests/python/test_crawl_contract.py \
	    tests/python/test_saved_activations.py

# The C tests under valgrind memcheck (no error, nothing definitely lost), then pytest's leak loops with
# Python's debug allocator and development mode (PYTHONMALLOC=debug, -X dev).
VALGRIND := valgrind --tool=memcheck --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=99 -q
valgrind: build
	sh tools/install-system-deps.sh valgrind
	test -d build-c || $(MESON) setup build-c -Dpython=false -Dtests=true -Dwerror=true --buildtype=debug
	$(MESON) compile -C build-c
	@set -e; for t in build-c/test_*; do [ -f "$$t" ] && [ -x "$$t" ] || continue; echo "== valgrind $$t"; TORCHSCAN_TEST_VALGRIND=1 $(VALGRIND) $$t; done
	PYTHONMALLOC=debug $(PY) -X dev -m pytest tests/python/test_leaks.py -q -p no:cacheprovider

# Line and branch coverage (gcovr from requirements-dev.txt, over gcc's gcov): src/core by the C tests,
# src/ext by pytest against an instrumented build of the extension installed into build-cov-ext/site
# (the .venv's own build is left alone). Uncovered branches are listed by file.
GCOVR := $(VENV)/bin/gcovr -r . --gcov-ignore-parse-errors=all --txt-metric branch --print-summary
coverage: $(STAMP)
	rm -rf build-cov build-cov-ext
	$(MESON) setup build-cov -Dpython=false -Dtests=true --buildtype=debug -Db_coverage=true
	$(MESON) compile -C build-cov
	@set -e; for t in build-cov/test_*; do [ -f "$$t" ] && [ -x "$$t" ] || continue; $$t >/dev/null; done
	$(PIP) install -q --no-build-isolation --no-deps . -Cbuild-dir=build-cov-ext \
	    -Csetup-args=-Db_coverage=true -Csetup-args=-Dbuildtype=debug --target build-cov-ext/site
	PYTHONPATH=build-cov-ext/site $(PY) -m pytest tests/python -q -p no:cacheprovider
	@echo "== src/core by the C tests"; $(GCOVR) --filter src/core/ build-cov
	@echo "== src/ext by pytest"; $(GCOVR) --filter src/ext/ build-cov-ext

# src/core by the C tests alone (no extension build, no pytest): build-cov-core/, branch summary and the
# uncovered branches by file.
coverage-core: $(STAMP)
	rm -rf build-cov-core
	$(MESON) setup build-cov-core -Dpython=false -Dtests=true --buildtype=debug -Db_coverage=true
	$(MESON) compile -C build-cov-core
	@set -e; for t in build-cov-core/test_*; do [ -f "$$t" ] && [ -x "$$t" ] || continue; $$t >/dev/null; done
	$(GCOVR) --filter src/core/ build-cov-core

# src/ext alone, by pytest: the instrumented build in build-cov-ext (as `make coverage`), COV_TESTS picks the test
# files (all of tests/python by default). Counts add up over runs until COV_RESET=1 (or `make coverage`) clears them.
COV_TESTS ?= tests/python
coverage-ext: $(STAMP)
	if [ "$(COV_RESET)" = 1 ]; then rm -rf build-cov-ext; fi
	$(PIP) install -q --no-build-isolation --no-deps . -Cbuild-dir=build-cov-ext \
	    -Csetup-args=-Db_coverage=true -Csetup-args=-Dbuildtype=debug --upgrade --target build-cov-ext/site
	PYTHONPATH=build-cov-ext/site $(PY) -m pytest $(COV_TESTS) -q -p no:cacheprovider
	@echo "== src/ext by pytest ($(COV_TESTS))"; $(GCOVR) --filter src/ext/ build-cov-ext

# src/ext: no call from a file to a file of its own or a higher layer, and engine statuses become
# exceptions in convert.c only (compiles each file with cc and reads its symbols with nm).
ext-layers: $(STAMP)
	$(PY) tools/check_ext_layers.py

pytest: build
	$(PY) -m pytest tests/python -q

# Rendered pages in Debian's headless Chromium (tests/browser): installs chromium, chromium-driver and iproute2
# when missing, then runs pytest in a network namespace of its own (`unshare -n`, loopback only), since
# Chromium calls home on its own. Where unshare is not permitted the tests skip and say why.
browser-test: build
	sh tools/install-system-deps.sh browser
	@if unshare -n true 2>/dev/null; then \
	    set -x; unshare -n sh -c 'ip link set lo up && $(PY) -m pytest tests/browser -q -rs'; \
	else \
	    echo "browser-test: unshare -n is not permitted here, so Chromium may not start: the tests skip"; \
	    set -x; $(PY) -m pytest tests/browser -q -rs; \
	fi

# bench/browser_load.py: render_report time and Chromium's page load; the browser part only in a network
# namespace of its own (unshare -n), elsewhere it prints why that column is unavailable.
bench: build
	$(PY) bench/run.py
	$(PY) bench/workload.py
	$(PY) bench/op_overhead.py
	$(PY) bench/checkpoints.py
	$(PY) bench/distributed.py
	$(PY) bench/memory.py
	@if unshare -n true 2>/dev/null; then \
	    set -x; unshare -n sh -c 'ip link set lo up && $(PY) bench/browser_load.py'; \
	else \
	    set -x; $(PY) bench/browser_load.py; \
	fi

# The main ratios of bench/run.py in instructions (callgrind; needs valgrind, a few minutes).
bench-instructions: build
	$(PY) bench/instructions.py

# libFuzzer over saved report JSON -> report check -> compare/table/JSON text
# (tests/fuzz/fuzz_report.c), then one target per checkpoint reader (tests/fuzz/fuzz_checkpoint.c built with
# FUZZ_READER: safetensors, index, torch_zip, torch_legacy, gguf; seeds in tests/fuzz/checkpoints/<reader>/),
# each under ASan+UBSan for FUZZ_SECONDS (FUZZ_TARGETS picks some: `make fuzz FUZZ_TARGETS="gguf"`).
FUZZ_SECONDS ?= 600
FUZZ_TARGETS ?= report safetensors index torch_zip torch_legacy gguf
FUZZ_CC := clang-14 -std=c11 -g -O1 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_RUN := -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 -timeout=10 -rss_limit_mb=2048
fuzz: $(STAMP)
	sh tools/install-system-deps.sh fuzz
	@set -e; mkdir -p build-fuzz; n=0; for t in $(FUZZ_TARGETS); do \
	    if [ $$t = report ]; then \
	        $(FUZZ_CC) -Iinclude src/core/*.c tests/fuzz/fuzz_report.c -ljansson -lm -o build-fuzz/fuzz_report; \
	        mkdir -p build-fuzz/corpus; \
	        (cd build-fuzz && ./fuzz_report $(FUZZ_RUN) corpus ../tests/fuzz/corpus); \
	        continue; \
	    fi; \
	    case $$t in safetensors) r=0;; index) r=1;; torch_zip) r=2;; torch_legacy) r=3;; gguf) r=4;; \
	        *) echo "unknown fuzz target $$t"; exit 2;; esac; \
	    $(FUZZ_CC) -DFUZZ_READER=$$r -Iinclude -Isrc/core src/core/*.c tests/fuzz/fuzz_checkpoint.c -ljansson -lm \
	        -o build-fuzz/fuzz_$$t; \
	    mkdir -p build-fuzz/corpus_$$t; \
	    (cd build-fuzz && ./fuzz_$$t $(FUZZ_RUN) corpus_$$t ../tests/fuzz/checkpoints/$$t); \
	done

format-check: $(STAMP)
	clang-format --dry-run --Werror src/*/*.c src/*/*.h include/torchscan/*.h tests/c/*.c tests/c/*.h

lint: format-check
	test -d build-c || $(MESON) setup build-c -Dpython=false -Dtests=true -Dwerror=true --buildtype=debug
	clang-tidy -p build-c --quiet src/core/*.c src/cli/*.c

format:
	clang-format -i src/*/*.c src/*/*.h include/torchscan/*.h tests/c/*.c tests/c/*.h

# docs/images/report.png, the README's picture of a rendered report (tools/readme_screenshot.py; Chromium
# only in a network namespace of its own).
readme-screenshot: build
	sh tools/install-system-deps.sh browser
	unshare -n sh -c 'ip link set lo up && $(PY) tools/readme_screenshot.py'

clean:
	rm -rf build-c build-asan build build-fuzz build-browser build-vision $(BUILT) $(VBUILT)
