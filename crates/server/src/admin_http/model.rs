//! The admin API's JSON documents and the pure decisions behind them.
//!
//! Mental model: every document the admin port serves is a plain serde struct defined here,
//! so the server (which serialises) and the `skiff admin` CLI (which deserialises) share one
//! definition of each shape. Field names are snake_case and stable: scripts read them.
//! [`readiness`] turns a few facts about the server into 200/503 and its reasons;
//! [`parse_bind`] reads the `skiff.admin.listener` value. Nothing here does I/O.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use skiff_types::TopicPartition;

/// `GET /livez` and a ready `GET /readyz`: `{"status":"ok"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    pub status: String,
    /// Why the server is not ready (absent when it is).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
}

impl Status {
    pub fn ok() -> Self {
        Self {
            status: "ok".into(),
            reasons: Vec::new(),
        }
    }
}

/// What readiness depends on, sampled at request time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadinessFacts {
    /// Broker state is open: the metadata log replayed and every partition log loaded.
    pub logs_and_metadata_loaded: bool,
    /// Every Kafka listener is bound and accepting.
    pub listeners_bound: bool,
    /// Shutdown has begun (listeners stop accepting, connections drain).
    pub shutting_down: bool,
    /// issue 12: log dirs offline after a failed write (their partitions answer
    /// KAFKA_STORAGE_ERROR; the rest serve).
    pub offline_log_dirs: usize,
}

/// Reason strings (stable: probes and scripts may match on them).
pub mod reason {
    pub const LOADING: &str = "logs and metadata are loading";
    pub const LISTENERS: &str = "kafka listeners are not bound yet";
    pub const SHUTTING_DOWN: &str = "shutting down";
    pub const LOG_DIR_OFFLINE: &str = "a log dir is offline";
}

/// `/readyz`: `Ok` when every fact is good, else the `not_ready` document with every reason.
pub fn readiness(f: ReadinessFacts) -> Result<Status, Status> {
    let mut reasons = Vec::new();
    if f.shutting_down {
        reasons.push(reason::SHUTTING_DOWN.to_string());
    }
    if !f.logs_and_metadata_loaded {
        reasons.push(reason::LOADING.to_string());
    }
    if !f.listeners_bound {
        reasons.push(reason::LISTENERS.to_string());
    }
    if f.offline_log_dirs > 0 {
        reasons.push(reason::LOG_DIR_OFFLINE.to_string());
    }
    if reasons.is_empty() {
        Ok(Status::ok())
    } else {
        Err(Status {
            status: "not_ready".into(),
            reasons,
        })
    }
}

/// One hosted partition as `GET /api/v1/partitions` lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionSummary {
    pub topic: String,
    pub partition: i32,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    pub high_watermark: i64,
    pub size_bytes: u64,
    pub segment_count: usize,
    /// issue 12: quarantined (corrupt) offset ranges; details in the `integrity` section.
    #[serde(default)]
    pub quarantined_ranges: usize,
}

impl PartitionSummary {
    pub fn topic_partition(&self) -> TopicPartition {
        TopicPartition::new(self.topic.clone(), self.partition)
    }
}

/// `GET /api/v1/partitions`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionList {
    /// Sorted by topic, then partition.
    pub partitions: Vec<PartitionSummary>,
}

/// `GET /api/v1/partitions/{topic}/{partition}`: the summary fields plus one entry per
/// section provider that had something to say (see `sections.rs`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartitionDetail {
    #[serde(flatten)]
    pub summary: PartitionSummary,
    /// Section name -> that provider's document, in name order.
    pub sections: BTreeMap<String, serde_json::Value>,
}

/// Every error the admin API answers: a machine-readable code and a sentence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiError {
    /// `not_found`, `bad_request`, `not_ready` or `internal`.
    pub error: String,
    pub message: String,
}

impl ApiError {
    pub fn new(error: &str, message: impl Into<String>) -> Self {
        Self {
            error: error.into(),
            message: message.into(),
        }
    }
}

