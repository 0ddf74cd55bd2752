//! `cargo run -p xtask -- codegen [--check]` and `cargo run -p xtask -- tidy`: see the library
//! docs. `cargo run -p xtask -- chaos ...`: the long fault-scenario run ([`chaos`]).
//! `cargo run -p xtask -- config-reference [--check]`: `docs/configuration.md`
//! ([`config_reference`]).

mod chaos;
mod config_reference;

use std::process::ExitCode;

use xtask::codegen::{Outcome, run};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (task, rest) = match args.split_first() {
        Some((t, r)) => (t.as_str(), r),
        None => ("", &[][..]),
    };
    match (task, rest) {
        ("codegen", []) | ("codegen", [_]) if rest.iter().all(|a| a == "--check") => {
            let check = !rest.is_empty();
            match run(&xtask::repo_root(), check) {
                Ok(Outcome::Written(n)) => {
                    println!("codegen: wrote {n} files");
                    ExitCode::SUCCESS
                }
                Ok(Outcome::UpToDate) => {
                    println!("codegen --check: generated code is up to date");
                    ExitCode::SUCCESS
                }
                Ok(Outcome::Drift(files)) => {
                    eprintln!(
                        "codegen --check: generated code differs; run `cargo run -p xtask -- codegen`:"
                    );
                    for f in files {
                        eprintln!("  {f}");
                    }
                    ExitCode::FAILURE
                }
                Err(e) => {
                    eprintln!("codegen: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        ("tidy", []) => match xtask::tidy::run(&xtask::repo_root()) {
            Ok(violations) if violations.is_empty() => {
                println!("tidy: clean");
                ExitCode::SUCCESS
            }
            Ok(violations) => {
                for v in &violations {
                    println!("{v}");
                }
                eprintln!("tidy: {} violation(s)", violations.len());
                ExitCode::FAILURE
            }
            Err(e) => {
                eprintln!("tidy: cannot read the tree: {e}");
                ExitCode::FAILURE
            }
        },
        ("chaos", rest) => match chaos::plan(rest) {
            Ok(plan) => match chaos::run(&xtask::repo_root(), &plan) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("chaos: {e}");
                    ExitCode::FAILURE
                }
            },
            Err(e) => {
                eprintln!("chaos: {e}\n{}", chaos::USAGE);
                ExitCode::from(2)
            }
        },
        ("config-reference", []) | ("config-reference", [_])
            if rest.iter().all(|a| a == "--check") =>
        {
            match config_reference::run(&xtask::repo_root(), !rest.is_empty()) {
                Ok(config_reference::Outcome::Written) => {
                    println!(
                        "config-reference: wrote {}",
                        config_reference::REFERENCE_PATH
                    );
                    ExitCode::SUCCESS
                }
                Ok(config_reference::Outcome::UpToDate) => {
                    println!(
                        "config-reference: {} is up to date",
                        config_reference::REFERENCE_PATH
                    );
                    ExitCode::SUCCESS
                }
                Ok(config_reference::Outcome::Drift) => {
                    eprintln!(
                        "config-reference --check: {} differs; run `cargo run -p xtask -- config-reference`",
                        config_reference::REFERENCE_PATH
                    );
                    ExitCode::FAILURE
                }
                Err(e) => {
                    eprintln!("config-reference: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        _ => {
            eprintln!(
                "usage: cargo run -p xtask -- codegen [--check] | tidy | chaos [...] | config-reference [--check]"
            );
            ExitCode::from(2)
        }
    }
}
