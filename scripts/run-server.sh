#!/usr/bin/env bash
# Builds iggy-server and the bundled `iggy` CLI (target/release/iggy), then runs the server on
# its embedded default configuration (root user iggy/iggy). Installs the system packages the
# build needs first. Extra arguments go to iggy-server.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cargo build --release --locked -p rill-server -p rill-cli
target_dir=${CARGO_TARGET_DIR:-target}
exec "$target_dir/release/iggy-server" --with-default-root-credentials "$@"
