//! The Apache Kafka Java client (kafka-clients of the pinned Kafka in `tests/kafka-ref/pom.xml`)
//! as a stock client: `tests/kafka-ref/client/SkiffJavaClient.java`, compiled once by
//! `scripts/kafka-reference.sh build-client` into `target/kafka-ref/<version>/skiff-java-client.jar`.
//!
//! Mental model: like the Python helpers, one call is one JVM running one whole scenario
//! (`SkiffJavaClient COMMAND JSON`) that prints ONE JSON line of facts; [`java_client`] returns
//! it and panics (with the JVM's stderr) on a non-zero exit, a missing result line, or a
//! missing jar (naming the command that builds it). A JVM start costs about a second, so tests
//! keep invocations few.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::clients::{parse_result, repo_root};
use crate::process::run;

const BUILD: &str = "build it with scripts/kafka-reference.sh build-client (./scripts/test.sh \
                     does, after fetching Apache Kafka with Maven; needs a JDK: javac)";

/// One scenario may take this long (a cold JVM, a group join, a few dozen requests).
const JAVA_DEADLINE: Duration = Duration::from_secs(60);

/// The pinned Kafka version (`<kafka.version>` in `tests/kafka-ref/pom.xml`).
fn kafka_version() -> String {
    let pom = repo_root().join("tests/kafka-ref/pom.xml");
    let text = std::fs::read_to_string(&pom)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", pom.display()));
    let open = "<kafka.version>";
    let Some(start) = text.find(open).map(|i| i + open.len()) else {
        panic!("{} has no <kafka.version>", pom.display())
    };
    let Some(len) = text[start..].find('<') else {
        panic!("{} has an unterminated <kafka.version>", pom.display())
    };
    text[start..start + len].trim().to_owned()
}

/// `target/kafka-ref/<version>`: the fetched libs and the helper jar.
fn kafka_ref_dir() -> PathBuf {
    repo_root().join("target/kafka-ref").join(kafka_version())
}

/// Runs `SkiffJavaClient COMMAND PARAMS` and returns its JSON result line.
pub fn java_client(command: &str, params: &Value) -> Value {
    let dir = kafka_ref_dir();
    let jar = dir.join("skiff-java-client.jar");
    assert!(jar.is_file(), "{} not found: {BUILD}", jar.display());
    let libs = dir.join("libs");
    assert!(
        libs.join("kafka-clients-".to_owned() + &kafka_version() + ".jar")
            .is_file(),
        "{} has no kafka-clients jar: run scripts/kafka-reference.sh fetch, then {BUILD}",
        libs.display()
    );
    let classpath = format!("{}/*:{}", libs.display(), jar.display());
    let mut cmd = Command::new("java");
    cmd.args([
        "-Xmx256m",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-cp",
    ])
    .arg(classpath)
    .arg("SkiffJavaClient")
    .arg(command)
    .arg(params.to_string());
    let what = format!("java SkiffJavaClient {command}");
    let out = run(&mut cmd, b"", JAVA_DEADLINE, &what, BUILD);
    parse_result(&out, &what)
}
