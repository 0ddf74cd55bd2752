//! SASL (issue 19): SCRAM credentials ([`credential`]); the mechanisms' server side is
//! filled by the SASL work.

pub mod credential;

pub use credential::{ScramCredential, ScramMechanism};
