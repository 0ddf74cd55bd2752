#!/usr/bin/env bash
# Apache Kafka as the reference (issue 14 item 1): a pinned Apache Kafka fetched with Maven,
# run on this machine's JVM. Nothing is installed by hand and nothing fetched is committed.
#
#   scripts/kafka-reference.sh fetch                 # Maven: jars into target/kafka-ref/<v>/libs
#   scripts/kafka-reference.sh classpath             # prints the classpath (fetches first)
#   scripts/kafka-reference.sh run CLASS [ARGS...]   # runs a Kafka main class (tools)
#   scripts/kafka-reference.sh format DIR [PORT [CONTROLLER_PORT]]
#                                                    # KRaft single node: DIR/server.properties
#                                                    # + `kafka.tools.StorageTool format`
#   scripts/kafka-reference.sh start DIR             # starts the formatted node, waits until
#                                                    # its listener accepts (60 s), pid in DIR
#   scripts/kafka-reference.sh stop DIR              # SIGTERM, waits for the exit
#   scripts/kafka-reference.sh format-cluster DIR PORTS CONTROLLER_PORTS
#                                                    # KRaft cluster, one combined broker +
#                                                    # controller per port (comma-separated,
#                                                    # node ids 1..N, static voters): DIR/node-I
#   scripts/kafka-reference.sh start-cluster DIR     # starts every node (in parallel), waits
#   scripts/kafka-reference.sh stop-cluster DIR      # stops every node
#   scripts/kafka-reference.sh build-client          # javac tests/kafka-ref/client against the
#                                                    # libs: target/kafka-ref/<v>/skiff-java-client.jar
#
# The version is pinned in tests/kafka-ref/pom.xml (`kafka.version`). Maven's own cache (~/.m2)
# persists on a machine, so a warm machine downloads nothing. The JVM is sized for a 2-core
# machine (KAFKA_REF_HEAP, default 512m; one network and two I/O threads, short timers).
#
# KAFKA_REF_PROFILE=bench (the broker benchmark, bench/broker) runs Kafka as shipped instead:
# kafka-server-start.sh's JVM options (G1, MaxGCPauseMillis=20, full JIT, -Xmx1G -Xms1G) and
# the broker's default thread counts and buffers; `jvm-opts` prints the profile's JVM options.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
POM="$ROOT/tests/kafka-ref/pom.xml"
VERSION="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$POM")"
LIBS="$ROOT/target/kafka-ref/$VERSION/libs"
HEAP="${KAFKA_REF_HEAP:-512m}"
PROFILE="${KAFKA_REF_PROFILE:-test}"
case "$PROFILE" in
    test) JVM_OPTS=(-Xmx"$HEAP" -Xms128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1) ;;
    # bin/kafka-run-class.sh's KAFKA_JVM_PERFORMANCE_OPTS and kafka-server-start.sh's heap
    bench) JVM_OPTS=(-Xmx1G -Xms1G -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20
        -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent
        -XX:MaxInlineLevel=15 -Djava.awt.headless=true) ;;
    *) echo "kafka-reference: KAFKA_REF_PROFILE is test or bench, not '$PROFILE'" >&2; exit 2 ;;
esac

die() { echo "kafka-reference: $*" >&2; exit 1; }

fetch() {
    if [ -f "$LIBS/.complete" ]; then return; fi
    command -v mvn >/dev/null || die "mvn not found (apt-get install maven)"
    mkdir -p "$LIBS"
    (cd "$ROOT/tests/kafka-ref" &&
        mvn -q -B dependency:copy-dependencies -DincludeScope=runtime \
            -DoutputDirectory="$LIBS") >&2 || die "Maven could not fetch Apache Kafka $VERSION"
    ls "$LIBS"/kafka_2.13-"$VERSION".jar >/dev/null || die "kafka_2.13-$VERSION.jar missing in $LIBS"
    touch "$LIBS/.complete"
}

java_run() {
    fetch
    exec java -Xmx"$HEAP" -Xms64m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
        -cp "$LIBS/*" "$@"
}

# server.properties for one combined broker+controller node: DIR NODE_ID PORT CPORT VOTERS RF
# (VOTERS empty: a standalone quorum through controller.quorum.bootstrap.servers).
write_props() {
    local dir="$1" id="$2" port="$3" cport="$4" voters="$5" rf="$6" min_isr
    min_isr=$(( rf > 1 ? 2 : 1 ))
    mkdir -p "$dir/data"
    {
        echo "process.roles=broker,controller"
        echo "node.id=$id"
        if [ -n "$voters" ]; then
            echo "controller.quorum.voters=$voters"
        else
            echo "controller.quorum.bootstrap.servers=127.0.0.1:$cport"
        fi
        cat <<EOF
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$dir/data
num.partitions=1
offsets.topic.replication.factor=$rf
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$min_isr
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=$min_isr
group.initial.rebalance.delay.ms=0
EOF
        # the test profile: a 2-core CI machine runs Kafka beside Skiff and the clients
        [ "$PROFILE" = bench ] || cat <<EOF
num.network.threads=1
num.io.threads=2
background.threads=2
num.recovery.threads.per.data.dir=1
log.cleaner.threads=1
log.cleaner.dedupe.buffer.size=16777216
EOF
    } > "$dir/server.properties"
}

# DIR CLUSTER_ID [--standalone]
storage_format() {
    java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp "$LIBS/*" \
        kafka.tools.StorageTool format -t "$2" -c "$1/server.properties" ${3:+"$3"} >&2
}

