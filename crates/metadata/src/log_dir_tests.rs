//! Tests of the log-dir format rule (`decide`) and its I/O shells.

use super::*;

/// Files to create in a log dir: (path inside it, body).
type Files = &'static [(&'static str, &'static [u8])];

/// One decision case: (name, meta.properties, data found, expected id, decision or needle).
type DecideCase = (
    &'static str,
    MetaState,
    Option<&'static str>,
    Option<&'static str>,
    Result<Decision, &'static str>,
);

#[test]
fn format_log_dir_table() {
    let tmp = tempfile::tempdir().unwrap();
    let fresh = tmp.path().join("fresh");
    // Missing dir: created and formatted; formatting again is a no-op.
    format_log_dir(&fresh, "abc", 3, false).unwrap();
    let text = std::fs::read_to_string(fresh.join(META_PROPERTIES)).unwrap();
    assert!(
        text.contains("cluster.id=abc\n") && text.contains("node.id=3\n"),
        "{text}"
    );
    assert!(
        text.contains("version=1\n") && text.contains("directory.id="),
        "{text}"
    );
    format_log_dir(&fresh, "abc", 3, false).unwrap();
    assert_eq!(
        std::fs::read_to_string(fresh.join(META_PROPERTIES)).unwrap(),
        text
    );
    // (existing meta.properties, outcome)
    let cases: [(&str, Result<(), &str>); 4] = [
        ("version=1\ncluster.id=abc\n", Ok(())),
        ("#cluster.id=x\ncluster.id = abc\n", Ok(())),
        ("version=1\ncluster.id=other\n", Err("cluster.id=other")),
        ("version=1\n", Err("no cluster.id")),
    ];
    for (i, (existing, want)) in cases.iter().enumerate() {
        let dir = tmp.path().join(format!("d{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(META_PROPERTIES), existing).unwrap();
        let got = format_log_dir(&dir, "abc", 1, false).map_err(|e| e.to_string());
        match (want, &got) {
            (Ok(()), Ok(())) => {}
            (Err(needle), Err(msg)) => {
                assert!(msg.contains(needle), "{existing:?}: {msg}");
                assert!(msg.contains(&dir.display().to_string()), "{msg}");
            }
            _ => panic!("{existing:?}: {got:?}, want {want:?}"),
        }
        // A refused dir is left untouched.
        assert_eq!(
            std::fs::read_to_string(dir.join(META_PROPERTIES)).unwrap(),
            *existing
        );
    }
    // The other cluster's message says what to do.
    let dir = tmp.path().join("d2");
    let msg = format_log_dir(&dir, "abc", 1, false)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("belongs to another cluster") && msg.contains("abc"),
        "{msg}"
    );
}

/// issue 12 item 5: the decision for every (meta.properties, data, expected id) combination.
#[test]
fn decide_table() {
    let formatted = |id: &str| MetaState::Formatted {
        cluster_id: id.to_string(),
        node_id: Some(1),
    };
    let garbled = MetaState::Garbled("no cluster.id line".into());
    let data = Some("/d/t-0/00000000000000000000.log");
    // (name, meta, data, expected, Ok(decision) or Err(needle in the message))
    let cases: Vec<DecideCase> = vec![
        (
            "first dir, empty: format",
            MetaState::Missing,
            None,
            None,
            Ok(Decision::Format),
        ),
        (
            "other dir, empty: format",
            MetaState::Missing,
            None,
            Some("abc"),
            Ok(Decision::Format),
        ),
        (
            "first dir, data, no file",
            MetaState::Missing,
            data,
            None,
            Err("No `meta.properties` found in log dir /d"),
        ),
        (
            "other dir, data, no file",
            MetaState::Missing,
            data,
            Some("abc"),
            Err("holds partition data (/d/t-0/00000000000000000000.log)"),
        ),
        (
            "first dir, garbled",
            garbled.clone(),
            None,
            None,
            Err("has no cluster.id (no cluster.id line)"),
        ),
        (
            "other dir, garbled, data",
            garbled.clone(),
            data,
            Some("abc"),
            Err("restore it from a backup"),
        ),
        (
            "first dir, formatted",
            formatted("xyz"),
            data,
            None,
            Ok(Decision::Use {
                cluster_id: "xyz".into(),
            }),
        ),
        (
            "other dir, same cluster",
            formatted("abc"),
            data,
            Some("abc"),
            Ok(Decision::Use {
                cluster_id: "abc".into(),
            }),
        ),
        (
            "other dir, other cluster",
            formatted("xyz"),
            None,
            Some("abc"),
            Err("belongs to another cluster"),
        ),
    ];
    for (name, meta, data, expected, want) in cases {
        let got = decide("/d", &meta, data, expected);
        match (&want, got) {
            (Ok(w), Ok(g)) => assert_eq!(&g, w, "{name}"),
            (Err(needle), Err(e)) => {
                let msg = e.to_string();
                assert!(msg.contains(needle), "{name}: {msg}");
                assert!(e.is_configuration(), "{name}: exit 2");
            }
            (_, got) => panic!("{name}: {got:?}, want {want:?}"),
        }
    }
}

/// issue 12 item 5, the I/O shell: a first log dir whose meta.properties is missing or garbled
/// is refused when it holds partition data (a `.log` in a partition dir or the metadata log)
/// and left untouched; an empty one (or one with only non-partition files) is formatted.
#[test]
fn first_log_dir_with_data_is_never_given_a_new_cluster_id() {
    let tmp = tempfile::tempdir().unwrap();
    // (name, files to create with their bodies, refused: a needle of the message)
    let cases: [(&str, Files, Option<&str>); 7] = [
        ("empty", &[], None),
        (
            "only a lock file and checkpoints",
            &[
                (".lock", b"1\n"),
                ("recovery-point-offset-checkpoint", b"0\n0\n"),
            ],
            None,
        ),
        (
            "a partition dir without segments",
            &[("t-0/00000000000000000000.index", b"")],
            None,
        ),
        (
            "a non-partition dir with a .log",
            &[("notes/app.log", b"x")],
            None,
        ),
        (
            "a partition segment",
            &[("t-0/00000000000000000000.log", b"x")],
            Some("t-0"),
        ),
        (
            "the metadata log",
            &[("__cluster_metadata-0/00000000000000000000.log", b"")],
            Some("__cluster_metadata-0"),
        ),
        (
            "garbled meta.properties",
            &[("meta.properties", b"\xff\xfe")],
            Some("not text"),
        ),
    ];
    for (i, (name, files, refused)) in cases.iter().enumerate() {
        let dir = tmp.path().join(format!("c{i}"));
        for (f, body) in *files {
            let p = dir.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, body).unwrap();
        }
        let before = std::fs::read(dir.join(META_PROPERTIES)).ok();
        let got = first_log_dir_cluster_id(&dir, 1, false);
        match (refused, &got) {
            (None, Ok(id)) => {
                let text = std::fs::read_to_string(dir.join(META_PROPERTIES)).unwrap();
                assert!(
                    text.contains(&format!("cluster.id={id}\n")),
                    "{name}: {text}"
                );
                assert_eq!(
                    first_log_dir_cluster_id(&dir, 1, false).unwrap(),
                    *id,
                    "{name}: stable"
                );
            }
            (Some(needle), Err(e)) => {
                let msg = e.to_string();
                assert!(msg.contains(needle), "{name}: {msg}");
                assert!(msg.contains(&dir.display().to_string()), "{name}: {msg}");
                assert!(e.is_configuration(), "{name}");
                assert_eq!(
                    std::fs::read(dir.join(META_PROPERTIES)).ok(),
                    before,
                    "{name}: untouched"
                );
            }
            _ => panic!("{name}: {got:?}, want refused={refused:?}"),
        }
    }
    // Another dir of the broker is refused the same way.
    let other = tmp.path().join("other");
    std::fs::create_dir_all(other.join("t-1")).unwrap();
    std::fs::write(other.join("t-1/00000000000000000005.log"), b"x").unwrap();
    let msg = format_log_dir(&other, "abc", 1, false)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("No `meta.properties` found"), "{msg}");
    assert!(!other.join(META_PROPERTIES).exists());
}

