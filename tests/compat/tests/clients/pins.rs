//! The Debian clients the issue names are the ones that actually run: Debian's confluent-kafka
//! under `/usr/bin/python3` and kcat both on librdkafka 2.0.2 (the oldest client the broker
//! must serve; its quirks shape the advertised versions), and PyPI's confluent-kafka on another,
//! newer librdkafka, so the two Python runs really are two clients.

use serde_json::json;
use skiff_compat::{Python, kcat, python};

/// The librdkafka that Debian's packages (python3-confluent-kafka 1.7.0, kcat 1.7.1) ship.
const DEBIAN_LIBRDKAFKA: &str = "2.0.2";

#[test]
fn pins_debian_clients_run_librdkafka_2_0_2() {
    let r = python(Python::Debian, "ck.py", "version", &json!({}));
    assert_eq!(
        r["libversion"],
        json!(DEBIAN_LIBRDKAFKA),
        "/usr/bin/python3 confluent_kafka.libversion(): {r}"
    );
    let out = kcat(&["-V"], b"");
    out.assert_success("kcat -V");
    assert!(
        out.stdout
            .contains(&format!("librdkafka {DEBIAN_LIBRDKAFKA} ")),
        "kcat -V does not say librdkafka {DEBIAN_LIBRDKAFKA}: {}",
        out.stdout
    );
    let r = python(Python::PyPi, "ck.py", "version", &json!({}));
    let pypi = r["libversion"].as_str().unwrap_or_default();
    assert!(
        !pypi.is_empty() && pypi != DEBIAN_LIBRDKAFKA,
        "the venv's confluent-kafka should bundle its own librdkafka: {r}"
    );
}
