#!/usr/bin/env bash
# Runs every check the project has, on a fresh machine: installs what it needs first.
# This is the one test command named in README.md and run by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "system packages"
scripts/install-deps.sh

step "official iggy-cli 0.13.0 and 0.14.0 (for the compatibility tests)"
scripts/install-iggy-cli.sh

step "official Python client apache-iggy 0.9.0 (for the 0.9 protocol tests)"
venv="$(realpath -m "${CARGO_TARGET_DIR:-target}")/py-clients/apache-iggy-0.9.0"
if ! "$venv/bin/python" -c "import apache_iggy" 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet apache-iggy==0.9.0
fi
export RILL_PYTHON_V09="$venv/bin/python"

step "formatting"
cargo fmt --all -- --check

step "module layers (no import circle, no upward edge)"
python3 scripts/check-layers.py

step "Kubernetes manifest (schema and references, no cluster needed)"
python3 -c "import yaml" 2>/dev/null || python3 -m pip install --quiet pyyaml
python3 docker/kubernetes/check.py

step "lints"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "tests"
cargo test --workspace --locked --no-fail-fast

step "storage, front-end and shutdown tests again on the readiness driver (system.io_driver = polling)"
RILL_TEST_IO_DRIVER=polling cargo test -p rill-integration --locked --no-fail-fast \
    --test io_drivers --test restart_durability --test reliability_crash_cycles \
    --test reliability_disk_faults --test segments_flush_and_retention --test quic_and_tls \
    --test malformed_frames --test four_shards --test consumer_offsets

if [[ -x scripts/fuzz.sh ]]; then
    step "fuzzing (bounded)"
    scripts/fuzz.sh "${FUZZ_SECONDS:-20}"
fi

step "Docker image and deployment (skipped without a Docker engine)"
# The image is built from debug binaries: it tests packaging and deployment, and saves CI a
# cold release build (fat LTO, one codegen unit).
RILL_DOCKER_PROFILE=debug docker/test.sh

step "all checks passed"
