#!/bin/sh
# Builds torchscan._engine in place (python/torchscan/) with the C compiler and
# the Python found on PATH, without meson or pip: for a lent GPU machine that
# has a compiler and a PyTorch but no package index. jansson comes from
# .device-deps/ (headers and libjansson.so.4 copied from this machine's
# libjansson-dev by tools/device/stage-deps.sh). Not part of `make`.
set -eu
cd "$(dirname "$0")/../.."
deps=.device-deps
py=${PYTHON:-python3}
inc=$($py -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
suffix=$($py -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
cc -O2 -std=c11 -fPIC -shared -D_GNU_SOURCE -Iinclude -I"$deps/include" -I"$inc" \
    src/core/*.c src/ext/*.c -L"$deps/lib" -l:libjansson.so.4 -lm \
    -Wl,-rpath,"$(pwd)/$deps/lib" -o "python/torchscan/_engine$suffix"
# measure_peak_rss starts commands through the supervisor, looked up beside the package.
cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude -I"$deps/include" src/cli/rss_supervisor.c src/core/*.c \
    -L"$deps/lib" -l:libjansson.so.4 -lm -Wl,-rpath,"$(pwd)/$deps/lib" -o python/torchscan/torchscan-rss-supervisor
echo "built python/torchscan/_engine$suffix and python/torchscan/torchscan-rss-supervisor"
