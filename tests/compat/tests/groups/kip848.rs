//! KIP-848 features of Kafka 4.x that librdkafka's own tests use (issue 15): regex
//! subscriptions resolved by the coordinator (`SubscribedTopicRegex`, librdkafka tests 0033,
//! 0045, 0113's wildcard case).

use serde_json::json;
use skiff_compat::Python;

use crate::{ck, group_broker};

/// A `^.*_suffix`-style subscription under `group.protocol=consumer`: the matching topics are
/// assigned and consumed, a non-matching one is not, and a matching topic created later is
/// assigned without a resubscribe.
#[test]
fn a_kip848_regex_subscription_gets_matching_topics_including_new_ones() {
    let b = group_broker();
    let r = ck(
        Python::PyPi,
        "regex",
        &json!({
            "bootstrap": b.bootstrap(), "group": "rx", "topic": "unused", "partitions": 1,
            "pattern": "^rx_.*_suffix",
            "matching": ["rx_a_suffix", "rx_b_suffix"],
            "other": ["rx_a_suffix_not", "other_suffix"],
            "late": "rx_late_suffix",
            "wait_s": 25,
        }),
    );
    assert_eq!(r["errors"], json!([]), "{r}");
    assert_eq!(
        r["phases"]["initial"]["topics"],
        json!(["rx_a_suffix", "rx_b_suffix"]),
        "{r}"
    );
    assert_eq!(
        r["phases"]["late"]["topics"],
        json!(["rx_late_suffix"]),
        "the topic created later is consumed: {r}"
    );
    assert_eq!(
        r["assignment"],
        json!(["rx_a_suffix", "rx_b_suffix", "rx_late_suffix"]),
        "{r}"
    );
}
