//! Hand-written minimal histories, one per anomaly (Jepsen's catalogue style): each asserts
//! exactly that anomaly and no other, plus the near misses that must stay valid (indefinite
//! errors, resets on assign/crash, subscribe mode, non-idempotent producers).

mod common;

use common::{assert_found, check};
use logcheck::Anomaly::*;

/// Three acknowledged sends a=1, b=2, c=3 to key 0 at offsets 0, 1, 2 (procs 1).
const SENDS: &str = r#"
    {"t":1,"proc":1,"type":"invoke","f":"send","value":[["send",0,1]]}
    {"t":2,"proc":1,"type":"ok","f":"send","value":[["send",0,[0,1]]]}
    {"t":3,"proc":1,"type":"invoke","f":"send","value":[["send",0,2]]}
    {"t":4,"proc":1,"type":"ok","f":"send","value":[["send",0,[1,2]]]}
    {"t":5,"proc":1,"type":"invoke","f":"send","value":[["send",0,3]]}
    {"t":6,"proc":1,"type":"ok","f":"send","value":[["send",0,[2,3]]]}
"#;

/// A poller (proc 9, subscribe mode: no cross-poll checks) that reads all of SENDS.
const READ_ALL: &str = r#"
    {"t":50,"proc":9,"type":"ok","f":"subscribe","value":[0]}
    {"t":51,"proc":9,"type":"invoke","f":"poll","value":[["poll"]]}
    {"t":52,"proc":9,"type":"ok","f":"poll","value":[["poll",{"0":[[0,1],[1,2],[2,3]]}]]}
"#;

#[test]
fn sends_read_in_order_are_valid() {
    let r = check(&format!("{SENDS}{READ_ALL}"));
    assert_found(&r, &[], "clean");
    assert!(r.all_seen);
    assert_eq!(r.stats.sends_ok, 3);
    assert_eq!(r.stats.records_polled, 3);
}

#[test]
fn two_values_at_one_offset_are_inconsistent_offsets() {
    let r = check(
        r#"
        {"t":1,"proc":1,"type":"invoke","f":"send","value":[["send",11,641]]}
        {"t":2,"proc":1,"type":"ok","f":"send","value":[["send",11,[537,641]]]}
        {"t":3,"proc":2,"type":"invoke","f":"send","value":[["send",11,645]]}
        {"t":4,"proc":2,"type":"ok","f":"send","value":[["send",11,[537,645]]]}
    "#,
    );
    assert_found(&r, &[InconsistentOffsets], "inconsistent");
    let case = &r.anomalies[&InconsistentOffsets][0];
    assert_eq!(case.offsets, vec![537]);
    assert_eq!(case.values, vec![641, 645]);
    assert_eq!(case.lines, vec![2, 4]);
}

#[test]
fn an_info_send_with_a_conflicting_offset_is_not_a_conflict() {
    // The info send may not have happened; nobody read it, so its offset is not evidence.
    let r = check(
        r#"
        {"t":1,"proc":1,"type":"invoke","f":"send","value":[["send",0,1]]}
        {"t":2,"proc":1,"type":"info","f":"send","value":[["send",0,[0,1]]],"error":"_MSG_TIMED_OUT"}
        {"t":3,"proc":2,"type":"invoke","f":"send","value":[["send",0,2]]}
        {"t":4,"proc":2,"type":"ok","f":"send","value":[["send",0,[0,2]]]}
    "#,
    );
    assert_found(&r, &[], "info conflict");
}

#[test]
fn one_value_at_two_offsets_is_a_duplicate() {
    let r = check(&format!(
        "{SENDS}{}",
        r#"{"t":60,"proc":9,"type":"ok","f":"poll","value":[["poll",{"0":[[0,1],[1,2],[2,3],[3,2]]}]]}"#
    ));
    assert_found(&r, &[Duplicate], "duplicate");
    let case = &r.anomalies[&Duplicate][0];
    assert_eq!(
        (case.offsets.clone(), case.values.clone()),
        (vec![1, 3], vec![2])
    );
}

#[test]
fn a_polled_value_of_a_definitely_failed_send_is_g1a() {
    let r = check(
        r#"
        {"t":1,"proc":1,"type":"invoke","f":"send","value":[["send",0,1]]}
        {"t":2,"proc":1,"type":"fail","f":"send","value":[["send",0,1]],"error":"MESSAGE_TOO_LARGE"}
        {"t":3,"proc":9,"type":"ok","f":"poll","value":[["poll",{"0":[[0,1]]}]]}
    "#,
    );
    assert_found(&r, &[G1a], "g1a");
    assert_eq!(r.anomalies[&G1a][0].lines, vec![3, 2]);
}

