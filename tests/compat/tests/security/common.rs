//! Shared setup of the security tests: a broker with TLS / SASL listeners and a throwaway
//! PKI, and the client configurations (librdkafka properties, kafka-python keyword
//! arguments, kcat `-X` flags) that reach it.
//!
//! Mental model: [`Secure`] owns one broker and the temp dir of its certificates (generated
//! per test by `skiff_testkit::certs::TestPki`, never committed). Every listener gets an
//! explicit free port up front, so each listener's address is known without parsing the
//! ready lines and a restart binds the same ports; listener names equal their protocol names
//! (`SSL`, `SASL_SSL`, ...), which Kafka's default `listener.security.protocol.map` maps to
//! themselves. A client configuration is a JSON object: the librdkafka one goes to
//! `security_ck.py` and, as `-X k=v` flags, to kcat; the kafka-python one to `security_kp.py`.

use std::collections::BTreeMap;
use std::time::Instant;

use serde_json::{Map, Value, json};
use skiff_compat::{Broker, Output, Python, kcat, python};
use skiff_testkit::certs::{LeafCert, TestPki};
use skiff_testkit::process::free_port;
use tempfile::TempDir;

/// Kafka's KRaft authorizer.
pub const STANDARD_AUTHORIZER: &str = "org.apache.kafka.metadata.authorizer.StandardAuthorizer";

/// The PLAIN users of every SASL broker here (`user_<name>="<password>"`), and the broker's
/// own login (`username` / `password`: the super user `admin`), which Kafka needs on a node
/// whose only listeners are SASL ones (the node connects to itself as a client).
pub const PLAIN_JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
     username=\"admin\" password=\"admin-secret\" \
     user_admin=\"admin-secret\" user_alice=\"alice-secret\" user_bob=\"bob-secret\";";

/// Kafka error codes the raw-protocol checks compare.
pub const TOPIC_AUTHORIZATION_FAILED: i16 = 29;
pub const UNSUPPORTED_SASL_MECHANISM: i16 = 33;
pub const SASL_AUTHENTICATION_FAILED: i16 = 58;

/// Prints the time since `t0` and what was just checked (the compat tests' phase log).
pub fn phase(t0: Instant, what: &str) {
    eprintln!("[{:>6.2}s] {what}", t0.elapsed().as_secs_f64());
}

/// One broker's security settings, before start.
pub struct Setup {
    /// Listener names = protocols, in order.
    pub listeners: Vec<&'static str>,
    /// `ssl.client.auth`.
    pub client_auth: &'static str,
    /// `sasl.enabled.mechanisms`.
    pub mechanisms: &'static str,
    /// StandardAuthorizer with `super.users=User:admin`, no ACL = deny.
    pub acls: bool,
    /// More broker settings.
    pub extra: Vec<(&'static str, &'static str)>,
    /// Bind the admin port (`/metrics`).
    pub admin: bool,
}

impl Setup {
    pub fn new(listeners: &[&'static str]) -> Setup {
        Setup {
            listeners: listeners.to_vec(),
            client_auth: "none",
            mechanisms: "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            acls: false,
            extra: Vec::new(),
            admin: false,
        }
    }

    /// Another broker setting.
    pub fn set(mut self, key: &'static str, value: &'static str) -> Setup {
        self.extra.push((key, value));
        self
    }

    /// Binds the admin port.
    pub fn admin(mut self) -> Setup {
        self.admin = true;
        self
    }

    pub fn client_auth(mut self, v: &'static str) -> Setup {
        self.client_auth = v;
        self
    }

    pub fn mechanisms(mut self, v: &'static str) -> Setup {
        self.mechanisms = v;
        self
    }

    pub fn acls(mut self) -> Setup {
        self.acls = true;
        self
    }

    /// Generates the PKI and starts the broker.
    pub fn start(self) -> Secure {
        let certs = tempfile::Builder::new()
            .prefix("skiff-security-")
            .tempdir()
            .expect("temp dir for the test PKI");
        let pki = TestPki::generate(certs.path());
        let ports: BTreeMap<&'static str, u16> =
            self.listeners.iter().map(|l| (*l, free_port())).collect();
        let listeners: Vec<String> = self
            .listeners
            .iter()
            .map(|l| format!("{l}://127.0.0.1:{}", ports[l]))
            .collect();
        let mut b = Broker::builder()
            .one_at_a_time(true)
            .rust_log(&std::env::var("SKIFF_COMPAT_LOG").unwrap_or_else(|_| "info".to_owned()))
            .set("listeners", &listeners.join(","));
        if self.listeners.iter().any(|l| l.contains("SSL")) {
            b = b
                .set("ssl.keystore.type", "PEM")
                .set("ssl.keystore.location", &path(&pki.server.pem))
                .set("ssl.truststore.type", "PEM")
                .set("ssl.truststore.location", &path(&pki.ca_crt))
                .set("ssl.client.auth", self.client_auth)
                .set(
                    "ssl.principal.mapping.rules",
                    "RULE:^CN=([^,]+).*$/$1/,DEFAULT",
                );
        }
        let sasl: Vec<&&str> = self
            .listeners
            .iter()
            .filter(|l| l.starts_with("SASL"))
            .collect();
        if !sasl.is_empty() {
            b = b
                .set("sasl.enabled.mechanisms", self.mechanisms)
                .set("sasl.mechanism.inter.broker.protocol", "PLAIN");
            for l in sasl {
                b = b.set(
                    &format!("listener.name.{}.plain.sasl.jaas.config", l.to_lowercase()),
                    PLAIN_JAAS,
                );
            }
        }
        if self.acls {
            b = b
                .set("authorizer.class.name", STANDARD_AUTHORIZER)
                .set("super.users", "User:admin")
                .set("allow.everyone.if.no.acl.found", "false");
        }
        for (k, v) in &self.extra {
            b = b.set(k, v);
        }
        let broker = b.admin(self.admin).start();
        Secure {
            broker,
            pki,
            ports,
            certs,
        }
    }
}

fn path(p: &std::path::Path) -> String {
    p.display().to_string()
}

/// A running broker with security on, and its certificates.
pub struct Secure {
    // Declared first: the broker process stops before its certificate files go.
    pub broker: Broker,
    pub pki: TestPki,
    pub ports: BTreeMap<&'static str, u16>,
    pub certs: TempDir,
}

impl Secure {
    /// `127.0.0.1:PORT` of `listener`.
    pub fn addr(&self, listener: &str) -> String {
        format!("127.0.0.1:{}", self.port(listener))
    }