/// Parses `skiff.admin.listener`: `host:port` (`[v6]:port` for IPv6; empty host = every
/// interface; port 0 = ephemeral). Empty or blank = no admin port (`Ok(None)`).
pub fn parse_bind(value: &str) -> Result<Option<(String, u16)>, String> {
    let v = value.trim();
    if v.is_empty() {
        return Ok(None);
    }
    let bad = || format!("skiff.admin.listener must be host:port (e.g. 127.0.0.1:9644), got {v:?}");
    let (host, port) = v.rsplit_once(':').ok_or_else(bad)?;
    let port: u16 = port.parse().map_err(|_| bad())?;
    let host = if let Some(inner) = host.strip_prefix('[') {
        inner.strip_suffix(']').ok_or_else(bad)?
    } else if host.contains(':') {
        // An unbracketed IPv6 address: ambiguous with the port separator.
        return Err(bad());
    } else {
        host
    };
    if host.contains(['/', ' ', '[', ']']) {
        return Err(bad());
    }
    let host = if host.is_empty() { "0.0.0.0" } else { host };
    Ok(Some((host.to_string(), port)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn summary() -> PartitionSummary {
        PartitionSummary {
            topic: "orders".into(),
            partition: 2,
            log_start_offset: 5,
            log_end_offset: 42,
            high_watermark: 40,
            size_bytes: 4096,
            segment_count: 3,
            quarantined_ranges: 0,
        }
    }

    #[test]
    fn readiness_table() {
        let ok = ReadinessFacts {
            logs_and_metadata_loaded: true,
            listeners_bound: true,
            shutting_down: false,
            offline_log_dirs: 0,
        };
        let cases: &[(ReadinessFacts, &[&str])] = &[
            (ok, &[]),
            (
                ReadinessFacts::default(),
                &[reason::LOADING, reason::LISTENERS],
            ),
            (
                ReadinessFacts {
                    listeners_bound: false,
                    ..ok
                },
                &[reason::LISTENERS],
            ),
            (
                ReadinessFacts {
                    shutting_down: true,
                    ..ok
                },
                &[reason::SHUTTING_DOWN],
            ),
            (
                ReadinessFacts {
                    offline_log_dirs: 1,
                    ..ok
                },
                &[reason::LOG_DIR_OFFLINE],
            ),
        ];
        for (facts, reasons) in cases {
            match readiness(*facts) {
                Ok(s) => {
                    assert!(reasons.is_empty(), "{facts:?}");
                    assert_eq!(serde_json::to_value(s).unwrap(), json!({"status": "ok"}));
                }
                Err(s) => {
                    assert_eq!(s.reasons, *reasons, "{facts:?}");
                    assert_eq!(
                        serde_json::to_value(&s).unwrap(),
                        json!({"status": "not_ready", "reasons": reasons})
                    );
                }
            }
        }
    }

    #[test]
    fn partition_list_shape() {
        let doc = PartitionList {
            partitions: vec![summary()],
        };
        assert_eq!(
            serde_json::to_value(&doc).unwrap(),
            json!({"partitions": [{
                "topic": "orders", "partition": 2, "log_start_offset": 5, "log_end_offset": 42,
                "high_watermark": 40, "size_bytes": 4096, "segment_count": 3,
                "quarantined_ranges": 0
            }]})
        );
        let back: PartitionList =
            serde_json::from_value(serde_json::to_value(&doc).unwrap()).unwrap();
        assert_eq!(back, doc);
    }

    #[test]
    fn partition_detail_flattens_the_summary_and_keeps_sections() {
        let doc = PartitionDetail {
            summary: summary(),
            sections: [("producers".to_string(), json!({"active": 1}))].into(),
        };
        let v = serde_json::to_value(&doc).unwrap();
        assert_eq!(v["topic"], "orders");
        assert_eq!(v["high_watermark"], 40);
        assert_eq!(v["sections"], json!({"producers": {"active": 1}}));
        let back: PartitionDetail = serde_json::from_value(v).unwrap();
        assert_eq!(back, doc);
        assert_eq!(
            back.summary.topic_partition(),
            TopicPartition::new("orders", 2)
        );
    }

    #[test]
    fn error_shape() {
        assert_eq!(
            serde_json::to_value(ApiError::new("not_found", "no such partition")).unwrap(),
            json!({"error": "not_found", "message": "no such partition"})
        );
    }

    #[test]
    fn bind_values() {
        let some = |h: &str, p| Ok(Some((h.to_string(), p)));
        assert_eq!(parse_bind(""), Ok(None));
        assert_eq!(parse_bind("  "), Ok(None));
        assert_eq!(parse_bind("127.0.0.1:9644"), some("127.0.0.1", 9644));
        assert_eq!(parse_bind("localhost:0"), some("localhost", 0));
        assert_eq!(parse_bind(":9644"), some("0.0.0.0", 9644));
        assert_eq!(parse_bind("[::1]:9644"), some("::1", 9644));
        for bad in [
            "9644",
            "host:",
            "host:port",
            "host:70000",
            "::1:9644",
            "[::1:9644",
            "http://h:1",
        ] {
            assert!(parse_bind(bad).is_err(), "{bad}");
        }
    }
}
