//! The key catalogue: which configuration names exist, their types, defaults and update modes.
//!
//! Mental model: three static tables. [`BROKER_KEYS`] holds every Kafka 4.1 broker key,
//! [`SKIFF_BROKER_KEYS`] Skiff's own broker-level keys (the KIP-280 cleaner defaults and the
//! `skiff.` namespace), and [`TOPIC_KEYS`] every topic-level key with its broker synonyms in
//! Kafka's precedence order. Everything here is immutable data plus pure lookups, so it is
//! `Sync` and needs no locking. Invariants (tested): names are unique, each table is sorted by
//! name, and every topic synonym is itself a known broker key.
//!
//! `Support::NotImplemented` means "accepted, logged once, ignored". That is allowed only for
//! keys whose being ignored can never leave the broker less safe than configured; a value that
//! demands authentication, encryption, authorization or a refusal Skiff does not implement
//! (a Java plugin class, an authorizer other than the StandardAuthorizer, a SASL listener with
//! no mechanism Skiff offers, `delete.topic.enable=false`, ...) is refused at start by
//! [`crate::security::check`], whose module doc lists every such key.

mod broker_keys;
mod topic_keys;

pub use broker_keys::BROKER_KEYS;
pub use topic_keys::{Synonym, TOPIC_KEYS, TopicKeySpec};

/// Kafka's `ConfigDef.Type`, with the ids DescribeConfigs v3+ reports in `config_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigType {
    Boolean,
    String,
    Int,
    Short,
    Long,
    Double,
    List,
    Class,
    Password,
}

impl ConfigType {
    /// `DescribeConfigsResponse.ConfigType` id (UNKNOWN = 0 is never produced here).
    pub fn describe_id(self) -> i8 {
        match self {
            ConfigType::Boolean => 1,
            ConfigType::String => 2,
            ConfigType::Int => 3,
            ConfigType::Short => 4,
            ConfigType::Long => 5,
            ConfigType::Double => 6,
            ConfigType::List => 7,
            ConfigType::Class => 8,
            ConfigType::Password => 9,
        }
    }

    /// Kafka's name for the type, as used in its "Not a number of type INT" messages.
    pub fn kafka_name(self) -> &'static str {
        match self {
            ConfigType::Boolean => "BOOLEAN",
            ConfigType::String => "STRING",
            ConfigType::Int => "INT",
            ConfigType::Short => "SHORT",
            ConfigType::Long => "LONG",
            ConfigType::Double => "DOUBLE",
            ConfigType::List => "LIST",
            ConfigType::Class => "CLASS",
            ConfigType::Password => "PASSWORD",
        }
    }
}

/// How a broker key may be changed at runtime (Kafka's "Update Mode").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DynamicMode {
    /// Only in the static config; changing it needs a restart.
    ReadOnly,
    /// Dynamic, but only for one broker (`--entity-name <id>`).
    PerBroker,
    /// Dynamic per broker or as the cluster-wide default.
    ClusterWide,
}

impl DynamicMode {
    /// Kafka's documentation wording.
    pub fn as_str(self) -> &'static str {
        match self {
            DynamicMode::ReadOnly => "read-only",
            DynamicMode::PerBroker => "per-broker",
            DynamicMode::ClusterWide => "cluster-wide",
        }
    }
}

/// How far Skiff honours a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Support {
    /// Skiff acts on the value.
    Implemented,
    /// Accepted and stored for a subsystem being built now (groups); not logged.
    Planned,
    /// Accepted and shown by DescribeConfigs, but Skiff ignores it (logged once).
    NotImplemented,
}

/// One broker-level key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeySpec {
    pub name: &'static str,
    pub config_type: ConfigType,
    /// Kafka's default in DescribeConfigs string form; `None` is Kafka's null / no default.
    pub default: Option<&'static str>,
    pub mode: DynamicMode,
    pub support: Support,
    pub doc: &'static str,
}

impl KeySpec {
    /// Passwords are sensitive: DescribeConfigs returns no value for them.
    pub fn sensitive(&self) -> bool {
        self.config_type == ConfigType::Password
    }

    pub fn read_only(&self) -> bool {
        self.mode == DynamicMode::ReadOnly
    }
}

/// Table-row constructor, kept short so each key fits on one line.
pub(crate) const fn k(
    name: &'static str,
    config_type: ConfigType,
    default: Option<&'static str>,
    mode: DynamicMode,
    support: Support,
    doc: &'static str,
) -> KeySpec {
    KeySpec {
        name,
        config_type,
        default,
        mode,
        support,
        doc,
    }
}

