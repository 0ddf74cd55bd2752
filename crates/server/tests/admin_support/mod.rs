//! Helpers of the admin e2e tests: an in-process server (the workspace's in-process harness,
//! `skiff_testkit::in_process::start_on`) with a live (dynamic) configuration, as the binary
//! runs, and one-call wrappers of DescribeConfigs / AlterConfigs /
//! IncrementalAlterConfigs.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use crate::common::Client;
use skiff_config::{BrokerConfig, ConfigSources};
use skiff_protocol::*;
use skiff_server::{LiveConfig, Server};
use skiff_types::TopicPartition;

pub const TOPIC: i8 = 2;
pub const BROKER: i8 = 4;
pub const SET: i8 = 0;
pub const DELETE: i8 = 1;
pub const APPEND: i8 = 2;
pub const SUBTRACT: i8 = 3;

/// A server on `dir` with a live configuration built from `overrides`.
pub async fn start_live(dir: &Path, overrides: &[&str]) -> (Server, std::net::SocketAddr) {
    let data = dir.join("data");
    let mut all = vec![format!("log.dirs={}", data.display())];
    all.extend(overrides.iter().map(|s| s.to_string()));
    let cfg = BrokerConfig::load(ConfigSources {
        overrides: all,
        ..ConfigSources::default()
    })
    .unwrap();
    skiff_testkit::in_process::start_on(&data, |_| {}, Arc::new(LiveConfig::new(cfg))).await
}

pub async fn describe(
    c: &mut Client,
    version: i16,
    resource_type: i8,
    name: &str,
    keys: Option<&[&str]>,
) -> DescribeConfigsResult {
    let req = DescribeConfigsRequest {
        resources: vec![DescribeConfigsResource {
            resource_type,
            resource_name: name.into(),
            configuration_keys: keys.map(|k| k.iter().map(|s| s.to_string()).collect()),
        }],
        include_synonyms: true,
        include_documentation: version >= 3,
    };
    match c.call(version, req).await {
        ResponseBody::DescribeConfigs(r) => r.results.into_iter().next().unwrap(),
        other => panic!("unexpected {other:?}"),
    }
}

pub fn entry<'a>(r: &'a DescribeConfigsResult, name: &str) -> &'a DescribeConfigsResourceResult {
    r.configs
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("{name} not described"))
}

/// Legacy AlterConfigs of one resource: (error code, message).
pub async fn alter(
    c: &mut Client,
    resource_type: i8,
    name: &str,
    configs: &[(&str, Option<&str>)],
    validate_only: bool,
) -> (i16, Option<String>) {
    let req = AlterConfigsRequest {
        resources: vec![AlterConfigsRequestAlterConfigsResource {
            resource_type,
            resource_name: name.into(),
            configs: configs
                .iter()
                .map(|(k, v)| AlterConfigsRequestAlterableConfig {
                    name: (*k).into(),
                    value: v.map(str::to_string),
                })
                .collect(),
        }],
        validate_only,
    };
    match c.call(2, req).await {
        ResponseBody::AlterConfigs(r) => {
            let r = &r.responses[0];
            (r.error_code, r.error_message.clone())
        }
        other => panic!("unexpected {other:?}"),
    }
}

/// IncrementalAlterConfigs of one resource: (error code, message).
pub async fn incremental(
    c: &mut Client,
    resource_type: i8,
    name: &str,
    ops: &[(&str, i8, Option<&str>)],
    validate_only: bool,
) -> (i16, Option<String>) {
    let req = IncrementalAlterConfigsRequest {
        resources: vec![IncrementalAlterConfigsRequestAlterConfigsResource {
            resource_type,
            resource_name: name.into(),
            configs: ops
                .iter()
                .map(|(k, op, v)| IncrementalAlterConfigsRequestAlterableConfig {
                    name: (*k).into(),
                    config_operation: *op,
                    value: v.map(str::to_string),
                })
                .collect(),
        }],
        validate_only,
    };
    match c.call(1, req).await {
        ResponseBody::IncrementalAlterConfigs(r) => {
            let r = &r.responses[0];
            (r.error_code, r.error_message.clone())
        }
        other => panic!("unexpected {other:?}"),
    }
}

pub fn live_retention_ms(server: &Server, topic: &str) -> i64 {
    let log = server
        .broker()
        .replicas
        .log_manager()
        .get(&TopicPartition::new(topic, 0))
        .unwrap();
    log.lock().config().retention_ms
}
