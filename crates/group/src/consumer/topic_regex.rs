//! Regex subscriptions of KIP-848 members (`SubscribedTopicRegex`, Kafka 4.0+).
//!
//! Mental model: a member may subscribe with topic names, a regex, or both; its topics are
//! the names plus every topic the coordinator knows (internal topics are never offered) whose
//! *whole* name the regex matches, as Java's `Matcher.matches()` does for Kafka. The regex is
//! stored with the member (`ConsumerGroupMemberMetadataValue.SubscribedTopicRegex`); its
//! matches are resolved from the current topic view whenever the group's subscription is
//! computed (each heartbeat and each fencing), so a topic created or deleted changes the
//! group's subscription metadata on the next heartbeat, which bumps the group epoch and
//! reassigns. Kafka resolves asynchronously, batched at most every
//! `group.consumer.regex.refresh.interval.ms`, and persists the result as
//! `ConsumerGroupRegularExpression` records; Skiff resolves at once and derives the result
//! from the topic view (the subscription metadata record, which lists the matched topics,
//! is what persists), so new matching topics are picked up sooner than on Kafka.
//!
//! Syntax: Kafka uses RE2/J; Skiff uses the `regex` crate, also of the RE2 family (no
//! look-around, no back-references, linear-time matching). Known differences: `regex` is
//! Unicode-aware by default (`\w`, `\d`, `\s` and case folding cover Unicode; RE2/J's are
//! ASCII), and RE2/J's `\C` and `\Q...\E` quoting are not supported (invalid here). Topic
//! names are ASCII (`[a-zA-Z0-9._-]`), so matches agree for every pattern both accept.

use std::collections::{BTreeMap, BTreeSet};

use regex::Regex;

use crate::consumer::group::{ConsumerGroup, ConsumerMember};
use crate::shard::GroupCoordinatorShard;

/// Checks a subscription regex: Kafka's INVALID_REGULAR_EXPRESSION message when it does not
/// compile.
pub(super) fn validate(pattern: &str) -> Result<(), String> {
    compile(pattern).map(drop)
}

/// The regex matching whole topic names.
fn compile(pattern: &str) -> Result<Regex, String> {
    // Compiled alone first, so that a pattern such as `a)|(b` cannot close the anchoring group.
    let invalid = |e: regex::Error| {
        let text = e.to_string();
        let description = text
            .lines()
            .rev()
            .find_map(|l| l.trim().strip_prefix("error: "))
            .unwrap_or(text.trim())
            .to_string();
        format!(
            "SubscribedTopicRegex `{pattern}` is not a valid regular expression: {description}."
        )
    };
    Regex::new(pattern).map_err(invalid)?;
    Regex::new(&format!("^(?:{pattern})$")).map_err(invalid)
}

/// Every regex of a group with the known topics it matches (a regex that does not compile,
/// which validation prevents, matches nothing, as Kafka ignores it).
pub(crate) type Resolved = BTreeMap<String, BTreeSet<String>>;

impl GroupCoordinatorShard {
    /// Resolves every regex of `g` against the current topics.
    pub(crate) fn resolve_regexes(&self, g: &ConsumerGroup) -> Resolved {
        g.subscribed_regexes()
            .into_iter()
            .map(|pattern| {
                let topics = match compile(pattern) {
                    Ok(re) => self
                        .topics
                        .keys()
                        .filter(|t| re.is_match(t))
                        .cloned()
                        .collect(),
                    Err(_) => BTreeSet::new(),
                };
                (pattern.to_string(), topics)
            })
            .collect()
    }
}

/// The topics one member subscribes to: its names and its regex's matches.
pub(crate) fn member_topics(m: &ConsumerMember, resolved: &Resolved) -> BTreeSet<String> {
    let mut topics = m.subscribed_topic_names.clone();
    if let Some(matched) = m
        .subscribed_topic_regex
        .as_ref()
        .and_then(|r| resolved.get(r))
    {
        topics.extend(matched.iter().cloned());
    }
    topics
}

/// Every topic some member of `g` subscribes to.
pub(crate) fn group_topics(g: &ConsumerGroup, resolved: &Resolved) -> BTreeSet<String> {
    g.members
        .values()
        .flat_map(|m| member_topics(m, resolved))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regexes_match_whole_names_and_bad_ones_get_kafka_s_message() {
        let re = compile("^.*_suffix").unwrap();
        assert!(re.is_match("a_suffix"));
        assert!(!re.is_match("a_suffix_not"));
        let re = compile("orders|pay.*").unwrap();
        assert!(re.is_match("orders") && re.is_match("payments"));
        assert!(
            !re.is_match("old-orders"),
            "whole-name match, as Matcher.matches()"
        );
        // Cannot escape the anchoring group.
        assert!(compile("a)|(b").is_err());
        let e = validate("[a-").unwrap_err();
        assert!(
            e.starts_with("SubscribedTopicRegex `[a-` is not a valid regular expression: "),
            "{e}"
        );
        assert!(e.ends_with('.'), "{e}");
        assert!(validate("(?<=a)b").is_err(), "no look-behind, as RE2/J");
    }
}
