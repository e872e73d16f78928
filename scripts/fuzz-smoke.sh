#!/usr/bin/env bash
# Runs every fuzz target briefly (FUZZ_SECONDS each, default 20) from its
# committed corpus, with AddressSanitizer: the CI share of the fuzzing that
# docs/reliability.md records. Fails on any crash, hang (over 10 s an
# input), or allocation past 2 GiB; the input is left in
# fuzz/artifacts/<target>/ and named on stderr. The committed corpora are not
# modified: new inputs go to a scratch directory.
#
# Needs cargo-fuzz (installed from crates.io when missing) and builds on the
# stable toolchain with RUSTC_BOOTSTRAP=1 (libFuzzer's sanitizer flags are
# nightly-only flags).
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
seconds=${FUZZ_SECONDS:-20}
command -v cargo-fuzz >/dev/null || cargo install --locked cargo-fuzz
export RUSTC_BOOTSTRAP=1
cargo fuzz build -O
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for target in $(cargo fuzz list); do
  mkdir -p "$scratch/$target" "corpus/$target"
  echo "fuzz-smoke: $target for ${seconds} s"
  if ! cargo fuzz run -O "$target" "$scratch/$target" "corpus/$target" -- \
      -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -detect_leaks=0 \
      -print_final_stats=1 >"$scratch/$target.log" 2>&1; then
    tail -n 60 "$scratch/$target.log" >&2
    echo "fuzz-smoke: $target failed; the input is in fuzz/artifacts/$target/" >&2
    exit 1
  fi
  grep -a -E "^stat::number_of_executed_units" "$scratch/$target.log" || true
done