random_uuid() {
    java -cp "$LIBS/*" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -1
}

format() {
    local dir="$1" port="${2:-19092}" cport="${3:-19093}"
    fetch
    write_props "$dir" 1 "$port" "$cport" "" 1
    storage_format "$dir" "$(random_uuid)" --standalone
}

# DIR PORTS CPORTS (comma-separated, same length): node I in DIR/node-I, static voters
# (controller.quorum.voters), replication factor min(N, 3) for the internal topics.
format_cluster() {
    local dir="$1" ports cports voters="" id cid rf pids=()
    IFS=, read -r -a ports <<< "$2"
    IFS=, read -r -a cports <<< "$3"
    [ "${#ports[@]}" -eq "${#cports[@]}" ] || die "format-cluster: ${#ports[@]} ports, ${#cports[@]} controller ports"
    [ "${#ports[@]}" -ge 1 ] || die "format-cluster: no ports"
    fetch
    for i in "${!ports[@]}"; do
        voters="${voters:+$voters,}$((i + 1))@127.0.0.1:${cports[$i]}"
    done
    rf=$(( ${#ports[@]} < 3 ? ${#ports[@]} : 3 ))
    cid="$(random_uuid)"
    for i in "${!ports[@]}"; do
        id=$((i + 1))
        write_props "$dir/node-$id" "$id" "${ports[$i]}" "${cports[$i]}" "$voters" "$rf"
        storage_format "$dir/node-$id" "$cid" &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || die "format-cluster: StorageTool failed"; done
}

cluster_nodes() {
    ls -d "$1"/node-* 2>/dev/null || die "$1 holds no formatted cluster (run: $0 format-cluster ...)"
}

start_cluster() {
    local n pids=()
    for n in $(cluster_nodes "$1"); do
        start "$n" &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || die "start-cluster: a node did not start"; done
}

stop_cluster() {
    local n pids=()
    for n in $(cluster_nodes "$1"); do
        stop "$n" &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || true; done
}

start() {
    local dir="$1"
    [ -f "$dir/server.properties" ] || die "$dir is not formatted (run: $0 format $dir)"
    fetch
    local port
    port="$(sed -n 's#^advertised.listeners=PLAINTEXT://127.0.0.1:\([0-9]*\)$#\1#p' "$dir/server.properties")"
    nohup java "${JVM_OPTS[@]}" \
        -Dlog4j2.level=WARN -cp "$LIBS/*" kafka.Kafka "$dir/server.properties" \
        > "$dir/kafka.log" 2>&1 &
    echo $! > "$dir/kafka.pid"
    for _ in $(seq 1 600); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "kafka-reference: Apache Kafka $VERSION ready on 127.0.0.1:$port (pid $(cat "$dir/kafka.pid"))" >&2
            return
        fi
        kill -0 "$(cat "$dir/kafka.pid")" 2>/dev/null || { tail -20 "$dir/kafka.log" >&2; die "Kafka exited"; }
        sleep 0.1
    done
    die "Kafka did not accept on $port within 60 s (see $dir/kafka.log)"
}

stop() {
    local dir="$1" pid
    [ -f "$dir/kafka.pid" ] || return 0
    pid="$(cat "$dir/kafka.pid")"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 300); do
        kill -0 "$pid" 2>/dev/null || { rm -f "$dir/kafka.pid"; return; }
        sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$dir/kafka.pid"
}

build_client() {
    fetch
    command -v javac >/dev/null || die "javac not found (apt-get install openjdk-17-jdk-headless)"
    local src="$ROOT/tests/kafka-ref/client" classes="$ROOT/target/kafka-ref/$VERSION/client-classes"
    rm -rf "$classes" && mkdir -p "$classes"
    javac -nowarn -encoding UTF-8 --release 17 -cp "$LIBS/*" -d "$classes" "$src"/*.java >&2 ||
        die "javac failed on $src"
    jar --create --file "$ROOT/target/kafka-ref/$VERSION/skiff-java-client.jar" -C "$classes" . >&2
    echo "$ROOT/target/kafka-ref/$VERSION/skiff-java-client.jar"
}

cmd="${1:-}"
shift || true
case "$cmd" in
    fetch) fetch; echo "$LIBS" ;;
    jvm-opts) printf '%s\n' "${JVM_OPTS[@]}" ;;
    classpath) fetch; echo "$LIBS/*" ;;
    run) [ $# -ge 1 ] || die "run CLASS [ARGS...]"; java_run "$@" ;;
    format) [ $# -ge 1 ] || die "format DIR [PORT [CONTROLLER_PORT]]"; format "$@" ;;
    start) [ $# -eq 1 ] || die "start DIR"; start "$1" ;;
    stop) [ $# -eq 1 ] || die "stop DIR"; stop "$1" ;;
    build-client) build_client ;;
    format-cluster) [ $# -eq 3 ] || die "format-cluster DIR PORTS CONTROLLER_PORTS"; format_cluster "$@" ;;
    start-cluster) [ $# -eq 1 ] || die "start-cluster DIR"; start_cluster "$1" ;;
    stop-cluster) [ $# -eq 1 ] || die "stop-cluster DIR"; stop_cluster "$1" ;;
    *) sed -n '2,30p' "${BASH_SOURCE[0]}" >&2; exit 2 ;;
esac
