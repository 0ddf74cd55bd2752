//! `cargo run -p xtask -- chaos [--scenario F1|F2|F4|F5|F13|all] [--seconds N] [--keep]`: the
//! long opt-in run of the fault scenarios (issue 17; `tests/compat/tests/chaos.rs`).
//!
//! Mental model: the scenarios are ordinary nextest tests whose fault window is short in CI;
//! this task builds the broker, then runs the chosen scenario's tests through
//! `cargo nextest run -p skiff-compat --test chaos --profile chaos --no-capture --run-ignored
//! all -E <filter>` with `SKIFF_CHAOS_SECONDS=N` (the fault window) and, with `--keep`,
//! `SKIFF_CHAOS_KEEP=1` (keep the history and the nodes' logs even when the run passes). The
//! `chaos` profile of `.config/nextest.toml` gives each test up to 30 minutes. Tests marked
//! `#[ignore = "bug: ..."]` (known broker bugs) run too: the long run is where they are
//! studied. [`plan`] is pure: arguments in, the commands out.

use std::process::Command;

/// The scenarios and their test-name prefixes (every test of a scenario starts with it).
pub const SCENARIOS: &[(&str, &str)] = &[
    ("F1", "chaos_f1_"),
    ("F2", "chaos_f2_"),
    ("F4", "chaos_f4_"),
    ("F5", "chaos_f5_"),
    ("F13", "chaos_f13_"),
];

/// The default fault window of the long run, in seconds.
pub const DEFAULT_SECONDS: u64 = 120;

pub const USAGE: &str =
    "usage: cargo run -p xtask -- chaos [--scenario F1|F2|F4|F5|F13|all] [--seconds N] [--keep]";

/// What to run.
#[derive(Debug, PartialEq, Eq)]
pub struct Plan {
    /// The nextest filterset expression.
    pub filter: String,
    pub seconds: u64,
    pub keep: bool,
}

/// Parses the task's arguments (after `chaos`).
pub fn plan(args: &[String]) -> Result<Plan, String> {
    let mut scenario = "all".to_string();
    let mut seconds = DEFAULT_SECONDS;
    let mut keep = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--scenario" => {
                scenario = it.next().ok_or("--scenario needs a value")?.clone();
            }
            "--seconds" => {
                let v = it.next().ok_or("--seconds needs a value")?;
                seconds = v
                    .parse()
                    .map_err(|_| format!("--seconds {v:?}: not a whole number of seconds"))?;
            }
            "--keep" => keep = true,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let prefixes: Vec<&str> = if scenario.eq_ignore_ascii_case("all") {
        SCENARIOS.iter().map(|(_, p)| *p).collect()
    } else {
        let found = SCENARIOS
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(&scenario))
            .map(|(_, p)| *p);
        vec![found.ok_or_else(|| {
            let names: Vec<&str> = SCENARIOS.iter().map(|(n, _)| *n).collect();
            format!(
                "unknown scenario {scenario:?} (one of {}, all)",
                names.join(", ")
            )
        })?]
    };
    let filter = prefixes
        .iter()
        .map(|p| format!("test(/^{p}/)"))
        .collect::<Vec<_>>()
        .join(" | ");
    Ok(Plan {
        filter,
        seconds,
        keep,
    })
}

/// The two commands: build the broker, then run the tests.
pub fn commands(p: &Plan) -> [Command; 2] {
    let mut build = Command::new("cargo");
    build.args(["build", "-p", "skiff"]);
    let mut test = Command::new("cargo");
    test.args([
        "nextest",
        "run",
        "-p",
        "skiff-compat",
        "--test",
        "chaos",
        "--profile",
        "chaos",
        "--no-capture",
        "--run-ignored",
        "all",
        "-E",
        &p.filter,
    ])
    .env("SKIFF_CHAOS_SECONDS", p.seconds.to_string());
    if p.keep {
        test.env("SKIFF_CHAOS_KEEP", "1");
    }
    [build, test]
}

/// Runs the plan from `root`; `Err` names what failed.
pub fn run(root: &std::path::Path, p: &Plan) -> Result<(), String> {
    for mut cmd in commands(p) {
        cmd.current_dir(root);
        eprintln!("chaos: {cmd:?}");
        let status = cmd
            .status()
            .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
        if !status.success() {
            return Err(format!("{cmd:?} failed ({status})"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn one_scenario_all_and_defaults() {
        let p = plan(&args(&["--scenario", "F1", "--seconds", "300"])).unwrap();
        assert_eq!(
            p,
            Plan {
                filter: "test(/^chaos_f1_/)".into(),
                seconds: 300,
                keep: false
            }
        );
        let p = plan(&args(&["--scenario", "f13", "--keep"])).unwrap();
        assert_eq!(p.filter, "test(/^chaos_f13_/)");
        assert_eq!((p.seconds, p.keep), (DEFAULT_SECONDS, true));
        let all = plan(&[]).unwrap();
        assert_eq!(all.filter.matches("test(").count(), SCENARIOS.len());
    }

    #[test]
    fn refusals() {
        assert!(plan(&args(&["--scenario", "F3"])).is_err());
        assert!(plan(&args(&["--seconds", "two"])).is_err());
        assert!(plan(&args(&["--seconds"])).is_err());
        assert!(plan(&args(&["--fast"])).is_err());
    }

    #[test]
    fn the_test_command_carries_the_window_and_the_profile() {
        let p = plan(&args(&["--scenario", "F2", "--seconds", "60", "--keep"])).unwrap();
        let [_, test] = commands(&p);
        let a: Vec<String> = test
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert!(a.windows(2).any(|w| w == ["--profile", "chaos"]), "{a:?}");
        assert!(a.windows(2).any(|w| w == ["--run-ignored", "all"]), "{a:?}");
        assert_eq!(a.last().map(String::as_str), Some("test(/^chaos_f2_/)"));
        let envs: Vec<(String, String)> = test
            .get_envs()
            .filter_map(|(k, v)| Some((k.to_str()?.into(), v?.to_str()?.into())))
            .collect();
        assert!(envs.contains(&("SKIFF_CHAOS_SECONDS".into(), "60".into())));
        assert!(envs.contains(&("SKIFF_CHAOS_KEEP".into(), "1".into())));
    }
}