#[test]
fn polled_values_of_indefinite_sends_are_fine() {
    // info, a fail with an indefinite error (downgraded), and an invoke that never completed.
    let r = check(
        r#"
        {"t":1,"proc":1,"type":"invoke","f":"send","value":[["send",0,1]]}
        {"t":2,"proc":1,"type":"info","f":"send","value":[["send",0,1]],"error":"timeout"}
        {"t":3,"proc":2,"type":"invoke","f":"send","value":[["send",0,2]]}
        {"t":4,"proc":2,"type":"fail","f":"send","value":[["send",0,2]],"error":"REQUEST_TIMED_OUT"}
        {"t":5,"proc":3,"type":"invoke","f":"send","value":[["send",0,3]]}
        {"t":6,"proc":4,"type":"invoke","f":"send","value":[["send",0,4]]}
        {"t":7,"proc":4,"type":"fail","f":"send","value":[["send",0,4]],"error":"NOT_LEADER_OR_FOLLOWER"}
        {"t":9,"proc":9,"type":"ok","f":"poll","value":[["poll",{"0":[[0,1],[1,2],[2,3],[3,4]]}]]}
    "#,
    );
    assert_found(&r, &[], "indefinite");
    assert_eq!(r.stats.downgraded_failures, 2);
    assert_eq!(r.stats.sends_indefinite, 4);
}

#[test]
fn a_polled_value_of_an_aborted_transaction_is_g1a() {
    let r = check(
        r#"
        {"t":1,"proc":1,"type":"invoke","f":"txn","value":[["send",0,1],["send",1,2]]}
        {"t":2,"proc":1,"type":"fail","f":"txn","value":[["send",0,[0,1]],["send",1,[0,2]]],"error":"aborted"}
        {"t":3,"proc":9,"type":"ok","f":"poll","value":[["poll",{"1":[[0,2]]}]]}
    "#,
    );
    assert_found(&r, &[G1a], "aborted txn");
    assert!(r.anomalies[&G1a][0].note.contains("aborted transaction"));
}

#[test]
fn an_acknowledged_send_below_the_read_frontier_never_polled_is_lost() {
    let r = check(&format!(
        "{SENDS}{}",
        r#"{"t":60,"proc":9,"type":"ok","f":"poll","value":[["poll",{"0":[[0,1],[2,3]]}]]}"#
    ));
    // A lost write with a known offset also shows as a skip to every reader that passed it:
    // here inside one poll.
    assert_found(&r, &[LostWrite, IntPollSkip], "lost + int skip");

    let r = check(&format!(
        "{SENDS}{}",
        r#"{"t":60,"proc":9,"type":"ok","f":"poll","value":[["poll",{"0":[[1,2]]}]]}"#
    ));
    assert_found(&r, &[LostWrite], "lost");
    let case = &r.anomalies[&LostWrite][0];
    assert_eq!(
        (case.offsets.clone(), case.values.clone()),
        (vec![0], vec![1])
    );
    assert_eq!(case.lines, vec![2, 7]);
    // value 3 is above the frontier: unseen, not lost
    assert_eq!(r.unseen.count, 1);
    assert_eq!(r.unseen.examples[0].values, vec![3]);
}

#[test]
fn acknowledged_sends_never_polled_above_the_frontier_are_unseen_not_invalid() {
    let r = check(SENDS);
    assert_found(&r, &[], "unseen");
    assert!(!r.all_seen);
    assert_eq!(r.unseen.count, 3);
    assert_eq!(
        r.unseen.by_key.values().copied().collect::<Vec<_>>(),
        vec![3]
    );
    assert!(!r.stats.final_drain);
}

/// proc 5 assigns key 0 and polls twice, with `second` as the second poll's records.
fn assigned_polls(first: &str, second: &str) -> String {
    format!(
        r#"{SENDS}{READ_ALL}
        {{"t":70,"proc":5,"type":"invoke","f":"assign","value":[0]}}
        {{"t":71,"proc":5,"type":"ok","f":"assign","value":[0]}}
        {{"t":72,"proc":5,"type":"ok","f":"poll","value":[["poll",{{"0":{first}}}]]}}
        {{"t":73,"proc":5,"type":"ok","f":"poll","value":[["poll",{{"0":{second}}}]]}}
    "#
    )
}

#[test]
fn an_assigned_consumer_that_skips_between_polls_is_poll_skip() {
    let r = check(&assigned_polls("[[0,1]]", "[[2,3]]"));
    assert_found(&r, &[PollSkip], "poll-skip");
    let case = &r.anomalies[&PollSkip][0];
    assert_eq!(case.values, vec![1, 3]);
    assert!(case.note.contains("[2]"), "{}", case.note);
}

