//! The configuration reference (`docs/configuration.md`), rendered from the key catalogue.
//!
//! Mental model: [`render_reference`] is a pure function of the static tables in [`crate::keys`]
//! and of the validators in [`crate::validate`]; it reads no file, no clock and no environment,
//! so the same catalogue always gives byte-identical Markdown. `cargo run -p xtask --
//! config-reference` writes the result to `docs/configuration.md`, and a test fails when the
//! file and the rendering differ.
//!
//! "Valid values" are not a second table: they are found by asking the validators about
//! out-of-range probes (the type's extremes for numbers, a nonsense word for strings) and
//! quoting the reason they give ("Value must be at least 1", "String must be one of: ..."), so
//! the reference says what the broker enforces and nothing else. Broker keys are grouped by
//! area from their name prefix ([`SECTIONS`], first match wins); Skiff's own broker keys,
//! topic keys and group keys ([`crate::group`]) have sections of their own. Invariant: every catalogue key appears exactly once
//! (tested).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::broker::BrokerConfig;
use crate::group;
use crate::keys::{self, ConfigType, DynamicMode, KeySpec, Support, TopicKeySpec};
use crate::validate;

/// The command that regenerates `docs/configuration.md`.
pub const REGENERATE: &str = "cargo run -p xtask -- config-reference";

/// The reference's path relative to the repository root.
pub const REFERENCE_PATH: &str = "docs/configuration.md";

/// Broker key areas: (section title, name prefixes). The first section with a matching
/// prefix takes the key; keys matching none land in "General".
const SECTIONS: &[(&str, &[&str])] = &[
    (
        "Node identity, roles and the KRaft quorum",
        &[
            "node.id",
            "broker.id",
            "broker.rack",
            "process.roles",
            "controller.",
            "broker.heartbeat",
            "broker.session",
            "initial.broker",
            "metadata.",
        ],
    ),
    (
        "Listeners and connections",
        &[
            "listeners",
            "advertised.listeners",
            "listener.",
            "inter.broker.listener.name",
            "early.start.listeners",
            "connections.",
            "max.connection",
            "socket.",
            "num.network.threads",
            "queued.max.",
        ],
    ),
    (
        "Security (TLS, SASL, authorization)",
        &[
            "ssl.",
            "sasl.",
            "security.",
            "authorizer.",
            "principal.",
            "delegation.token.",
            "connection.failed.authentication",
            "password.encoder.",
        ],
    ),
    ("Log cleaner (compaction)", &["log.cleaner."]),
    (
        "Logs, segments, retention and flushing",
        &[
            "log.",
            "num.recovery.threads",
            "message.max.bytes",
            "compression.",
        ],
    ),
    (
        "Replication",
        &[
            "replica.",
            "num.replica",
            "min.insync.replicas",
            "unclean.leader",
            "auto.leader",
            "leader.imbalance",
            "default.replication.factor",
        ],
    ),
    (
        "Topics",
        &[
            "num.partitions",
            "auto.create.topics",
            "delete.topic",
            "create.topic.policy",
            "alter.config.policy",
        ],
    ),
    (
        "Consumer groups and offsets",
        &["group.", "offset", "consumer."],
    ),
    (
        "Transactions and producer ids",
        &["transaction", "producer.", "add.partitions.to.txn"],
    ),
    ("Share groups", &["share."]),
    (
        "Quotas",
        &[
            "quota.",
            "client.quota",
            "controller.quota",
            "replication.quota",
            "alter.log.dirs.replication.quota",
        ],
    ),
    (
        "Metrics and telemetry",
        &["metric", "kafka.metrics", "telemetry."],
    ),
    ("Tiered storage", &["remote."]),
];

const GENERAL: &str = "General";

/// The section a Kafka broker key belongs to.
fn section_of(name: &str) -> &'static str {
    SECTIONS
        .iter()
        .find(|(_, prefixes)| prefixes.iter().any(|p| name.starts_with(p)))
        .map_or(GENERAL, |(title, _)| title)
}

