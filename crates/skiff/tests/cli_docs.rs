//! The CLI's generated artefacts build from the clap definitions (issue 20 item 2): a completion
//! script per shell that names the client commands, and a man page per (sub)command.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

fn skiff(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_skiff"))
        .args(args)
        .output()
        .expect("run skiff")
}

#[test]
fn completions_name_the_client_commands() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = skiff(&["completion", shell]);
        assert!(out.status.success(), "{shell}: {out:?}");
        let script = String::from_utf8(out.stdout).unwrap();
        for cmd in [
            "topic", "produce", "consume", "group", "cluster", "config", "doctor",
        ] {
            assert!(script.contains(cmd), "{shell} completion lacks {cmd}");
        }
        assert!(
            script.contains("brokers"),
            "{shell} completion lacks --brokers"
        );
    }
    let bad = skiff(&["completion", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
}

#[test]
fn man_pages_cover_every_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let out = skiff(&["man", "--out", dir.path().to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for want in [
        "skiff.1",
        "skiff-serve.1",
        "skiff-topic.1",
        "skiff-topic-create.1",
        "skiff-consume.1",
        "skiff-group-describe.1",
        "skiff-cluster-health.1",
    ] {
        assert!(names.iter().any(|n| n == want), "no {want} in {names:?}");
    }
    assert!(!names.iter().any(|n| n.contains("-help")), "{names:?}");
    let page = std::fs::read_to_string(dir.path().join("skiff-topic-create.1")).unwrap();
    assert!(page.starts_with(".ie") || page.contains(".TH"), "{page}");
    assert!(page.contains("partitions"), "{page}");
}