#[test]
fn an_assigned_consumer_that_goes_back_is_nonmonotonic_poll() {
    let r = check(&assigned_polls("[[0,1],[1,2]]", "[[1,2],[2,3]]"));
    assert_found(&r, &[NonmonotonicPoll], "nonmonotonic-poll");
}

#[test]
fn a_poll_that_skips_inside_is_int_poll_skip() {
    let r = check(&assigned_polls("[[0,1],[2,3]]", "[]"));
    assert_found(&r, &[IntPollSkip], "int-poll-skip");
}

#[test]
fn a_poll_that_goes_back_inside_is_int_nonmonotonic_poll() {
    let r = check(&assigned_polls("[[1,2],[0,1]]", "[]"));
    assert_found(&r, &[IntNonmonotonicPoll], "int-nonmonotonic-poll");
}

#[test]
fn gaps_without_values_are_not_skips() {
    // Offsets 0, 5, 9 (transaction markers between): dense indices 0, 1, 2.
    let r = check(
        r#"
        {"t":1,"proc":5,"type":"ok","f":"assign","value":[0]}
        {"t":2,"proc":5,"type":"ok","f":"poll","value":[["poll",{"0":[[0,1],[5,2]]}]]}
        {"t":3,"proc":5,"type":"ok","f":"poll","value":[["poll",{"0":[[9,3]]}]]}
    "#,
    );
    assert_found(&r, &[], "gaps");
}

#[test]
fn assign_crash_and_subscribe_reset_or_disable_the_cross_poll_check() {
    for between in [
        r#"{"t":80,"proc":5,"type":"ok","f":"assign","value":[0]}"#,
        r#"{"t":80,"proc":5,"type":"info","f":"crash"}"#,
        r#"{"t":80,"proc":5,"type":"ok","f":"subscribe","value":[0]}"#,
    ] {
        let r = check(&format!(
            r#"{SENDS}{READ_ALL}
            {{"t":70,"proc":5,"type":"ok","f":"assign","value":[0]}}
            {{"t":72,"proc":5,"type":"ok","f":"poll","value":[["poll",{{"0":[[1,2]]}}]]}}
            {between}
            {{"t":90,"proc":5,"type":"ok","f":"poll","value":[["poll",{{"0":[[0,1]]}}]]}}
            {{"t":91,"proc":5,"type":"ok","f":"poll","value":[["poll",{{"0":[[2,3]]}}]]}}
        "#
        ));
        let expected: &[logcheck::Anomaly] = if between.contains("assign") {
            &[PollSkip]
        } else {
            &[]
        };
        assert_found(&r, expected, between);
    }
}

