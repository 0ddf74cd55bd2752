#!/usr/bin/env bash
# Skiff's one test command: installs what the tests need, builds once, runs every test.
# Used by developers (`./scripts/test.sh`) and by CI (`.ci/run`). Prints per-phase timings.
set -euo pipefail
cd "$(dirname "$0")/.."

phase_start=$(date +%s)
phase() {
  local now; now=$(date +%s)
  if [ -n "${PHASE:-}" ]; then echo "=== phase '${PHASE}' took $((now - phase_start)) s"; fi
  PHASE="$1"; phase_start=$now
  echo "=== phase '${PHASE}' starting at $(date -u +%H:%M:%S)"
}
trap 'rc=$?; [ -n "${PHASE:-}" ] && echo "=== phase ${PHASE} ended (exit ${rc}) after $(( $(date +%s) - phase_start )) s"' EXIT

# Debian packages the build and the client-compatibility tests use. Installed only if missing,
# so a warm machine skips apt entirely.
APT_PACKAGES=(zlib1g-dev libzstd-dev kcat python3-confluent-kafka maven openjdk-17-jdk-headless)

phase "install system packages"
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
command -v cargo-nextest >/dev/null 2>&1 || cargo install --locked cargo-nextest

phase "install client libraries (.venv, npm)"
# PyPI clients pinned in compat/requirements.txt, in ./.venv (Debian's clients stay under /usr/bin/python3).
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -r compat/requirements.txt
# kafkajs, pinned by compat/package-lock.json.
(cd compat && npm ci --no-audit --no-fund --loglevel=error)

phase "install Apache Kafka (Maven, the reference: tests/kafka-ref/pom.xml)"
# Jars into target/kafka-ref/<version>/libs; ~/.m2 keeps them, so a warm machine fetches nothing.
scripts/kafka-reference.sh fetch
# The Java client helper (tests/kafka-ref/client), compiled once against those jars.
scripts/kafka-reference.sh build-client

phase "install franz-go's kgo tests (Go module proxy)"
# franz-go v1.22.3's kgo test binary into target/franz-go (tests/compat/tests/franz_go.rs).
scripts/franz-go-kgo.sh

phase "format check"
cargo fmt --all -- --check

phase "build (debug, all targets)"
# One-shot build: incremental state would only cost disk (GiBs) and time here.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
df -h . | tail -1 | awk '{print "disk before build: " $4 " free of " $2}'
cargo build --workspace --all-targets --locked

phase "tidy (layering, clock, file length, unwrap lints)"
cargo run -q --locked -p xtask -- tidy

phase "clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

phase "tests (cargo nextest)"
# The generated-code drift check needs Kafka's JSON definitions, kept outside the repository.
if [ -n "${SKIFF_MESSAGE_SPECS:-}" ]; then
  echo "generated-code drift check: runs against SKIFF_MESSAGE_SPECS=${SKIFF_MESSAGE_SPECS}"
elif [ -d ../shared/kafka-message-specs ]; then
  echo "generated-code drift check: runs against ../shared/kafka-message-specs"
else
  echo "SKIPPED: generated-code drift check (no ../shared/kafka-message-specs beside this clone; set SKIFF_MESSAGE_SPECS to run it)"
fi
rc=0
cargo nextest run --workspace --locked --no-fail-fast || rc=$?
df -h . | tail -1 | awk '{print "disk after tests: " $4 " free of " $2}'
du -sh target 2>/dev/null | awk '{print "target/: " $1}'
[ "$rc" -eq 0 ] || exit "$rc"

phase "done"
