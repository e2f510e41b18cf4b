#!/usr/bin/env bash
# Fuzzes rill-core's decoders with cargo-fuzz (libFuzzer) for a bounded time per target.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]     (default 20)
#
# Targets live in two crates outside the main workspace: core/fuzz (rill-core's wire decoders:
# request_decoder, message_batch, responses, frames, v09) and server/fuzz (the server's metadata log
# records and boot-time recovery: metadata_log; the WebSocket framing and handshake:
# websocket_frames; the HTTP API's JSON bodies and query strings: http_bodies). Each run starts
# from the committed seeds in
# <crate>/seeds/<target> plus whatever <crate>/corpus/<target> has gathered (git-ignored).
# Installs cargo-fuzz if it is missing. Exits non-zero if any target crashes; the crashing input
# is left in <crate>/artifacts/<target>/ and can be replayed with
#   (cd <crate> && cargo +nightly fuzz run <target> artifacts/<target>/<file>)
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-20}"
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: $0 [seconds per target, a positive integer]" >&2
    exit 2
fi

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi

# cargo-fuzz passes unstable compiler flags. Prefer an installed nightly toolchain (with
# AddressSanitizer); otherwise use the pinned stable toolchain with RUSTC_BOOTSTRAP=1 and no
# sanitizer (Rust code is memory-safe here, panics are still caught).
toolchain=()
sanitizer=()
if command -v rustup >/dev/null && rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    toolchain=(+nightly)
else
    echo "no nightly toolchain: fuzzing with the stable toolchain, without a sanitizer"
    export RUSTC_BOOTSTRAP=1
    sanitizer=(--sanitizer none)
fi

failed=()
total=0
# fuzz_crate DIR PROFILE TARGET...: builds DIR's targets in PROFILE (release or dev), then
# fuzzes each for $seconds.
fuzz_crate() {
    local dir="$1"
    local profile=(--"$2")
    shift 2
    (
        cd "$dir"
        echo "==> building fuzz targets in $dir (${profile[*]})"
        cargo "${toolchain[@]}" fuzz build "${profile[@]}" "${sanitizer[@]}"
    ) || { failed+=("$dir (build)"); return; }
    for target in "$@"; do
        total=$((total + 1))
        mkdir -p "$dir/corpus/$target"
        log="$(mktemp)"
        echo "==> fuzzing $dir $target for ${seconds}s"
        if (cd "$dir" && cargo "${toolchain[@]}" fuzz run "${profile[@]}" "${sanitizer[@]}" "$target" \
            "corpus/$target" "seeds/$target" -- \
            -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048) >"$log" 2>&1; then
            grep -E '^Done [0-9]+ runs' "$log" | tail -n 1 || true
        else
            tail -n 40 "$log"
            echo "!!! $target crashed: see $dir/artifacts/$target/" >&2
            failed+=("$target")
        fi
        rm -f "$log"
    done
}

# The wire decoders build in release mode (few dependencies, and optimised code runs several
# times more inputs in the same seconds). The server's targets pull in the whole server and its
# dependency tree (TLS, QUIC, Raft...), which cargo-fuzz's release mode builds as one codegen
# unit with sanitizer coverage: about 10 minutes of a cold CI run on two cores. Their dev
# profile (opt-level 1, server/fuzz/Cargo.toml) builds in about 7 for a bounded run of 20
# seconds per target.
fuzz_crate core/fuzz release request_decoder message_batch responses frames v09
fuzz_crate server/fuzz dev metadata_log websocket_frames http_bodies

if ((${#failed[@]})); then
    echo "fuzzing found crashes in: ${failed[*]}" >&2
    exit 1
fi
echo "fuzzing: no crashes in $total targets (${seconds}s each)"
