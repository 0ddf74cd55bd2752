//! CI guard: the committed generated code must equal what the generator produces now.
//!
//! The generator reads Kafka's JSON definitions from outside the repository
//! (`../shared/kafka-message-specs` beside the development checkout and in CI, or
//! `$SKIFF_MESSAGE_SPECS`). A clone without them skips the comparison and says so on stderr;
//! a `$SKIFF_MESSAGE_SPECS` that names a missing directory fails.

#![allow(clippy::unwrap_used)]

use xtask::codegen::{Outcome, SPECS_ENV, Specs, run_with};

#[test]
fn generated_code_is_up_to_date() {
    let root = xtask::repo_root();
    let specs = Specs::from_env(&root);
    if let Specs::AbsentBeside(p) = &specs {
        eprintln!(
            "SKIPPED: generated-code drift check: no Kafka message definitions at {} (set {SPECS_ENV} to run it)",
            p.display()
        );
        return;
    }
    let outcome = run_with(&specs, &root, true).unwrap();
    assert_eq!(
        outcome,
        Outcome::UpToDate,
        "run `cargo run -p xtask -- codegen`"
    );
}

/// A clone with nothing beside it (issue 12 item 3): the check is skipped with a reason, and
/// generating answers a message naming the variable instead of panicking.
#[test]
fn a_clone_without_the_definitions_skips_the_check_and_codegen_says_what_to_set() {
    let away = tempfile::tempdir().unwrap();
    let root = away.path().join("skiff");
    std::fs::create_dir_all(&root).unwrap();
    let specs = Specs::locate(&root, None);
    assert!(matches!(specs, Specs::AbsentBeside(_)), "{specs:?}");
    let err = run_with(&specs, &root, true).unwrap_err();
    assert!(err.contains(SPECS_ENV), "{err}");
    assert!(err.contains("kafka-message-specs"), "{err}");

    // An explicitly named directory that does not exist is an error, never a skip.
    let named = Specs::locate(&root, Some(away.path().join("nope").into_os_string()));
    assert!(matches!(named, Specs::AbsentNamed(_)), "{named:?}");
    assert!(
        run_with(&named, &root, true)
            .unwrap_err()
            .contains("is not a directory")
    );

    // Beside the checkout, as in CI, they are found.
    let beside = away.path().join("shared/kafka-message-specs");
    std::fs::create_dir_all(&beside).unwrap();
    assert!(matches!(Specs::locate(&root, None), Specs::Found(_)));
}

/// The xtask binary in a clone without definitions: a message and a failing exit, no panic.
#[test]
fn codegen_binary_without_definitions_exits_with_a_message() {
    let away = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["codegen", "--check"])
        .env(SPECS_ENV, away.path().join("missing"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("is not a directory"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