/// Renders the whole reference (Markdown, `\n` line ends, one trailing newline).
pub fn render_reference() -> String {
    let mut out = String::new();
    intro(&mut out);
    out.push_str("## Broker keys (Apache Kafka 4.1)\n\n");
    out.push_str(
        "Every broker key of Kafka 4.1 (keys Kafka marks internal are left out), by area.\n\n",
    );
    let titles = SECTIONS.iter().map(|(t, _)| *t).chain([GENERAL]);
    for title in titles {
        let rows: Vec<&KeySpec> = keys::BROKER_KEYS
            .iter()
            .filter(|k| section_of(k.name) == title)
            .collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(out, "### {title}\n");
        broker_table(&mut out, &rows);
    }
    out.push_str("## Skiff broker keys\n\n");
    out.push_str(
        "Broker keys Skiff adds: the `skiff.` namespace and the broker defaults of the KIP-280 \
         compaction strategy.\n\n",
    );
    let skiff: Vec<&KeySpec> = keys::SKIFF_BROKER_KEYS.iter().collect();
    broker_table(&mut out, &skiff);
    out.push_str("## Topic keys\n\n");
    out.push_str(
        "Set per topic at creation (`CreateTopics` configs, `skiff topic create --config K=V`) \
         or later with `IncrementalAlterConfigs` (`kafka-configs.sh --alter --entity-type \
         topics`); every topic key can be changed at runtime. A topic without an override takes \
         its value from the first broker key of the \"Broker default\" column that is set, else \
         from the default shown here.\n\n",
    );
    out.push_str("### Apache Kafka topic keys\n\n");
    let kafka: Vec<&TopicKeySpec> = keys::TOPIC_KEYS.iter().filter(|t| !t.skiff).collect();
    topic_table(&mut out, &kafka);
    out.push_str("### Skiff topic keys\n\n");
    let own: Vec<&TopicKeySpec> = keys::TOPIC_KEYS.iter().filter(|t| t.skiff).collect();
    topic_table(&mut out, &own);
    group_section(&mut out);
    out
}

/// Group keys (ConfigResource GROUP): default and valid values as the broker's defaults give
/// them (`describe_group` and `validate_group_configs` over [`BrokerConfig::defaults`], which
/// reads no environment).
fn group_section(out: &mut String) {
    out.push_str(
        "## Group keys

",
    );
    out.push_str(
        "Set per group id with `IncrementalAlterConfigs` on a GROUP resource \
         (`kafka-configs.sh --alter --entity-type groups --entity-name G`), even before the \
         group exists. An unset key takes the value of its broker key, and a set value must \
         stay within the broker's `group.*.min/max` bounds. Only the `consumer.*` keys change \
         behaviour in Skiff (the KIP-848 coordinator); the `share.*` and `streams.*` keys are \
         stored and described for group types Skiff does not have yet.\n\n",
    );
    out.push_str(
        "| Key | Description | Type | Default | Valid values | Broker default | Skiff |\n",
    );
    out.push_str("|---|---|---|---|---|---|---|\n");
    let broker = BrokerConfig::defaults().ok();
    let described = broker
        .as_ref()
        .map(|b| group::describe_group(b, &BTreeMap::new()))
        .unwrap_or_default();
    for k in &group::GROUP_KEYS {
        let default = described
            .iter()
            .find(|e| e.name == k.name)
            .and_then(|e| e.value.as_deref());
        let valid = match &broker {
            Some(b) => valid_values(k.config_type, |v| {
                let set = BTreeMap::from([(k.name.to_string(), v.to_string())]);
                group::validate_group_configs(b, &set)
                    .err()
                    .map(|e| e.to_string())
            }),
            None => String::new(),
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} | {} |",
            k.name,
            cell(k.documentation),
            k.config_type.kafka_name(),
            default_cell(default),
            cell(&valid),
            if k.broker_default.is_empty() {
                "-".to_string()
            } else {
                format!("`{}`", k.broker_default)
            },
            if k.name.starts_with("consumer.") {
                "yes"
            } else {
                "planned"
            },
        );
    }
    out.push('\n');
}

