#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine with the CUDA toolkit lacks to
# build and test cca: meson, ninja, Criterion, pkg-config, a C++ compiler,
# json-c, Python's venv (pytest itself comes from the package registry),
# valgrind (instruction counts), chromium (the pictures' test opens them).
set -euo pipefail
need=()
command -v meson >/dev/null 2>&1 || need+=(meson)
command -v ninja >/dev/null 2>&1 || need+=(ninja-build)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
command -v g++ >/dev/null 2>&1 || need+=(g++)
command -v python3 >/dev/null 2>&1 || need+=(python3)
pkg-config --exists criterion 2>/dev/null || need+=(libcriterion-dev)
pkg-config --exists json-c 2>/dev/null || need+=(libjson-c-dev)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
command -v valgrind >/dev/null 2>&1 || need+=(valgrind)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
    echo "installing: ${need[*]}"
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
if [ ! -f "${CUDA_PATH:-/usr/local/cuda}/include/cuda_runtime_api.h" ]; then
    echo "CUDA toolkit not found (set CUDA_PATH or install it in /usr/local/cuda)" >&2
    exit 1
fi
