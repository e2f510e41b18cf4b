#!/usr/bin/env bash
# Installs the official Apache Iggy CLI (crate `iggy-cli` 0.13.0, binary `iggy`) into
# $CARGO_HOME/bin, which the integration tests in integration/tests/official_cli.rs drive against
# our server. Safe to run repeatedly: it skips the (slow) build when the installed binary already
# reports version 0.13.0.
set -euo pipefail

version="0.13.0"
cargo_home="${CARGO_HOME:-$HOME/.cargo}"
bin="$cargo_home/bin/iggy"

# `iggy --version` prints a line such as "iggy-cli 0.13.0" (clap's name and version); match the
# version number as a whole word so 0.13.01 or 10.13.0 would not count.
if [[ -x "$bin" ]] && "$bin" --version 2>/dev/null | grep -Eq "(^|[^0-9.])${version//./\\.}([^0-9.]|$)"; then
    echo "iggy-cli $version already installed at $bin"
    exit 0
fi

echo "installing iggy-cli $version into $cargo_home/bin (this takes a while)"
# Unoptimised: the tests need its behaviour, not its speed, and a cold debug build takes 164 s
# here against 289 s for a release build.
cargo install iggy-cli --version "$version" --locked --debug
"$bin" --version
