#!/usr/bin/env bash
# Installs the system packages and Rust components the build needs. Safe to run repeatedly:
# it only calls apt-get when something is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

# hwlocality links libhwloc statically through pkg-config, which also pulls libudev.
packages=(pkg-config libhwloc-dev libudev-dev)
# The socket-option tests read the server's sockets with ss.
packages+=(iproute2)
# The official Python client's tests run it in a virtual environment.
python3 -c "import ensurepip, venv" 2>/dev/null || packages+=(python3-venv)
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
    echo "installing: ${missing[*]}"
    sudo_cmd=""
    [[ $(id -u) -eq 0 ]] || sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
fi

# rust-toolchain.toml pins the toolchain; make sure it and its components are present.
command -v rustup >/dev/null && rustup show active-toolchain >/dev/null
