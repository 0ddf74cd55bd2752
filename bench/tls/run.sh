#!/usr/bin/env bash
# TLS and authorization benchmark (issue 19, docs/performance.md "TLS and authorization").
# One command, from anywhere:
#
#   ./bench/tls/run.sh [--quick] [--records N] [--passes N] [--rounds N] [--json FILE]
#
# (full: 1,000,000 records of 1 KiB per measurement, 1 fetch pass per listener, 5 rounds,
# about 5 minutes once built; --quick: 30,000 records, 1 pass, 2 rounds, a smoke run whose
# figures mean nothing). Raw results of the runs in docs/performance.md are in
# bench/tls/results/. Steps:
# 1. installs librdkafka-dev with apt-get if missing (Debian's librdkafka is built with
#    OpenSSL; needs root or sudo);
# 2. builds the load generator: librdkafka's examples/rdkafka_performance.c from the source
#    bench/broker/run.sh builds (rdkafka-sys 4.10.0's bundled librdkafka 2.12.1; the same cargo
#    command, so a cached build costs nothing) compiled against Debian's shared librdkafka
#    (2.0.2, with SSL) into target/tls-bench/. bench/broker's static build has no SSL and
#    skiff-bench (the metrics bench's generator) speaks no TLS, so this one generator serves
#    both listeners. TLS_BENCH_PERF=PATH uses a prebuilt one;
# 3. release-builds skiff (`cargo build --release --locked -p skiff --bin skiff`);
#    TLS_BENCH_SKIFF=PATH measures a prebuilt binary;
# 4. makes a CA and a server certificate with the openssl CLI, ECDSA P-256 keys (PKCS#8),
#    SAN IP:127.0.0.1 + DNS:localhost, in a temp dir deleted at exit (no key is committed);
#    prints the protocol and cipher suite an OpenSSL client negotiates with the broker;
# 5. the ACL check benchmark: the ignored release test crates/auth/src/acl/tests/bench.rs
#    (10,000 ACLs, p50/p99 of one authorize call), its `acl_authorize:` lines and the verdict
#    (p50 < 1 us) are printed;
# 6. bench/tls/tls_bench.py (its docstring says what is measured): one broker with a
#    PLAINTEXT and an SSL listener per round on core 1, the generator on core 0 (taskset),
#    produce and catch-up fetch over both listeners, interleaved.
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

work="$(mktemp -d /tmp/skiff-tls-bench-XXXXXX)"
trap 'rm -rf "$work"' EXIT

# 1. librdkafka with SSL (Debian)
if ! dpkg-query -W -f='${Status}' librdkafka-dev 2>/dev/null | grep -q "install ok installed"; then
    log "apt-get install librdkafka-dev"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -q
    $SUDO apt-get install -y -q librdkafka-dev
fi

# 2. rdkafka_performance against the shared librdkafka
perf="${TLS_BENCH_PERF:-}"
if [ -z "$perf" ]; then
    log "librdkafka example source (bench/broker/rdkafka-build, release)"
    out_dir="$(cargo build --release --locked \
        --manifest-path "$ROOT/bench/broker/rdkafka-build/Cargo.toml" --target-dir "$ROOT/target" \
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
    [ -n "$out_dir" ] && [ -f "$out_dir/examples/rdkafka_performance.c" ] ||
        { echo "no examples/rdkafka_performance.c under '$out_dir'" >&2; exit 1; }
    mkdir -p "$ROOT/target/tls-bench"
    perf="$ROOT/target/tls-bench/rdkafka_performance-ssl"
    (cd "$out_dir/examples" &&
        gcc -O2 -I../src -I.. rdkafka_performance.c -o "$perf" -lrdkafka -lm -lpthread)
fi
perf_conf="$("$perf" -P -t x -X dump 2>/dev/null || true)"
grep -q '^builtin.features = .*ssl' <<<"$perf_conf" ||
    { echo "$perf: its librdkafka has no ssl feature" >&2; exit 1; }

# 3. skiff
skiff="${TLS_BENCH_SKIFF:-}"
if [ -z "$skiff" ]; then
    log "building skiff (release)"
    cargo build --release --locked -p skiff --bin skiff
    cp target/release/skiff "$work/skiff"
    skiff="$work/skiff"
