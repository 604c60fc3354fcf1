#!/bin/sh
# Sets up .venv-vision, the environment of `make vision-test` (torch, torchvision and timm as pinned in
# requirements-vision.txt), in two parts:
#  - the pinned packages (a CUDA build of torch, about 5.5 GB) go into a virtual environment in a cache
#    outside the clone, named after the torch/torchvision/timm pins, built once per machine and shared by
#    every clone (a fresh CI clone reuses it): ${XDG_CACHE_HOME:-$HOME/.cache}/torchscan/venv-vision-...;
#  - .venv-vision in the clone is a small virtual environment of its own whose site-packages reads the
#    cache's through a .pth file, so that each clone installs its own build of torchscan (Makefile target
#    vision-build) and two clones never overwrite each other's.
# The extension uses the CPython API only (no torch headers, no libtorch link), so building it needs
# nothing of torch; the cache's Python must be the same CPython as the clone's (checked below).
# Prints nothing when both parts are up to date. Concurrent runs wait for each other (flock).
set -eu
req=requirements-vision.txt
pin() { sed -n "s/^$1==//p" "$req"; }
torch=$(pin torch)
tv=$(pin torchvision)
timm=$(pin timm)
if [ -z "$torch" ] || [ -z "$tv" ] || [ -z "$timm" ]; then
    echo "vision-env: $req must pin torch, torchvision and timm with ==" >&2
    exit 2
fi
python=${PYTHON:-python3}
pyver=$("$python" -c 'import sys; print(sys.version.split()[0])')
cache=${XDG_CACHE_HOME:-$HOME/.cache}/torchscan
env=$cache/venv-vision-torch$torch-tv$tv-timm$timm
# What the cached environment was installed from: the whole pin file (build tools included) and the
# CPython version; any difference reinstalls.
want="$(sha256sum "$req" | cut -c1-64) python $pyver"
mkdir -p "$cache"
exec 9>"$env.lock"
flock 9
if [ "$(cat "$env/.torchscan-stamp" 2>/dev/null)" != "$want" ]; then
    have=$("$env/bin/python" -c 'import sys; print(sys.version.split()[0])' 2>/dev/null || true)
    if [ "$have" != "$pyver" ]; then
        rm -rf "$env"
        "$python" -m venv "$env"
    fi
    echo "vision-env: installing $req into $env (once per machine; a few GB)"
    start=$(date +%s)
    "$env/bin/python" -m pip install -q --upgrade pip
    "$env/bin/python" -m pip install -q -r "$req"
    echo "vision-env: installed in $(($(date +%s) - start)) s"
    echo "$want" >"$env/.torchscan-stamp"
fi
flock -u 9
local=.venv-vision
site=$("$env/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
if [ ! -x "$local/bin/python" ] \
    || [ "$("$local/bin/python" -c 'import sys; print(sys.version.split()[0])' 2>/dev/null || true)" != "$pyver" ]; then
    rm -rf "$local"
    "$python" -m venv --without-pip "$local"
fi
localsite=$("$local/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
# addsitedir also runs the .pth files of the cache's site-packages, as if they were installed here.
line="import site; site.addsitedir('$site')"
if [ "$(cat "$localsite/torchscan-vision-cache.pth" 2>/dev/null)" != "$line" ]; then
    echo "$line" >"$localsite/torchscan-vision-cache.pth"
fi
# The cache's bin/ (meson, ninja) for the build of torchscan, and a visible pointer to the cache.
ln -sfn "$env" "$local/cache"
