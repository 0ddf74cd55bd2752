#!/usr/bin/env bash
# Transactions benchmark (issue 18): transactional produce against idempotent produce and
# against its measured round-trip limit (idempotent produce drained every 100 or 1,000 records,
# then 2 no-op round trips), and read_committed against read_uncommitted fetch CPU, for Skiff
# and Apache Kafka in one run.
# One command, from anywhere:
#
#   ./bench/transactions/run.sh [--quick] [--records N] [--rounds N] [--passes N] [--json FILE]
#
# (full: 400,000 records of 1 KiB per produce cell and per fetch topic, 5 rounds, 5 passes per
# fetch cell; --quick: a smoke run whose figures mean nothing). Steps:
# 1. Skiff and the generator: `cargo build --release --locked -p skiff -p skiff-bench --bin skiff
#    --bin skiff-bench` (about 13 min from cold on 2 cores), or TXN_SKIFF_BIN=PATH and
#    TXN_GEN_BIN=PATH to measure prebuilt binaries;
# 2. Apache Kafka: scripts/kafka-reference.sh fetch (Maven, cached in ~/.m2);
# 3. runs bench/transactions/txn_bench.py (its docstring says what is measured). The brokers are
#    pinned to core 1, the generator to core 0 (taskset); data dirs go to
#    /tmp/skiff-txn-bench-<pid> and are deleted at the end. Check `uptime` first: the figures
#    are only meaningful on a quiet machine.
# Extra arguments go to txn_bench.py (see its --help).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
log() { echo "== $*" >&2; }

# 1. Skiff and skiff-bench
skiff="${TXN_SKIFF_BIN:-$ROOT/target/release/skiff}"
gen="${TXN_GEN_BIN:-$ROOT/target/release/skiff-bench}"
if [ -z "${TXN_SKIFF_BIN:-}" ] || [ -z "${TXN_GEN_BIN:-}" ]; then
    log "building skiff and skiff-bench (release)"
    cargo build --release --locked -p skiff -p skiff-bench --bin skiff --bin skiff-bench
fi

# 2. Apache Kafka
log "fetching Apache Kafka (Maven)"
"$ROOT/scripts/kafka-reference.sh" fetch >/dev/null

# 3. the measurements
rev="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
log "Skiff vs Apache Kafka, single node each, transactions"
exec python3 -B "$ROOT/bench/transactions/txn_bench.py" \
    --skiff "$skiff" --gen "$gen" \
    --label "skiff=$("$skiff" --version), binary $skiff (sha256 $(sha256sum "$skiff" | cut -c1-16)); tree at $rev" \
    --label "generator=$gen (sha256 $(sha256sum "$gen" | cut -c1-16))" \
    --label "kafka=Apache Kafka $(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$ROOT/tests/kafka-ref/pom.xml") on $(java -version 2>&1 | head -1), $(KAFKA_REF_PROFILE=bench "$ROOT/scripts/kafka-reference.sh" jvm-opts | tr '\n' ' ')" \
    "$@"
