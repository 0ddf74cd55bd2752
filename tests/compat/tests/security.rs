//! Security with stock clients (issue 19): TLS (server-only and mutual), SASL PLAIN and
//! SCRAM-SHA-256/512, ACLs, against the `skiff` binary over TCP.
//!
//! - [`tls`]: kcat, confluent-kafka (Debian and PyPI) and kafka-python over `SSL` with the CA
//!   trusted; an untrusted CA fails; `ssl.client.auth=required` with and without a client
//!   certificate, the certificate's CN mapped by `ssl.principal.mapping.rules` to the ACL
//!   principal; plaintext Kafka bytes on the TLS port and a ClientHello on the plaintext port
//!   are closed and the broker keeps serving.
//! - [`sasl`]: `SASL_PLAINTEXT` PLAIN (right password works, wrong one is
//!   SASL_AUTHENTICATION_FAILED and the connection closes), an unknown mechanism is
//!   UNSUPPORTED_SASL_MECHANISM with the enabled list, nothing but ApiVersions / SaslHandshake
//!   is served before authentication (raw frames for what clients hide).
//! - [`scram`]: `SASL_SSL` SCRAM users created, described and deleted with confluent-kafka's
//!   AdminClient, used to log in, kept across restarts.
//! - [`acls`]: ACLs through confluent-kafka's AdminClient and their effect on consumers,
//!   Metadata, offset commits, prefixed / deny / super-user rules and open connections.
//!
//! Mental model: every test starts its own broker ([`common::Setup`]) with certificates
//! generated in a temp dir (never committed) and explicit ports per listener; client scripts:
//! `tests/compat/py/security_ck.py` (librdkafka properties) and `security_kp.py`
//! (kafka-python keyword arguments); kcat gets the librdkafka properties as `-X` flags. Each
//! test prints per-phase timings and finishes well under 60 s.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "security/acls.rs"]
mod acls;
#[path = "security/common.rs"]
mod common;
#[path = "security/raw.rs"]
mod raw;
#[path = "security/reauth.rs"]
mod reauth;
#[path = "security/sasl.rs"]
mod sasl;
#[path = "security/scram.rs"]
mod scram;
#[path = "security/tls.rs"]
mod tls;
