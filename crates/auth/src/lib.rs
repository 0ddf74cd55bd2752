//! Skiff L1: who a connection is and what it may do, as pure code (issue 19).
//!
//! # Mental model
//!
//! - [`principal`]: a [`principal::KafkaPrincipal`] (`User:alice`) is what every request carries;
//!   `User:ANONYMOUS` on a PLAINTEXT or server-only SSL listener, the SASL user after
//!   authentication, or the mapped certificate subject on mutual TLS
//!   (`ssl.principal.mapping.rules`, Kafka's `SslPrincipalMapper`).
//! - [`sasl`]: the server side of SASL PLAIN and SCRAM-SHA-256/512 as state machines (bytes in,
//!   bytes or a principal out), the JAAS text Kafka configures users with, and SCRAM
//!   credentials (salt, iterations, stored key, server key) as the metadata log stores them.
//! - [`acl`]: ACL bindings and the authorizer with Kafka's `StandardAuthorizer` semantics
//!   (deny wins, literal / prefixed / wildcard patterns, implied operations, super users,
//!   `allow.everyone.if.no.acl.found`).
//!
//! Nothing here does I/O or reads a clock; the broker shell owns sockets, files and time.
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod acl;
pub mod principal;
pub mod sasl;
