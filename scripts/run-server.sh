#!/usr/bin/env bash
# Builds and runs iggy-server on its embedded default configuration (root user iggy/iggy).
# Installs the system packages the build needs first. Extra arguments go to iggy-server.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
exec cargo run --release --locked -p rill-server --bin iggy-server -- --with-default-root-credentials "$@"
