#!/usr/bin/env bash
# Metrics cost benchmark (issue 20): broker CPU per MB of produce and of catch-up fetch with
# metrics compiled in against a build with them compiled out, interleaved in one run.
# One command, from anywhere:
#
#   ./bench/metrics/run.sh [--quick] [--records N] [--passes N] [--rounds N] [--json FILE]
#
# (full: 1,000,000 records of 1 KiB, 5 fetch passes, 15 rounds, about 3 minutes once built;
# --quick: 30,000 records, 1 pass, 2 rounds, a smoke run whose figures mean nothing). Raw
# results of the runs in docs/performance.md are in bench/metrics/results/. Steps:
# 1. two release builds of the same tree, in the shared target dir (only skiff-server and
#    the binary are rebuilt between them; about 13 min from cold on 2 cores):
#    "off" = `cargo build --release --locked -p skiff --bin skiff --features
#    skiff-server/bench-no-metrics` (every recording call compiled to nothing; /metrics 404),
#    "on" = the default build, plus skiff-bench; both binaries are copied to
#    /tmp/skiff-metrics-bench-bin-<pid>/ (target/release/skiff is left the "on" build).
#    METRICS_ON_BIN, METRICS_OFF_BIN and METRICS_GEN_BIN=PATH measure prebuilt binaries.
# 2. the release micro-benchmark of the recording work of one Produce and one Fetch request
#    (crates/server/src/metrics/cost.rs, an ignored test: ns per request, min and max of 9
#    runs of 200,000), printed as `metrics_cost:` lines;
# 3. bench/metrics/metrics_bench.py (its docstring says what is measured): the broker on
#    core 1, the generator on core 0 (taskset), a fresh broker and data dir per measurement;
#    it ends with the metrics share of the broker's CPU (step 2's ns x this run's requests
#    per MB / CPU per MB) beside the on/off ratios.
# Check `uptime` first: the figures only mean something on a quiet machine.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
log() { echo "== $*" >&2; }

args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) args+=(--records 30000 --passes 1 --rounds 2) ;;
        *) args+=("$1") ;;
    esac
    shift
done

bin_dir="/tmp/skiff-metrics-bench-bin-$$"
mkdir -p "$bin_dir"
trap 'rm -rf "$bin_dir"' EXIT
on="${METRICS_ON_BIN:-}"
off="${METRICS_OFF_BIN:-}"
gen="${METRICS_GEN_BIN:-}"
if [ -z "$off" ]; then
    log "building skiff with metrics compiled out (release)"
    cargo build --release --locked -p skiff --bin skiff --features skiff-server/bench-no-metrics
    cp target/release/skiff "$bin_dir/skiff-off"
    off="$bin_dir/skiff-off"
fi
if [ -z "$on" ] || [ -z "$gen" ]; then
    log "building skiff (metrics on) and skiff-bench (release)"
    cargo build --release --locked -p skiff -p skiff-bench --bin skiff --bin skiff-bench
    cp target/release/skiff "$bin_dir/skiff-on"
    on="${on:-$bin_dir/skiff-on}"
    gen="${gen:-$ROOT/target/release/skiff-bench}"
fi

log "the recording micro-benchmark (release; crates/server/src/metrics/cost.rs)"
cargo test --release --locked -q -p skiff-server --lib metrics::cost::tests::metrics_cost_per_request \
    -- --ignored --nocapture --test-threads 1 | grep '^metrics_cost: ' | tee "$bin_dir/cost.txt" >&2

rev="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
log "metrics on vs off, tree at $rev; on=$on (sha256 $(sha256sum "$on" | cut -c1-16)), off=$off (sha256 $(sha256sum "$off" | cut -c1-16))"
python3 -B "$ROOT/bench/metrics/metrics_bench.py" --on "$on" --off "$off" --gen "$gen" --cost "$bin_dir/cost.txt" "${args[@]}"