/// Skiff's own broker-level keys: KIP-280 cleaner defaults (broker synonyms of the
/// `compaction.strategy*` topic keys) and the reserved `skiff.` namespace. Sorted by name.
#[rustfmt::skip]
pub static SKIFF_BROKER_KEYS: &[KeySpec] = &[
    k("log.cleaner.compaction.strategy", ConfigType::String, Some("offset"), DynamicMode::ClusterWide, Support::Implemented, "Default compaction winner rule: offset, timestamp, header or header:<name> (KIP-280)."),
    k("log.cleaner.compaction.strategy.header", ConfigType::String, None, DynamicMode::ClusterWide, Support::Implemented, "Default header whose 8-byte value orders records under the header strategy."),
    k("skiff.admin.listener", ConfigType::String, None, DynamicMode::ReadOnly, Support::Implemented, "host:port of the admin HTTP port (/livez, /readyz, /api/v1/...; port 0 = ephemeral); empty = not bound."),
    k("skiff.log.scrub.backoff.ms", ConfigType::Long, Some("30000"), DynamicMode::ClusterWide, Support::Implemented, "How long the log scrubber sleeps when no sealed segment is due for verification."),
    k("skiff.log.scrub.enable", ConfigType::Boolean, Some("true"), DynamicMode::ClusterWide, Support::Implemented, "Run the background log scrubber: verifies every sealed segment's CRCs and quarantines corrupt batches (CORRUPT_MESSAGE to consumers, logged at ERROR, shown in the admin view)."),
    k("skiff.log.scrub.interval.ms", ConfigType::Long, Some("604800000"), DynamicMode::ClusterWide, Support::Implemented, "A sealed segment is verified again this long after its last verification (progress survives restarts)."),
    k("skiff.log.scrub.io.max.bytes.per.second", ConfigType::Double, Some("1.048576E7"), DynamicMode::ClusterWide, Support::Implemented, "The most bytes per second the log scrubber reads (it runs at nice 10)."),
    k("skiff.metadata.log.snapshot.keep.entries", ConfigType::Long, Some("1000"), DynamicMode::ReadOnly, Support::Implemented, "Metadata log entries kept behind the newest metadata snapshot (a voter that lags by fewer is sent entries, by more the snapshot)."),
    k("skiff.metrics.partition.series.enable", ConfigType::Boolean, Some("false"), DynamicMode::ClusterWide, Support::Implemented, "Per-partition series on the admin port's /metrics (log end offset, high watermark, size, consumer-group lag per partition); off by default to bound cardinality. Read at every scrape."),
];

/// Looks a broker key up in Kafka's table, then Skiff's.
pub fn broker_key(name: &str) -> Option<&'static KeySpec> {
    find(BROKER_KEYS, name).or_else(|| find(SKIFF_BROKER_KEYS, name))
}

/// Looks a topic key up (Kafka's and Skiff's topic keys share one table).
pub fn topic_key(name: &str) -> Option<&'static TopicKeySpec> {
    TOPIC_KEYS
        .binary_search_by(|k| k.name.cmp(name))
        .ok()
        .and_then(|i| TOPIC_KEYS.get(i))
}

fn find(table: &'static [KeySpec], name: &str) -> Option<&'static KeySpec> {
    table
        .binary_search_by(|k| k.name.cmp(name))
        .ok()
        .and_then(|i| table.get(i))
}

/// All broker keys, Kafka's first then Skiff's.
pub fn all_broker_keys() -> impl Iterator<Item = &'static KeySpec> {
    BROKER_KEYS.iter().chain(SKIFF_BROKER_KEYS.iter())
}

/// Levenshtein distance, used for "did you mean" suggestions.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The closest known name to `name` among `candidates`, if it is close enough to be a typo
/// (distance at most a third of the name's length, and at least 1..=3 edits).
pub fn did_you_mean<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).clamp(1, 3);
    candidates
        .map(|c| (edit_distance(name, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, c)| (*d, c.len()))
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted_unique(names: &[&str]) {
        for w in names.windows(2) {
            assert!(w[0] < w[1], "not sorted/unique: {} then {}", w[0], w[1]);
        }
    }

    #[test]
    fn tables_are_sorted_and_unique() {
        sorted_unique(&BROKER_KEYS.iter().map(|k| k.name).collect::<Vec<_>>());
        sorted_unique(&SKIFF_BROKER_KEYS.iter().map(|k| k.name).collect::<Vec<_>>());
        sorted_unique(&TOPIC_KEYS.iter().map(|k| k.name).collect::<Vec<_>>());
        for k in SKIFF_BROKER_KEYS {
            assert!(
                find(BROKER_KEYS, k.name).is_none(),
                "{} shadows Kafka",
                k.name
            );
        }
    }

    #[test]
    fn every_topic_synonym_is_a_broker_key() {
        for t in TOPIC_KEYS {
            for s in t.synonyms {
                assert!(broker_key(s.name).is_some(), "{} -> {}", t.name, s.name);
            }
        }
    }

    #[test]
    fn passwords_are_sensitive() {
        let k = broker_key("ssl.keystore.password").unwrap();
        assert!(k.sensitive());
        assert!(!broker_key("log.dirs").unwrap().sensitive());
    }

    #[test]
    fn did_you_mean_finds_typos() {
        let names = || all_broker_keys().map(|k| k.name);
        assert_eq!(
            did_you_mean("log.retention.hour", names()),
            Some("log.retention.hours")
        );
        assert_eq!(
            did_you_mean("num.partition", names()),
            Some("num.partitions")
        );
        assert_eq!(did_you_mean("completely.different.thing", names()), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
