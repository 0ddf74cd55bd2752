//! What a completion says about its writes: happened, did not happen, or unknown.
//!
//! Mental model: only a *definite* failure proves that nothing was appended, and only such a
//! failure makes a later read of the value an aborted read (G1a). The design note (Appendix B)
//! puts the classification in the driver: `fail` only for an allow-list of definite errors,
//! `info` for everything else. The checker trusts `ok`, `info` and unnamed failures, but not a
//! `fail` whose `error` is one of the known *indefinite* ones (timeouts, disconnects,
//! `NOT_LEADER_OR_FOLLOWER`, `UNKNOWN_SERVER_ERROR`, `REQUEST_TIMED_OUT`,
//! `NOT_ENOUGH_REPLICAS_AFTER_APPEND`, librdkafka's `_MSG_TIMED_OUT` / `_TRANSPORT` /
//! `_TIMED_OUT`, an unknown commit outcome): such a completion is downgraded to `info` and
//! counted in the report (`stats.downgraded_failures`), so a driver's misclassification can
//! never produce a false G1a.
//!
//! Invariant: [`Outcome::Pending`] (an invoke that never completed) behaves exactly like
//! `info`.

use crate::history::Type;

/// The outcome of one write (a send micro-op), from its completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// No completion line.
    Pending,
    /// Acknowledged (committed, for a transaction).
    Ok,
    /// Definitely not appended (or, in a transaction, aborted).
    Fail,
    /// Unknown.
    Info,
}

impl Outcome {
    /// The outcome of a completion of type `ty` with `error`; `downgraded` is true when a
    /// `fail` was turned into `info` because its error is indefinite.
    pub fn of(ty: Type, error: Option<&str>) -> (Outcome, bool) {
        match ty {
            Type::Ok => (Outcome::Ok, false),
            Type::Info | Type::Invoke => (Outcome::Info, false),
            Type::Fail => match error {
                Some(e) if is_indefinite(e) => (Outcome::Info, true),
                _ => (Outcome::Fail, false),
            },
        }
    }

    /// `info` or no completion: the write may or may not have happened.
    pub fn indefinite(self) -> bool {
        matches!(self, Outcome::Pending | Outcome::Info)
    }
}

/// Error names (normalised: upper case, leading `_` stripped) that
/// leave the outcome unknown.
const INDEFINITE: [&str; 16] = [
    "REQUEST_TIMED_OUT",
    "NOT_LEADER_OR_FOLLOWER",
    "NOT_LEADER_FOR_PARTITION",
    "UNKNOWN_SERVER_ERROR",
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    "NETWORK_EXCEPTION",
    "MSG_TIMED_OUT",
    "TIMED_OUT",
    "TIMED_OUT_QUEUE",
    "TRANSPORT",
    "ALL_BROKERS_DOWN",
    "TIMEOUT",
    "DISCONNECT",
    "DISCONNECTED",
    "UNKNOWN",
    "UNKNOWN_COMMIT_OUTCOME",
];

/// True when `error` is one of the known indefinite errors (case-insensitive; any name
/// containing `TIMED_OUT`, `TIMEOUT` or `DISCONNECT` counts too).
pub fn is_indefinite(error: &str) -> bool {
    let e = error.trim().to_ascii_uppercase();
    let e = e.trim_start_matches('_');
    INDEFINITE.contains(&e)
        || e.contains("TIMED_OUT")
        || e.contains("TIMEOUT")
        || e.contains("DISCONNECT")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indefinite_errors_are_recognised_and_definite_ones_are_not() {
        for e in [
            "REQUEST_TIMED_OUT",
            "_MSG_TIMED_OUT",
            "_TRANSPORT",
            "timeout",
            "NOT_LEADER_OR_FOLLOWER",
            "UNKNOWN_SERVER_ERROR",
            "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
            "Disconnected",
        ] {
            assert!(is_indefinite(e), "{e}");
        }
        for e in [
            "NOT_ENOUGH_REPLICAS",
            "MESSAGE_TOO_LARGE",
            "CORRUPT_MESSAGE",
            "INVALID_RECORD",
            "UNKNOWN_TOPIC_OR_PARTITION",
            "aborted",
        ] {
            assert!(!is_indefinite(e), "{e}");
        }
    }

    #[test]
    fn a_fail_with_an_indefinite_error_is_downgraded_to_info() {
        assert_eq!(
            Outcome::of(Type::Fail, Some("REQUEST_TIMED_OUT")),
            (Outcome::Info, true)
        );
        assert_eq!(
            Outcome::of(Type::Fail, Some("MESSAGE_TOO_LARGE")),
            (Outcome::Fail, false)
        );
        assert_eq!(Outcome::of(Type::Fail, None), (Outcome::Fail, false));
        assert_eq!(Outcome::of(Type::Info, None), (Outcome::Info, false));
    }
}
