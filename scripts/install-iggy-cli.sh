#!/usr/bin/env bash
# Installs the official Apache Iggy CLI of both client generations, which the integration tests
# (integration/tests/official_cli*.rs) drive against our server:
#   iggy-cli 0.13.0 (SDK 0.10.0, the 0.8 protocol) as $CARGO_HOME/bin/iggy
#   iggy-cli 0.14.0 (SDK 0.11.0, the 0.9 protocol) as $CARGO_HOME/iggy-cli-0.14.0/bin/iggy
# Both binaries are called `iggy`, hence the second root. Safe to run repeatedly: it skips the
# (slow) build of a version whose installed binary already reports that version.
set -euo pipefail

cargo_home="${CARGO_HOME:-$HOME/.cargo}"

install_cli() {
    local version="$1" root="$2"
    local bin="$root/bin/iggy"
    # `iggy --version` prints a line such as "iggy-cli 0.13.0" (clap's name and version); match
    # the version number as a whole word so 0.13.01 or 10.13.0 would not count.
    if [[ -x "$bin" ]] && "$bin" --version 2>/dev/null | grep -Eq "(^|[^0-9.])${version//./\\.}([^0-9.]|$)"; then
        echo "iggy-cli $version already installed at $bin"
        return
    fi
    echo "installing iggy-cli $version into $root/bin (this takes a while)"
    # Unoptimised: the tests need its behaviour, not its speed, and a cold debug build takes
    # 164 s here against 289 s for a release build. One target directory for both versions, so
    # the dependencies they share at the same version are compiled once.
    CARGO_TARGET_DIR="$cargo_home/iggy-cli-build" \
        cargo install iggy-cli --version "$version" --locked --debug --root "$root"
    "$bin" --version
}

install_cli 0.13.0 "$cargo_home"
install_cli 0.14.0 "$cargo_home/iggy-cli-0.14.0"
# The build directory is only a cache for the two installs above.
rm -rf "$cargo_home/iggy-cli-build"
