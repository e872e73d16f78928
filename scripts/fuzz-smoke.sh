#!/usr/bin/env bash
# Runs every fuzz target briefly from its committed corpus, with
# AddressSanitizer: the CI share of the fuzzing that docs/reliability.md
# records. Fails on any crash, hang (over 10 s an input), or allocation past
# 2 GiB; the input is left in fuzz/artifacts/<target>/ and named on stderr.
# The committed corpora are not modified: new inputs go to a scratch
# directory.
#
# By default each target runs FUZZ_RUNS executions (default 40000) from a
# fixed seed (FUZZ_SEED, default 1), so a run that passes here passes in CI:
# the same binary, corpus and seed make the same inputs. Exploration (a new
# seed each time, bounded by time) is `FUZZ_SECONDS=600 scripts/fuzz-smoke.sh`;
# whatever it finds is fixed and kept in fuzz/regressions/ before it lands.
#
# Needs cargo-fuzz (installed from crates.io when missing) and builds on the
# stable toolchain with RUSTC_BOOTSTRAP=1 (libFuzzer's sanitizer flags are
# nightly-only flags).
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
if [ -n "${FUZZ_SECONDS:-}" ]; then
  budget=(-max_total_time="$FUZZ_SECONDS")
  what="for $FUZZ_SECONDS s"
else
  budget=(-runs="${FUZZ_RUNS:-40000}" -seed="${FUZZ_SEED:-1}")
  what="${FUZZ_RUNS:-40000} runs from seed ${FUZZ_SEED:-1}"
fi
command -v cargo-fuzz >/dev/null || cargo install --locked cargo-fuzz
export RUSTC_BOOTSTRAP=1
cargo fuzz build -O
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for target in $(cargo fuzz list); do
  mkdir -p "$scratch/$target" "corpus/$target"
  echo "fuzz-smoke: $target, $what"
  if ! cargo fuzz run -O "$target" "$scratch/$target" "corpus/$target" -- \
      "${budget[@]}" -rss_limit_mb=2048 -timeout=10 -detect_leaks=0 \
      -print_final_stats=1 >"$scratch/$target.log" 2>&1; then
    tail -n 60 "$scratch/$target.log" >&2
    echo "fuzz-smoke: $target failed; the input is in fuzz/artifacts/$target/" >&2
    exit 1
  fi
  grep -a -E "^stat::(number_of_executed_units|average_exec_per_sec)" "$scratch/$target.log" || true
done