    pub fn port(&self, listener: &str) -> u16 {
        *self
            .ports
            .get(listener)
            .unwrap_or_else(|| panic!("no {listener} listener"))
    }

    /// A client certificate `CN=<cn>,OU=eng,O=acme,C=US` signed by the broker's CA.
    pub fn client_cert(&self, cn: &str) -> LeafCert {
        self.pki.client_cert(cn, self.certs.path())
    }

    /// librdkafka properties for `protocol`: the CA trusted, `cert` as the client
    /// certificate, SASL `mechanism` with `user` / `password` (the password `<user>-secret`
    /// when `password` is None).
    pub fn rd(
        &self,
        protocol: &str,
        sasl: Option<(&str, &str, &str)>,
        cert: Option<&LeafCert>,
    ) -> Value {
        let mut c = Map::new();
        c.insert("security.protocol".into(), json!(protocol));
        if protocol.contains("SSL") {
            c.insert("ssl.ca.location".into(), json!(path(&self.pki.ca_crt)));
        }
        if let Some(cert) = cert {
            c.insert("ssl.certificate.location".into(), json!(path(&cert.crt)));
            c.insert("ssl.key.location".into(), json!(path(&cert.key)));
        }
        if let Some((mechanism, user, password)) = sasl {
            c.insert("sasl.mechanism".into(), json!(mechanism));
            c.insert("sasl.username".into(), json!(user));
            c.insert("sasl.password".into(), json!(password));
        }
        Value::Object(c)
    }