fi

# 4. certificates
certs="$work/certs"
mkdir -p "$certs"
(
    cd "$certs"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj "/CN=skiff-tls-bench-ca" -keyout ca.key -out ca.crt 2>/dev/null
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out server.key 2>/dev/null
    openssl req -new -key server.key -subj "/CN=localhost" -out server.csr 2>/dev/null
    printf '%s\n' "subjectAltName=IP:127.0.0.1,DNS:localhost" "basicConstraints=CA:FALSE" \
        "keyUsage=digitalSignature" "extendedKeyUsage=serverAuth" >server.ext
    openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
        -extfile server.ext -out server.crt 2>/dev/null
    cat server.key server.crt >server.pem
)
log "certificates: ECDSA P-256 (CA + server, SAN IP:127.0.0.1 DNS:localhost)"

# the negotiated TLS parameters, once, from an OpenSSL client (librdkafka uses OpenSSL too)
probe_dir="$work/probe"
mkdir -p "$probe_dir"
"$skiff" serve --override "listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0" \
    --override "log.dirs=$probe_dir" --override ssl.keystore.type=PEM \
    --override "ssl.keystore.location=$certs/server.pem" --override ssl.truststore.type=PEM \
    --override "ssl.truststore.location=$certs/ca.crt" >"$work/probe.out" 2>"$work/probe.err" &
probe_pid=$!
ssl_bind=""
for _ in $(seq 100); do
    ssl_bind="$(sed -n 's/^skiff ready listener=SSL .*bind=\([^ ]*\).*/\1/p' "$work/probe.out")"
    [ -n "$ssl_bind" ] && break
    sleep 0.1
done
if [ -n "$ssl_bind" ]; then
    openssl s_client -connect "$ssl_bind" -CAfile "$certs/ca.crt" -verify_return_error \
        </dev/null 2>/dev/null | grep -E '^(New|Verify return code|Server Temp Key|Peer signature type)' |
        sed 's/^/tls_negotiated: /' || echo "tls_negotiated: the s_client probe failed"
else
    echo "tls_negotiated: the probe broker did not start: $(tail -5 "$work/probe.err")"
fi
kill "$probe_pid" 2>/dev/null || true
wait "$probe_pid" 2>/dev/null || true

# 5. the ACL check benchmark
log "ACL check, 10,000 ACLs (release; crates/auth/src/acl/tests/bench.rs)"
if grep -qs 'fn acl_authorize_cost' crates/auth/src/acl/tests/bench.rs; then
    cargo test --release --locked -q -p skiff-auth --lib acl::tests::bench::acl_authorize_cost \
        -- --ignored --exact --nocapture --test-threads 1 | grep '^acl_authorize' | tee "$work/acl.txt"
    p50="$(sed -n 's/^acl_authorize: kind=all .*p50_ns=\([0-9]*\).*/\1/p' "$work/acl.txt")"
    p99="$(sed -n 's/^acl_authorize: kind=all .*p99_ns=\([0-9]*\).*/\1/p' "$work/acl.txt")"
    if [ -n "$p50" ]; then
        verdict=FAIL
        [ "$p50" -lt 1000 ] && verdict=PASS
        echo "verdict: ACL check p50 < 1 us at 10,000 ACLs: $verdict (p50 ${p50} ns, p99 ${p99} ns; load $(cut -d' ' -f1-3 /proc/loadavg))"
    else
        echo "verdict: ACL check: the benchmark printed no kind=all line"
    fi
else
    echo "verdict: ACL check: crates/auth/src/acl/tests/bench.rs (acl_authorize_cost) is not in this tree"
fi

# 6. TLS vs plaintext
rev="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
log "TLS vs plaintext, tree at $rev (+ working tree); skiff=$skiff (sha256 $(sha256sum "$skiff" | cut -c1-16)); generator $perf ($( ("$perf" 2>&1 || true) | grep -o 'librdkafka version [^ ]*' | head -1))"
python3 -B "$ROOT/bench/tls/tls_bench.py" --skiff "$skiff" --perf "$perf" --certs "$certs" "${args[@]}"
