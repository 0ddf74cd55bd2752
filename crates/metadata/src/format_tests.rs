//! `skiff format`'s rule (`plan`) as a table, and its shell over real dirs.

use super::*;

const ID: &str = "MkU3OEVBNTcwNTJENDM2Qg";

fn found(dir: &str, meta: MetaState, data: Option<&str>) -> Found {
    Found {
        dir: dir.to_string(),
        meta,
        data: data.map(str::to_string),
    }
}

fn formatted(cluster: &str, node: i32) -> MetaState {
    MetaState::Formatted {
        cluster_id: cluster.to_string(),
        node_id: Some(node),
    }
}

/// (name, dirs, ignore_formatted, Ok(steps) or Err(needles in the message)).
type PlanCase = (
    &'static str,
    Vec<Found>,
    bool,
    Result<Vec<Step>, &'static [&'static str]>,
);

#[test]
fn plan_table() {
    use Step::{Format, Keep};
    let empty = |d: &str| found(d, MetaState::Missing, None);
    // (name, dirs, ignore_formatted, Ok(steps) or Err(needles))
    let cases: Vec<PlanCase> = vec![
        (
            "all empty",
            vec![empty("/a"), empty("/b")],
            false,
            Ok(vec![Format, Format]),
        ),
        (
            "one formatted, no flag",
            vec![empty("/a"), found("/b", formatted(ID, 1), None)],
            false,
            Err(&[
                "Log directory /b is already formatted. Use --ignore-formatted to ignore this directory and format the others.",
            ]),
        ),
        (
            "one formatted, --ignore-formatted",
            vec![
                empty("/a"),
                found("/b", formatted(ID, 1), Some("/b/t-0/0.log")),
            ],
            true,
            Ok(vec![Format, Keep]),
        ),
        (
            "all formatted, --ignore-formatted",
            vec![found("/a", formatted(ID, 1), None)],
            true,
            Ok(vec![Keep]),
        ),
        (
            "another cluster, even with --ignore-formatted",
            vec![empty("/a"), found("/b", formatted("other", 1), None)],
            true,
            Err(&[
                "Invalid cluster.id in: /b/meta.properties. Expected MkU3OEVBNTcwNTJENDM2Qg, but read other",
            ]),
        ),
        (
            "another node, even with --ignore-formatted",
            vec![found("/a", formatted(ID, 4), None)],
            true,
            Err(&["Stored node id 4 doesn't match previous node id 1 in /a/meta.properties"]),
        ),
        (
            "garbled meta.properties",
            vec![found(
                "/a",
                MetaState::Garbled("no cluster.id line".into()),
                None,
            )],
            true,
            Err(&["log dir /a: meta.properties has no cluster.id (no cluster.id line)"]),
        ),
        (
            "data without meta.properties is not adopted",
            vec![
                empty("/a"),
                found("/b", MetaState::Missing, Some("/b/t-0/0.log")),
            ],
            true,
            Err(&[
                "No `meta.properties` found in log dir /b, but it holds partition data (/b/t-0/0.log)",
            ]),
        ),
    ];
    for (name, dirs, ignore, want) in cases {
        match (plan(&dirs, ID, 1, ignore), want) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "{name}"),
            (Err(e), Err(needles)) => {
                let msg = e.to_string();
                for n in needles {
                    assert!(msg.contains(n), "{name}: {msg}");
                }
                assert!(e.is_configuration(), "{name}");
            }
            (got, want) => panic!("{name}: {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn format_storage_writes_kafkas_meta_properties_and_refuses_whole() {
    let t = tempfile::tempdir().unwrap();
    let a = t.path().join("a");
    let b = t.path().join("nested/b");
    let dirs = vec![a.clone(), b.clone()];
    let out = format_storage(&dirs, ID, 3, false).unwrap();
    assert_eq!(
        out,
        vec![(a.clone(), Step::Format), (b.clone(), Step::Format)]
    );
    let read = |d: &Path| std::fs::read_to_string(d.join(META_PROPERTIES)).unwrap();
    let (ta, tb) = (read(&a), read(&b));
    for text in [&ta, &tb] {
        for line in ["version=1\n", "node.id=3\n", &format!("cluster.id={ID}\n")] {
            assert!(text.contains(line), "{text}");
        }
    }
    // Each dir gets its own directory.id.
    let dir_id = |t: &str| {
        t.lines()
            .find_map(|l| l.strip_prefix("directory.id="))
            .unwrap()
            .to_string()
    };
    assert_ne!(dir_id(&ta), dir_id(&tb));
    crate::cluster_id::parse(&dir_id(&ta)).unwrap();

    // Again: refused as a whole; with --ignore-formatted, kept as they are.
    let e = format_storage(&dirs, ID, 3, false).unwrap_err();
    assert!(matches!(e, LogDirError::AlreadyFormatted { .. }), "{e}");
    let c = t.path().join("c");
    let more = vec![a.clone(), c.clone()];
    let out = format_storage(&more, ID, 3, true).unwrap();
    assert_eq!(out[0].1, Step::Keep);
    assert_eq!(out[1].1, Step::Format);
    assert_eq!(read(&a), ta, "a kept dir is not rewritten");

    // A refusal writes nothing: the empty dir d stays unformatted.
    let d = t.path().join("d");
    let e = format_storage(&[d.clone(), a.clone()], "AAAAAAAAAAAAAAAAAAAAAQ", 3, true).unwrap_err();
    assert!(
        matches!(e, LogDirError::FormattedForOtherCluster { .. }),
        "{e}"
    );
    assert!(!d.join(META_PROPERTIES).exists());
}
