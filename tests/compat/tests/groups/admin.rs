//! Group administration through confluent-kafka's AdminClient while a member of another group
//! is consuming: ListGroups (states), DescribeGroups (members, assignments, assignor),
//! committed offsets and lag (end offsets - committed), DeleteGroups (NON_EMPTY_GROUP while
//! members exist, GROUP_ID_NOT_FOUND for unknown groups). A KIP-848 group described through
//! ConsumerGroupDescribe (type, assignor, members with current and target assignments) next to
//! an Empty classic group, and ListGroups filtered by state and by type.

use serde_json::{Value, json};
use skiff_compat::Python;

use crate::{by_partition, ck, create_topic, group_broker};

#[test]
fn list_describe_lag_and_delete_groups_through_admin_client() {
    let b = group_broker();
    create_topic(&b, "admin", 3);
    let base = json!({"bootstrap": b.bootstrap(), "topic": "admin", "partitions": 3});
    let with = |extra: Value| {
        let mut p = base.clone();
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        p
    };
    ck(Python::PyPi, "produce", &with(json!({"count": 30})));
    let half = ck(
        Python::PyPi,
        "consume",
        &with(json!({"group": "half", "count": 10})),
    );
    let committed = by_partition(
        &ck(Python::PyPi, "committed", &with(json!({"group": "half"})))["committed"],
        3,
    );
    assert!(committed.iter().any(|c| *c > 0), "{half}");

    let r = ck(
        Python::PyPi,
        "admin",
        &with(json!({
            "busy": "busy", "describe": ["busy", "half", "nope"], "lag_group": "half",
            "delete": ["half", "busy", "nope"],
        })),
    );
    assert_eq!(r["list_errors"], json!([]));
    assert_eq!(r["listed"], json!([["busy", "STABLE"], ["half", "EMPTY"]]));
    let busy = &r["described"]["busy"];
    assert_eq!(busy["state"], json!("STABLE"), "{r}");
    assert_eq!(
        busy["members"],
        json!([["busy-member", "/127.0.0.1", [0, 1, 2]]])
    );
    assert_eq!(busy["partition_assignor"], json!("range"));
    assert_eq!(r["described"]["half"]["state"], json!("EMPTY"));
    assert_eq!(r["described"]["nope"]["state"], json!("DEAD"));
    // Lag = end offsets (10 per partition) - committed.
    let lag = by_partition(&r["lag"], 3);
    let expected: Vec<i64> = committed.iter().map(|c| 10 - c.max(&0)).collect();
    assert_eq!(lag, expected, "lag of {committed:?}");
    assert_eq!(
        lag.iter().sum::<i64>(),
        30 - half["consumed"].as_array().unwrap().len() as i64
    );
    assert_eq!(
        r["deleted"],
        json!({"half": null, "busy": "NON_EMPTY_GROUP", "nope": "GROUP_ID_NOT_FOUND"})
    );
    assert_eq!(
        r["listed_after"],
        json!([["busy", "STABLE"]]),
        "half was deleted"
    );
}

#[test]
fn admin_client_describes_a_kip848_group_and_filters_listings_by_state_and_type() {
    let b = group_broker();
    create_topic(&b, "cg", 3);
    let r = ck(
        Python::PyPi,
        "kip848_admin",
        &json!({
            "bootstrap": b.bootstrap(), "topic": "cg", "partitions": 3, "group": "kip848",
            "idle": "idle", "assignor": "range",
        }),
    );
    assert_eq!(r["assigned"], json!([0, 1, 2]), "{r}");
    let d = &r["described"]["kip848"];
    assert_eq!(
        (&d["type"], &d["state"], &d["partition_assignor"]),
        (&json!("CONSUMER"), &json!("STABLE"), &json!("range")),
        "{r}"
    );
    let owned = json!([["cg", 0], ["cg", 1], ["cg", 2]]);
    assert_eq!(
        d["members"],
        json!([{
            "client_id": "kip848-member", "host": "/127.0.0.1", "member_id_set": true,
            "assignment": owned, "target_assignment": owned,
        }]),
        "{r}"
    );
    let idle = &r["described"]["idle"];
    assert_eq!(
        (&idle["type"], &idle["state"], &idle["members"]),
        (&json!("CLASSIC"), &json!("EMPTY"), &json!([])),
        "{r}"
    );
    let listed = |key: &str, groups: Value| {
        assert_eq!(r[key]["errors"], json!([]), "{key}: {r}");
        assert_eq!(r[key]["groups"], groups, "{key}: {r}");
    };
    let kip848 = json!(["kip848", "STABLE", "CONSUMER"]);
    let empty = json!(["idle", "EMPTY", "CLASSIC"]);
    listed("all", json!([empty, kip848]));
    listed("stable", json!([kip848]));
    listed("empty", json!([empty]));
    listed("consumer_type", json!([kip848]));
    listed("classic_type", json!([empty]));
}