fn intro(out: &mut String) {
    let broker = keys::BROKER_KEYS.len() + keys::SKIFF_BROKER_KEYS.len();
    let topic = keys::TOPIC_KEYS.len();
    let group = group::GROUP_KEYS.len();
    let _ = write!(
        out,
        "<!-- @generated by `{REGENERATE}` from crates/config/src/keys/; do not edit. -->\n\
         # Configuration reference\n\n\
         Skiff reads Kafka's configuration names. This page lists all {broker} broker keys, \
         {topic} topic keys and {group} group keys the broker knows, with their type, default, the values the broker \
         accepts, whether they can be changed at runtime, and whether Skiff acts on them. It is \
         generated from the key catalogue (`crates/config/src/keys/`) and checked by a test, so \
         it matches the code; regenerate it with `{REGENERATE}`.\n\n\
         ## Where configuration comes from\n\n\
         `skiff serve` merges, highest precedence first: `--override KEY=VALUE` (repeatable), \
         the environment (`KAFKA_LOG_DIRS` -> `log.dirs`; `_` is `.`, `__` is `_`, `___` is `-`; \
         the `KAFKA_CFG_` prefix works too), the `--config FILE` (Kafka's `server.properties` \
         format), Skiff's shipped single-node defaults (`listeners=PLAINTEXT://127.0.0.1:9092`, \
         `log.dirs=./skiff-data`, `node.id=1`, replication factor 1 for the internal topics), \
         then the defaults below. An unknown key or an invalid value in the file or an override \
         stops the broker with exit code 2 and Kafka's message (`Invalid value X for \
         configuration K: ...`, with a \"did you mean\" for typos); an unknown `KAFKA_*` \
         variable is logged and ignored. The startup log prints every setting that differs \
         from its default, with its source.\n\n\
         ## Columns\n\n\
         - **Type**: Kafka's type (`INT` is 32-bit, `SHORT` 16-bit, `LONG` 64-bit; `LIST` is \
         comma-separated; `PASSWORD` values are never shown by DescribeConfigs or the startup \
         log).\n\
         - **Default**: as DescribeConfigs reports it; *none* is Kafka's null.\n\
         - **Valid values**: what the broker's validation enforces beyond the type.\n\
         - **Update mode**: `read-only` needs a restart; `per-broker` can be changed at runtime \
         for one broker (`kafka-configs.sh --alter --entity-type brokers --entity-name ID`); \
         `cluster-wide` also as the cluster default (`--entity-default`).\n\
         - **Skiff**: `yes` = Skiff acts on the value; `planned` = accepted and stored for a \
         subsystem not built yet; `ignored` = accepted and shown by DescribeConfigs, but Skiff \
         does not act on it (logged once at startup when set).\n\n\
         Some keys are refused at startup when their value asks for protection Skiff does not \
         have (a Java plugin class, an authorizer other than Kafka's StandardAuthorizer, a SASL \
         listener offering only GSSAPI, a topic or config policy class, \
         `delete.topic.enable=false`, ...): ignoring them could leave the broker less safe than \
         configured. `crates/config/src/security.rs` lists them and why.\n\n"
    );
}

fn broker_table(out: &mut String, rows: &[&KeySpec]) {
    out.push_str("| Key | Description | Type | Default | Valid values | Update mode | Skiff |\n");
    out.push_str("|---|---|---|---|---|---|---|\n");
    for k in rows {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} | {} |",
            k.name,
            cell(k.doc),
            k.config_type.kafka_name(),
            default_cell(k.default),
            cell(&broker_valid_values(k)),
            mode_cell(k.mode),
            support_cell(k.support),
        );
    }
    out.push('\n');
}

fn topic_table(out: &mut String, rows: &[&TopicKeySpec]) {
    out.push_str(
        "| Key | Description | Type | Default | Valid values | Broker default | Skiff |\n",
    );
    out.push_str("|---|---|---|---|---|---|---|\n");
    for t in rows {
        let synonyms = t
            .synonyms
            .iter()
            .map(|s| {
                if s.factor == 1 {
                    format!("`{}`", s.name)
                } else {
                    format!("`{}` (x{})", s.name, s.factor)
                }
            })
            .collect::<Vec<_>>()
            .join(", ");
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} | {} |",
            t.name,
            cell(t.doc),
            t.config_type.kafka_name(),
            default_cell(t.default),
            cell(&topic_valid_values(t)),
            if synonyms.is_empty() {
                "-".to_string()
            } else {
                synonyms
            },
            if t.implemented { "yes" } else { "ignored" },
        );
    }
    out.push('\n');
}

fn mode_cell(mode: DynamicMode) -> &'static str {
    mode.as_str()
}

fn support_cell(support: Support) -> &'static str {
    match support {
        Support::Implemented => "yes",
        Support::Planned => "planned",
        Support::NotImplemented => "ignored",
    }
}

fn default_cell(default: Option<&str>) -> String {
    match default {
        None => "*none*".to_string(),
        Some("") => "`\"\"`".to_string(),
        Some(d) => format!("`{}`", d.replace('|', "\\|")),
    }
}

/// A Markdown table cell: pipes escaped, line breaks flattened.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// What the broker's validation says about probes outside a key's range.
fn broker_valid_values(k: &KeySpec) -> String {
    valid_values(k.config_type, |v| {
        validate::check_broker_value(k, v)
            .err()
            .map(|e| e.to_string())
    })
}

fn topic_valid_values(t: &TopicKeySpec) -> String {
    valid_values(t.config_type, |v| {
        validate::check_topic_value(t.name, v)
            .err()
            .map(|e| e.to_string())
    })
}

/// Probes a validator and quotes its range or enumeration reasons; "" when it states none.
fn valid_values(t: ConfigType, reject: impl Fn(&str) -> Option<String>) -> String {
    let probes: &[&str] = match t {
        ConfigType::Boolean => return "`true`, `false`".to_string(),
        ConfigType::Short => &["-32768", "32767"],
        ConfigType::Int => &["-2147483648", "2147483647"],
        ConfigType::Long => &["-9223372036854775808", "9223372036854775807"],
        ConfigType::Double => &["-1.0E300", "1.0E300"],
        ConfigType::String | ConfigType::List => &["\u{1}?"],
        ConfigType::Class | ConfigType::Password => return String::new(),
    };
    let mut reasons: Vec<String> = Vec::new();
    for p in probes {
        let Some(message) = reject(p) else { continue };
        let Some(reason) = reason_of(&message) else {
            continue;
        };
        if !reasons.contains(&reason) {
            reasons.push(reason);
        }
    }
    reasons.join("; ")
}

