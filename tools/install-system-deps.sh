#!/bin/sh
# Installs the Debian packages the build needs: jansson (the engine's JSON
# value trees), pkg-config (meson finds jansson with it), clang-format and
# clang-tidy (make lint), GNU time (the RSS tests compare with /usr/bin/time -v).
# Runs apt-get only when something is missing.
set -eu
missing=""
pkg-config --exists jansson 2>/dev/null || missing="$missing libjansson-dev pkg-config"
command -v clang-format >/dev/null 2>&1 || missing="$missing clang-format"
command -v clang-tidy >/dev/null 2>&1 || missing="$missing clang-tidy"
[ -x /usr/bin/time ] || missing="$missing time"
[ -z "$missing" ] && exit 0
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -q
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing
