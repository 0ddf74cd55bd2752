//! CI guard: the committed generated code must equal what the generator produces now.

#![allow(clippy::unwrap_used)]

use xtask::codegen::{Outcome, run};

#[test]
fn generated_code_is_up_to_date() {
    let outcome = run(&xtask::repo_root(), true).unwrap();
    assert_eq!(
        outcome,
        Outcome::UpToDate,
        "run `cargo run -p xtask -- codegen`"
    );
}