    /// kafka-python keyword arguments, as [`Secure::rd`].
    pub fn kp(
        &self,
        protocol: &str,
        sasl: Option<(&str, &str, &str)>,
        cert: Option<&LeafCert>,
    ) -> Value {
        let mut c = Map::new();
        c.insert("security_protocol".into(), json!(protocol));
        if protocol.contains("SSL") {
            c.insert("ssl_cafile".into(), json!(path(&self.pki.ca_crt)));
            c.insert("ssl_check_hostname".into(), json!(true));
        }
        if let Some(cert) = cert {
            c.insert("ssl_certfile".into(), json!(path(&cert.crt)));
            c.insert("ssl_keyfile".into(), json!(path(&cert.key)));
        }
        if let Some((mechanism, user, password)) = sasl {
            c.insert("sasl_mechanism".into(), json!(mechanism));
            c.insert("sasl_plain_username".into(), json!(user));
            c.insert("sasl_plain_password".into(), json!(password));
        }
        Value::Object(c)
    }
}

/// `config` with `key` replaced (or removed with Null).
pub fn with(config: &Value, key: &str, value: Value) -> Value {
    let mut c = config.clone();
    if let Some(m) = c.as_object_mut() {
        if value.is_null() {
            m.remove(key);
        } else {
            m.insert(key.to_owned(), value);
        }
    }
    c
}

/// Runs `security_ck.py COMMAND` under `py` against `bootstrap` with librdkafka `config`.
pub fn ck(py: Python, command: &str, bootstrap: &str, config: &Value, mut params: Value) -> Value {
    params["bootstrap"] = json!(bootstrap);
    params["config"] = config.clone();
    python(py, "security_ck.py", command, &params)
}

/// Runs `security_kp.py COMMAND` against `bootstrap` with kafka-python `config`.
pub fn kp(command: &str, bootstrap: &str, config: &Value, mut params: Value) -> Value {
    params["bootstrap"] = json!(bootstrap);
    params["config"] = config.clone();
    python(Python::PyPi, "security_kp.py", command, &params)
}

/// kcat's `-b` and `-X` flags for a librdkafka `config`.
fn kcat_flags(bootstrap: &str, config: &Value) -> Vec<String> {
    let mut args = vec!["-b".to_owned(), bootstrap.to_owned()];
    if let Some(m) = config.as_object() {
        for (k, v) in m {
            let v = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
            args.push("-X".to_owned());
            args.push(format!("{k}={v}"));
        }
    }
    args
}

/// `kcat -L` (metadata, 5 s timeout) with `config`.
pub fn kcat_list(bootstrap: &str, config: &Value) -> Output {
    let mut args = kcat_flags(bootstrap, config);
    args.extend(["-L", "-m", "5"].map(str::to_owned));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    kcat(&args, b"")
}

/// Produces `values` (one per line) to partition 0 of `topic` with kcat and reads the
/// partition back from the beginning; panics unless both succeed, returns what was read.
pub fn kcat_roundtrip(
    bootstrap: &str,
    config: &Value,
    topic: &str,
    values: &[&str],
) -> Vec<String> {
    let flags = kcat_flags(bootstrap, config);
    let mut args: Vec<&str> = flags.iter().map(String::as_str).collect();
    args.extend(["-P", "-t", topic, "-p", "0"]);
    let input = values.iter().map(|v| format!("{v}\n")).collect::<String>();
    kcat(&args, input.as_bytes()).assert_success("kcat produce");
    let mut args: Vec<&str> = flags.iter().map(String::as_str).collect();
    args.extend(["-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q"]);
    let out = kcat(&args, b"");
    out.assert_success("kcat consume");
    out.stdout.lines().map(str::to_owned).collect()
}

/// Asserts a `security_ck.py roundtrip` result: every report clean, `values` read back.
pub fn assert_ck_roundtrip(r: &Value, values: &[&str], what: &str) {
    let reports = r["reports"]
        .as_array()
        .unwrap_or_else(|| panic!("{what}: {r}"));
    assert!(
        reports.iter().all(Value::is_null) && reports.len() == values.len(),
        "{what}: delivery reports {r}"
    );
    assert_eq!(r["values"], json!(values), "{what}: values read back: {r}");
    assert_eq!(r["consume_errors"], json!([]), "{what}: {r}");
}

/// Asserts a `security_kp.py roundtrip` result.
pub fn assert_kp_roundtrip(r: &Value, values: &[&str], what: &str) {
    assert_eq!(r["exception"], Value::Null, "{what}: {r}");
    let clean = values.iter().map(|_| Value::Null).collect::<Vec<_>>();
    assert_eq!(r["reports"], json!(clean), "{what}: {r}");
    assert_eq!(r["values"], json!(values), "{what}: {r}");
}

/// The librdkafka error_cb texts of a result, joined (for `contains` checks).
pub fn cb_text(r: &Value) -> String {
    r["cb_errors"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| {
                    format!(
                        "{} {}",
                        e["name"].as_str().unwrap_or(""),
                        e["str"].as_str().unwrap_or("")
                    )
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// kafka-python's failure text of a probe: the exception and the collected log lines.
pub fn kp_text(r: &Value) -> String {
    format!("{} {}", r["exception"], r["logs"])
}

/// Asserts kafka-python's login was refused: `ok` false and its log names `class` (the
/// broker's error code as kafka-python's exception) or, when the broker's close arrived in the
/// same read as the response, only the disconnect: kafka-python 3.0.12 then drops the buffered
/// response (a client race, seen against a broker that answers and closes at once as Kafka
/// does; the error code itself is asserted on raw frames and through librdkafka).
pub fn assert_kp_refused(r: &Value, class: &str, what: &str) {
    assert_eq!(r["ok"], json!(false), "{what}: {r}");
    let text = kp_text(r);
    assert!(
        text.contains(class) || text.contains("socket disconnected"),
        "{what}: kafka-python saw neither {class} nor the close: {r}"
    );
    eprintln!(
        "{what}: kafka-python {}",
        if text.contains(class) {
            class
        } else {
            "saw only the close (response dropped)"
        }
    );
}
