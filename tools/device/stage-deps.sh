#!/bin/sh
# Copies jansson's headers and shared library into .device-deps/ (ignored by
# git) so that tools/device/build-ext.sh can build the extension on a machine
# without Debian's libjansson-dev.
set -eu
cd "$(dirname "$0")/../.."
mkdir -p .device-deps/include .device-deps/lib
cp /usr/include/jansson.h /usr/include/jansson_config.h .device-deps/include/
cp -L "$(find /usr/lib -name 'libjansson.so.4' | head -n 1)" .device-deps/lib/