/// The reason part of Kafka's "Invalid value X for configuration K: reason", kept only when it
/// states a range or an enumeration (a parse failure of a nonsense probe says nothing useful).
fn reason_of(message: &str) -> Option<String> {
    let rest = message.split_once(" for configuration ")?.1;
    let reason = rest.split_once(": ")?.1.trim();
    const STATES_RANGE: &[&str] = &["at least", "no more than", "range", "between", "one of"];
    if STATES_RANGE.iter().any(|s| reason.contains(s)) {
        Some(reason.to_string())
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_appears_exactly_once() {
        let doc = render_reference();
        for name in keys::all_broker_keys()
            .map(|k| k.name)
            .chain(keys::TOPIC_KEYS.iter().map(|t| t.name))
        {
            let row = format!("| `{name}` |");
            let n = doc.lines().filter(|l| l.starts_with(&row)).count();
            // A key that is both a broker and a topic key (e.g. min.insync.replicas) has a row
            // in each part.
            let want = usize::from(keys::broker_key(name).is_some())
                + usize::from(keys::topic_key(name).is_some());
            assert_eq!(n, want, "{name}");
        }
    }

    #[test]
    fn group_keys_have_rows_with_defaults() {
        let doc = render_reference();
        for k in &group::GROUP_KEYS {
            assert!(doc.contains(&format!("| `{}` |", k.name)), "{}", k.name);
        }
        let row = doc
            .lines()
            .find(|l| l.starts_with("| `consumer.session.timeout.ms` |"))
            .unwrap_or_default();
        assert!(row.contains("| INT | `45000` |"), "{row}");
        assert!(
            row.ends_with("| `group.consumer.session.timeout.ms` | yes |"),
            "{row}"
        );
    }

    #[test]
    fn rendering_is_deterministic() {
        assert_eq!(render_reference(), render_reference());
    }

    #[test]
    fn rows_show_type_default_mode_support_and_validation() {
        let doc = render_reference();
        let row = |name: &str| {
            doc.lines()
                .find(|l| l.starts_with(&format!("| `{name}` |")))
                .unwrap_or_default()
                .to_string()
        };
        let r = row("num.partitions");
        assert!(
            r.contains("| INT | `1` | Value must be at least 1 | read-only | yes |"),
            "{r}"
        );
        let r = row("log.retention.ms");
        assert!(r.contains("| cluster-wide | yes |"), "{r}");
        let r = row("ssl.keystore.password");
        assert!(
            r.contains("| PASSWORD | *none* |  | per-broker | ignored |"),
            "{r}"
        );
        let r = row("group.share.max.size");
        assert!(r.ends_with("| planned |"), "{r}");
        let r = row("compression.type");
        assert!(
            r.contains("String must be one of: uncompressed, zstd"),
            "{r}"
        );
        let r = row("auto.create.topics.enable");
        assert!(r.contains("`true`, `false`"), "{r}");
        let r = row("retention.ms");
        assert!(
            r.contains("`log.retention.ms`, `log.retention.minutes` (x60000)"),
            "{r}"
        );
    }

    #[test]
    fn sections_table() {
        for (name, section) in [
            ("node.id", "Node identity, roles and the KRaft quorum"),
            ("listeners", "Listeners and connections"),
            ("ssl.key.password", "Security (TLS, SASL, authorization)"),
            ("log.cleaner.threads", "Log cleaner (compaction)"),
            (
                "log.segment.bytes",
                "Logs, segments, retention and flushing",
            ),
            ("replica.lag.time.max.ms", "Replication"),
            (
                "offsets.topic.num.partitions",
                "Consumer groups and offsets",
            ),
            (
                "transaction.max.timeout.ms",
                "Transactions and producer ids",
            ),
            ("background.threads", GENERAL),
        ] {
            assert_eq!(section_of(name), section, "{name}");
        }
    }

    #[test]
    fn reason_keeps_only_ranges_and_enumerations() {
        assert_eq!(
            reason_of("Invalid value 0 for configuration x.y: Value must be at least 1"),
            Some("Value must be at least 1".into())
        );
        assert_eq!(
            reason_of("Invalid value ? for configuration x: Not a number of type INT"),
            None
        );
        assert_eq!(reason_of("something else"), None);
    }
}