/// Kafka's start-up checks on top of `decide`: the stored node id must be this node's, and a
/// KRaft node refuses an unformatted dir (it is formatted by `skiff format`, never by itself).
/// (name, meta.properties, expectation, Ok(decision) or Err(needles in the message)).
type NodeCase = (
    &'static str,
    MetaState,
    Expect<'static>,
    Result<Decision, &'static [&'static str]>,
);

#[test]
fn decide_for_node_and_kraft_table() {
    let formatted = |node: Option<i32>| MetaState::Formatted {
        cluster_id: "abc".to_string(),
        node_id: node,
    };
    let expect = |node_id: i32, must_be_formatted: bool| Expect {
        cluster_id: None,
        node_id,
        must_be_formatted,
    };
    let used = Ok(Decision::Use {
        cluster_id: "abc".into(),
    });
    // (name, meta, expect, Ok(decision) or Err(needles))
    let cases: Vec<NodeCase> = vec![
        (
            "same node",
            formatted(Some(1)),
            expect(1, false),
            used.clone(),
        ),
        (
            "same node, KRaft",
            formatted(Some(1)),
            expect(1, true),
            used.clone(),
        ),
        (
            "v0 file without node.id",
            formatted(None),
            expect(7, true),
            used,
        ),
        (
            "other node",
            formatted(Some(1)),
            expect(2, false),
            Err(&[
                "Stored node id 1 doesn't match previous node id 2 in /d/meta.properties",
                "node.id=2 is this node's configuration",
            ]),
        ),
        (
            "empty, single node: formats itself",
            MetaState::Missing,
            expect(1, false),
            Ok(Decision::Format),
        ),
        (
            "empty, KRaft: refused",
            MetaState::Missing,
            expect(1, true),
            Err(&[
                "No `meta.properties` found in /d",
                "skiff format --cluster-id",
            ]),
        ),
    ];
    for (name, meta, expect, want) in cases {
        let got = decide_for("/d", &meta, None, &expect);
        match (&want, got) {
            (Ok(w), Ok(g)) => assert_eq!(&g, w, "{name}"),
            (Err(needles), Err(e)) => {
                let msg = e.to_string();
                for n in *needles {
                    assert!(msg.contains(n), "{name}: {msg}");
                }
                assert!(e.is_configuration(), "{name}: exit 2");
            }
            (_, got) => panic!("{name}: {got:?}, want {want:?}"),
        }
    }
}
