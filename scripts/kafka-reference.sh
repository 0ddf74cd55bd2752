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
#   scripts/kafka-reference.sh build-client          # javac tests/kafka-ref/client against the
#                                                    # libs: target/kafka-ref/<v>/skiff-java-client.jar
#
# The version is pinned in tests/kafka-ref/pom.xml (`kafka.version`). Maven's own cache (~/.m2)
# persists on a machine, so a warm machine downloads nothing. The JVM is sized for a 2-core
# machine (KAFKA_REF_HEAP, default 512m; one network and two I/O threads, short timers).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
POM="$ROOT/tests/kafka-ref/pom.xml"
VERSION="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$POM")"
LIBS="$ROOT/target/kafka-ref/$VERSION/libs"
HEAP="${KAFKA_REF_HEAP:-512m}"

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

format() {
    local dir="$1" port="${2:-19092}" cport="${3:-19093}"
    fetch
    mkdir -p "$dir/data"
    cat > "$dir/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$dir/data
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
num.network.threads=1
num.io.threads=2
background.threads=2
num.recovery.threads.per.data.dir=1
log.cleaner.threads=1
log.cleaner.dedupe.buffer.size=16777216
EOF
    java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp "$LIBS/*" \
        kafka.tools.StorageTool format --standalone -t "$(java -cp "$LIBS/*" \
        kafka.tools.StorageTool random-uuid 2>/dev/null | tail -1)" \
        -c "$dir/server.properties" >&2
}

start() {
    local dir="$1"
    [ -f "$dir/server.properties" ] || die "$dir is not formatted (run: $0 format $dir)"
    fetch
    local port
    port="$(sed -n 's#^advertised.listeners=PLAINTEXT://127.0.0.1:\([0-9]*\)$#\1#p' "$dir/server.properties")"
    nohup java -Xmx"$HEAP" -Xms128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
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
    classpath) fetch; echo "$LIBS/*" ;;
    run) [ $# -ge 1 ] || die "run CLASS [ARGS...]"; java_run "$@" ;;
    format) [ $# -ge 1 ] || die "format DIR [PORT [CONTROLLER_PORT]]"; format "$@" ;;
    start) [ $# -eq 1 ] || die "start DIR"; start "$1" ;;
    stop) [ $# -eq 1 ] || die "stop DIR"; stop "$1" ;;
    build-client) build_client ;;
    *) sed -n '2,20p' "${BASH_SOURCE[0]}" >&2; exit 2 ;;
esac
