#!/bin/sh
# Installs the Debian packages the build needs: jansson (the engine's JSON
# value trees), pkg-config (meson finds jansson with it), clang-format and
# clang-tidy (make lint), GNU time (the RSS tests compare with /usr/bin/time -v);
# with the argument fuzz, clang-14 and libFuzzer (make fuzz); with the argument
# valgrind, valgrind (make valgrind); with the argument
# browser, Debian's chromium and chromium-driver (the browser tests, make
# browser-test) and iproute2 (`ip`, which brings up loopback in the tests' own
# network namespace).
# Runs apt-get only when something is missing.
set -eu
missing=""
pkg-config --exists jansson 2>/dev/null || missing="$missing libjansson-dev pkg-config"
command -v clang-format >/dev/null 2>&1 || missing="$missing clang-format"
command -v clang-tidy >/dev/null 2>&1 || missing="$missing clang-tidy"
[ -x /usr/bin/time ] || missing="$missing time"
# `make fuzz` (sh tools/install-system-deps.sh fuzz): clang-14 and libFuzzer
if [ "${1:-}" = fuzz ]; then
    command -v clang-14 >/dev/null 2>&1 || missing="$missing clang-14"
    ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 \
        || missing="$missing libfuzzer-14-dev libclang-rt-14-dev"
fi
# `make valgrind` (sh tools/install-system-deps.sh valgrind): memcheck over the C tests
if [ "${1:-}" = valgrind ]; then
    command -v valgrind >/dev/null 2>&1 || missing="$missing valgrind"
fi
# `make browser-test` (sh tools/install-system-deps.sh browser): Chromium, its WebDriver and `ip`.
# This script only installs them and never starts the browser: Chromium calls home by itself, so the
# Makefile runs it only inside a network namespace of its own (unshare -n, loopback up).
if [ "${1:-}" = browser ]; then
    command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
    command -v chromedriver >/dev/null 2>&1 || missing="$missing chromium-driver"
    { command -v ip || [ -x /usr/sbin/ip ] || [ -x /sbin/ip ]; } >/dev/null 2>&1 || missing="$missing iproute2"
fi
[ -z "$missing" ] && exit 0
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -q
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing
