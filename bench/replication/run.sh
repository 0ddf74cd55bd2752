#!/usr/bin/env bash
# Replication benchmark (issue 17): a 3-node Skiff cluster and a 3-node Apache Kafka cluster on
# localhost in one run. One command, from anywhere:
#
#   ./bench/replication/run.sh [--quick] [--records N] [--runs N] [--catchup-mib MIB]
#                              [--phases produce,latency,catchup] [--json FILE]
#
# (full: 1M records of 1 KiB per produce cell, 3 rounds, 1 GiB catch-up; --quick: a smoke run
# whose figures mean nothing). Steps:
# 1. rdkafka_performance: reuses bench/broker/.cache/bin/rdkafka_performance if present, else
#    builds it exactly as bench/broker/run.sh does (librdkafka from the rdkafka-sys crate's
#    bundled source, bench/broker/rdkafka-build, plus rdkafka_performance-pacing.patch);
# 2. Skiff: `cargo build --release --locked -p skiff --bin skiff` (about 13 min from cold on
#    2 cores), or REPL_SKIFF_BIN=PATH to measure a prebuilt binary;
# 3. Apache Kafka: scripts/kafka-reference.sh fetch (Maven, cached in ~/.m2);
# 4. runs bench/replication/repl_bench.py (its docstring says what is measured). Data dirs go to
#    /tmp/skiff-repl-bench-<pid> and are deleted at the end; the run refuses to start if it would
#    leave less than 10 GB free there.
# Extra arguments go to repl_bench.py (see its --help).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BROKER="$ROOT/bench/broker"
perf="$BROKER/.cache/bin/rdkafka_performance"
cd "$ROOT"
log() { echo "== $*" >&2; }

# 1. rdkafka_performance (the same steps as bench/broker/run.sh step 2)
if [ ! -x "$perf" ]; then
    for pkg in libzstd-dev zlib1g-dev; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
            { echo "missing $pkg: run ./bench/broker/run.sh --quick once, or apt-get install $pkg" >&2; exit 1; }
    done
    log "building librdkafka (rdkafka-sys bundled source, release) and rdkafka_performance"
    out_dir="$(cargo build --release --locked \
        --manifest-path "$BROKER/rdkafka-build/Cargo.toml" --target-dir "$ROOT/target" \
        --message-format=json |
        python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "build-script-executed" and "rdkafka-sys" in m.get("package_id", ""):
        print(m["out_dir"])
')"
    [ -n "$out_dir" ] && [ -f "$out_dir/src/librdkafka.a" ] || { echo "no librdkafka.a under '$out_dir'" >&2; exit 1; }
    (cd "$out_dir/examples" &&
        cp rdkafka_performance.c rdkafka_performance-paced.c &&
        patch -s rdkafka_performance-paced.c "$BROKER/rdkafka_performance-pacing.patch" &&
        gcc -O2 -I../src -I.. rdkafka_performance-paced.c -o rdkafka_performance ../src/librdkafka.a \
            -lm -lzstd -lz -ldl -lpthread -lrt)
    mkdir -p "$(dirname "$perf")"
    cp "$out_dir/examples/rdkafka_performance" "$perf"
fi

# 2. Skiff
skiff="${REPL_SKIFF_BIN:-$ROOT/target/release/skiff}"
if [ -z "${REPL_SKIFF_BIN:-}" ]; then
    log "building skiff (release)"
    cargo build --release --locked -p skiff --bin skiff
fi

# 3. Apache Kafka
log "fetching Apache Kafka (Maven)"
"$ROOT/scripts/kafka-reference.sh" fetch >/dev/null

# 4. the measurements
rev="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
log "3-node Skiff vs 3-node Apache Kafka on localhost"
exec python3 -B "$ROOT/bench/replication/repl_bench.py" \
    --skiff "$skiff" --perf "$perf" \
    --label "skiff=$("$skiff" --version), binary $skiff (sha256 $(sha256sum "$skiff" | cut -c1-16)); tree at $rev" \
    --label "kafka=Apache Kafka $(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$ROOT/tests/kafka-ref/pom.xml") on $(java -version 2>&1 | head -1), $(KAFKA_REF_PROFILE=bench "$ROOT/scripts/kafka-reference.sh" jvm-opts | tr '\n' ' ')" \
    --label "generator=rdkafka_performance ($perf)" \
    "$@"