#[test]
fn an_idempotent_producers_later_send_at_a_lower_offset_is_nonmonotonic_send() {
    let history = |idempotent: &str| {
        format!(
            r#"
            {{"t":1,"proc":1,"type":"invoke","f":"send","value":[["send",0,1]]{idempotent}}}
            {{"t":2,"proc":1,"type":"invoke","f":"send","value":[["send",0,2]]{idempotent}}}
            {{"t":3,"proc":1,"type":"ok","f":"send","value":[["send",0,[1,1]]]}}
            {{"t":4,"proc":1,"type":"ok","f":"send","value":[["send",0,[0,2]]]}}
            {{"t":5,"proc":9,"type":"ok","f":"poll","value":[["poll",{{"0":[[0,2],[1,1]]}}]]}}
        "#
        )
    };
    let r = check(&history(""));
    assert_found(&r, &[NonmonotonicSend], "nonmonotonic-send");
    assert_eq!(r.anomalies[&NonmonotonicSend][0].values, vec![1, 2]);
    let r = check(&history(r#","idempotent":false"#));
    assert_found(&r, &[], "not idempotent");
}

#[test]
fn a_crash_starts_a_new_producer_session() {
    let r = check(
        r#"
        {"t":1,"proc":1,"type":"invoke","f":"send","value":[["send",0,1]]}
        {"t":2,"proc":1,"type":"ok","f":"send","value":[["send",0,[1,1]]]}
        {"t":3,"proc":1,"type":"info","f":"crash"}
        {"t":4,"proc":1,"type":"invoke","f":"send","value":[["send",0,2]]}
        {"t":5,"proc":1,"type":"ok","f":"send","value":[["send",0,[0,2]]]}
        {"t":6,"proc":9,"type":"ok","f":"poll","value":[["poll",{"0":[[0,2],[1,1]]}]]}
    "#,
    );
    assert_found(&r, &[], "new session");
}

#[test]
fn two_sends_of_one_transaction_out_of_order_are_int_nonmonotonic_send() {
    let r = check(
        r#"
        {"t":1,"proc":1,"type":"invoke","f":"txn","value":[["send",0,1],["send",0,2]]}
        {"t":2,"proc":1,"type":"ok","f":"txn","value":[["send",0,[1,1]],["send",0,[0,2]]]}
        {"t":3,"proc":9,"type":"ok","f":"poll","value":[["poll",{"0":[[0,2],[1,1]]}]]}
    "#,
    );
    assert_found(&r, &[IntNonmonotonicSend], "int-nonmonotonic-send");
}

#[test]
fn a_transaction_that_polls_its_own_send_is_a_precommitted_read() {
    let r = check(
        r#"
        {"t":1,"proc":1,"type":"invoke","f":"txn","value":[["send",0,1],["poll"]]}
        {"t":2,"proc":1,"type":"ok","f":"txn","value":[["send",0,[0,1]],["poll",{"0":[[0,1]]}]]}
    "#,
    );
    assert_found(&r, &[PrecommittedRead], "precommitted");
}

#[test]
fn a_committed_transaction_partly_visible_to_the_final_drain_is_torn() {
    let history = |drained: &str| {
        format!(
            r#"
            {{"t":1,"proc":1,"type":"invoke","f":"txn","value":[["send",0,1],["send",0,2],["send",1,3]]}}
            {{"t":2,"proc":1,"type":"ok","f":"txn","value":[["send",0,[0,1]],["send",0,[1,2]],["send",1,[0,3]]]}}
            {{"t":3,"proc":8,"type":"ok","f":"assign","value":[0,1],"final":true}}
            {{"t":4,"proc":8,"type":"ok","f":"poll","value":[["poll",{drained}]],"final":true}}
        "#
        )
    };
    let r = check(&history(r#"{"0":[[0,1]],"1":[[0,3]]}"#));
    assert_found(&r, &[TornTransaction], "torn");
    assert_eq!(r.anomalies[&TornTransaction][0].values, vec![1, 2]);
    assert_eq!(r.unseen.count, 1, "value 2 is unseen too");
    assert!(r.stats.final_drain);

    let r = check(&history(r#"{"0":[[0,1],[1,2]],"1":[[0,3]]}"#));
    assert_found(&r, &[], "whole");
    assert!(r.all_seen);
}

#[test]
fn liveness_figures_count_from_the_last_heal() {
    let r = check(
        r#"
        {"t":0,"proc":1,"type":"invoke","f":"send","value":[["send",0,1]]}
        {"t":10,"proc":1,"type":"ok","f":"send","value":[["send",0,[0,1]]]}
        {"t":20,"proc":"nemesis","type":"info","f":"fault","value":"kill -9 b1"}
        {"t":30,"proc":1,"type":"invoke","f":"send","value":[["send",0,2]]}
        {"t":40,"proc":1,"type":"info","f":"send","value":[["send",0,2]],"error":"_MSG_TIMED_OUT"}
        {"t":50,"proc":1,"type":"invoke","f":"send","value":[["send",1,3]]}
        {"t":100,"proc":"nemesis","type":"info","f":"heal"}
        {"t":130,"proc":1,"type":"ok","f":"send","value":[["send",1,[0,3]]]}
        {"t":140,"proc":1,"type":"invoke","f":"send","value":[["send",0,4]]}
        {"t":160,"proc":1,"type":"ok","f":"send","value":[["send",0,[1,4]]]}
        {"t":170,"proc":9,"type":"ok","f":"poll","value":[["poll",{"0":[[0,1],[1,4]]}]]}
        {"t":190,"proc":9,"type":"ok","f":"poll","value":[["poll",{"1":[[0,3]]}]]}
    "#,
    );
    assert_found(&r, &[], "liveness history");
    let l = &r.liveness;
    assert_eq!(l.last_heal, Some(100));
    assert_eq!(
        l.heal_to_first_ok_send,
        Some(60),
        "send 4 invoked at 140, acked at 160"
    );
    assert_eq!(
        l.heal_to_all_seen,
        Some(90),
        "sends 1 and 3 invoked before; 3 seen at 190"
    );
    assert_eq!(l.unseen_before_heal, 0);
    let u = l
        .longest_unavailability
        .as_ref()
        .expect("a longest stretch");
    assert_eq!(
        (u.key.0.as_str(), u.from, u.to, u.duration),
        ("0", 10, 160, 150)
    );
    assert_eq!(
        l.unavailability_by_key[&logcheck::history::Key::from(1)],
        0,
        "key 1: one acknowledgement, nothing invoked after it; start-up does not count"
    );
}

#[test]
fn no_heal_marker_leaves_the_heal_figures_null() {
    let r = check(SENDS);
    assert_eq!(r.liveness.last_heal, None);
    assert_eq!(r.liveness.heal_to_all_seen, None);
    assert!(r.notes.iter().any(|n| n.contains("heal")));
}
