//! `skiff doctor`: checks a bootstrap address the way a Kafka client uses it and says what to
//! fix.
//!
//! Mental model: a client resolves the bootstrap host, connects, asks ApiVersions and Metadata,
//! then connects to each broker at the address the broker ADVERTISES (not the bootstrap
//! address). Most "works with kcat, fails in my app" reports are the last step: an advertised
//! listener that is not reachable from where the client runs. The doctor walks the same steps:
//! per bootstrap address DNS, TCP (with the connect time), the protocol (ApiVersions; when it
//! fails, a raw probe tells HTTP or TLS apart from silence), the APIs clients need; then
//! Metadata; then each broker's advertised host:port (DNS, TCP, ApiVersions); then the internal
//! topics' replication against the broker count. Each check is OK, WARN or FAIL with a fix.
//! Invariants: exit 1 exactly when a check FAILed; a step that cannot run because an earlier one
//! failed is not reported as passing; a bootstrap address that fails while another answers is
//! a WARN (clients try the next one).

use std::io::{Read, Write};
use std::net::{IpAddr, ToSocketAddrs};
use std::process::ExitCode;
use std::time::Duration;

use serde::Serialize;
use skiff_protocol::ApiKey;

use super::client::{Conn, Node, tcp_connect};
use super::output::emit;
use super::{CliError, CliResult, ClientArgs, EXIT_ERROR};

#[derive(clap::Args, Debug)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub client: ClientArgs,
}

/// A check's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Warn,
    Fail,
}

/// One check of `skiff doctor`.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// What was checked: `dns`, `tcp`, `protocol`, `apis`, `metadata`, `advertised`,
    /// `internal_topic`.
    pub check: String,
    /// The address, broker or topic checked.
    pub target: String,
    pub status: Status,
    pub detail: String,
    /// What to do (WARN and FAIL).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// The result of `skiff doctor`.
#[derive(Debug, Serialize)]
pub struct Report {
    pub bootstrap: Vec<String>,
    pub ok: bool,
    pub checks: Vec<Check>,
}

#[derive(Default)]
struct Checks(Vec<Check>);

impl Checks {
    fn push(
        &mut self,
        check: &str,
        target: &str,
        status: Status,
        detail: String,
        fix: Option<String>,
    ) {
        self.0.push(Check {
            check: check.into(),
            target: target.into(),
            status,
            detail,
            fix,
        });
    }
    fn ok(&mut self, check: &str, target: &str, detail: String) {
        self.push(check, target, Status::Ok, detail, None);
    }
    fn warn(&mut self, check: &str, target: &str, detail: String, fix: String) {
        self.push(check, target, Status::Warn, detail, Some(fix));
    }
    fn fail(&mut self, check: &str, target: &str, detail: String, fix: String) {
        self.push(check, target, Status::Fail, detail, Some(fix));
    }
}

/// What answered a Kafka ApiVersions request on a port, judged from the first bytes back.
#[derive(Debug, PartialEq, Eq)]
pub enum Speaker {
    Kafka,
    Http,
    Tls,
    /// Closed or silent.
    Nothing,
    Unknown,
}

/// Classifies the first bytes a server sent back to a Kafka request.
pub fn classify(first: &[u8]) -> Speaker {
    match first {
        [] => Speaker::Nothing,
        [b'H', b'T', b'T', b'P', ..] => Speaker::Http,
        // A TLS record: alert (21) or handshake (22), version 3.x.
        [21 | 22, 3, ..] => Speaker::Tls,
        // A Kafka frame: a positive size, then our correlation id.
        [0, _, _, _, 0, 0, 0x5e, 0x1f, ..] => Speaker::Kafka,
        _ => Speaker::Unknown,
    }
}

/// Sends an ApiVersions v0 frame on a fresh connection and classifies what comes back.
fn probe(addr: &str, timeout: Duration) -> Speaker {
    let Ok(mut s) = tcp_connect(addr, timeout) else {
        return Speaker::Nothing;
    };
    let client_id = b"skiff-doctor";
    let mut frame = Vec::new();
    let body_len = 2 + 2 + 4 + 2 + client_id.len();
    frame.extend_from_slice(&u32::try_from(body_len).unwrap_or(0).to_be_bytes());
    frame.extend_from_slice(&18_i16.to_be_bytes());
    frame.extend_from_slice(&0_i16.to_be_bytes());
    frame.extend_from_slice(&0x5e1f_i32.to_be_bytes());
    frame.extend_from_slice(&u16::try_from(client_id.len()).unwrap_or(0).to_be_bytes());
    frame.extend_from_slice(client_id);
    if s.write_all(&frame).is_err() {
        return Speaker::Nothing;
    }
    let mut buf = [0_u8; 16];
    let mut got = 0;
    while got < 8 {
        match s.read(&mut buf[got..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    classify(&buf[..got])
}

/// The APIs a producer or consumer needs (a missing one breaks clients).
const CLIENT_APIS: &[ApiKey] = &[
    ApiKey::Produce,
    ApiKey::Fetch,
    ApiKey::ListOffsets,
    ApiKey::Metadata,
    ApiKey::OffsetCommit,
    ApiKey::OffsetFetch,
    ApiKey::FindCoordinator,
    ApiKey::JoinGroup,
    ApiKey::Heartbeat,
    ApiKey::LeaveGroup,
    ApiKey::SyncGroup,
    ApiKey::InitProducerId,
];

fn is_loopback(host: &str) -> bool {
    host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

fn host_of(addr: &str) -> &str {
    addr.rsplit_once(':').map_or(addr, |(h, _)| h)
}

/// DNS, TCP and the protocol at `addr`; the connection if all passed.
fn reach(
    checks: &mut Checks,
    addr: &str,
    timeout: Duration,
    advertised_by: Option<i32>,
) -> Option<Conn> {
    let who = |what: &str| match advertised_by {
        Some(id) => format!("broker {id} advertises {addr} but {what}"),
        None => what.to_owned(),
    };
    let advertised_fix = "set advertised.listeners to an address clients can reach".to_owned();
    let fix = |plain: &str| {
        if advertised_by.is_some() {
            advertised_fix.clone()
        } else {
            plain.to_owned()
        }
    };
    let kind = if advertised_by.is_some() {
        "advertised"
    } else {
        "dns"
    };
    match addr.to_socket_addrs() {
        Ok(a) => {
            let list: Vec<String> = a.map(|a| a.ip().to_string()).collect();
            if list.is_empty() {
                checks.fail(
                    kind,
                    addr,
                    who("it resolves to no address"),
                    fix("check the host name"),
                );
                return None;
            }
            if advertised_by.is_none() {
                checks.ok("dns", addr, format!("resolves to {}", list.join(", ")));
            }
        }
        Err(e) => {
            checks.fail(
                kind,
                addr,
                who(&format!("it does not resolve from here ({e})")),
                fix("check the host name in --brokers"),
            );
            return None;
        }
    }
    let clock = skiff_types::Clock::system();
    let started = clock.now();
    match tcp_connect(addr, timeout) {
        Ok(_) => {
            let ms = clock.now().saturating_duration_since(started).as_secs_f64() * 1e3;
            if advertised_by.is_none() {
                checks.ok("tcp", addr, format!("connected in {ms:.1} ms"));
            }
        }
        Err(e) => {
            let kind = if advertised_by.is_some() {
                "advertised"
            } else {
                "tcp"
            };
            checks.fail(
                kind,
                addr,
                who(&format!("nothing answers there ({})", reason(e))),
                fix("start the broker, or fix the port in --brokers (a firewall may block it)"),
            );
            return None;
        }
    }
    match Conn::connect(addr, timeout) {
        Ok(conn) => {
            let detail = format!("speaks Kafka ({} APIs advertised)", conn.apis().len());
            match advertised_by {
                Some(id) => checks.ok(
                    "advertised",
                    addr,
                    format!("broker {id} is reachable at its advertised address and {detail}"),
                ),
                None => checks.ok("protocol", addr, detail),
            }
            Some(conn)
        }
        Err(e) => {
            let (what, fix_text) = match probe(addr, timeout) {
                Speaker::Http => (
                    "an HTTP server answers there, not Kafka".to_owned(),
                    "point --brokers at the Kafka listener (this may be an admin or metrics port)",
                ),
                Speaker::Tls => (
                    "a TLS server answers there".to_owned(),
                    "this listener expects TLS (SSL / SASL_SSL): use a TLS-enabled client, or the plaintext listener",
                ),
                _ => (
                    format!("no Kafka answer ({})", reason(e)),
                    "check that this is a Kafka listener and the broker is healthy",
                ),
            };
            let kind = if advertised_by.is_some() {
                "advertised"
            } else {
                "protocol"
            };
            checks.fail(kind, addr, who(&what), fix(fix_text));
            None
        }
    }
}

fn check_apis(checks: &mut Checks, conn: &Conn) {
    let missing: Vec<&str> = CLIENT_APIS
        .iter()
        .filter(|a| conn.version(**a).is_none())
        .map(|a| a.name())
        .collect();
    if missing.is_empty() {
        checks.ok(
            "apis",
            conn.addr(),
            "every API producers and consumers need is supported at a common version".into(),
        );
    } else {
        checks.fail(
            "apis",
            conn.addr(),
            format!("no common version of {}", missing.join(", ")),
            "upgrade the broker or the client: clients will fail on these requests".into(),
        );
    }
}

/// The internal topics' replication against the live broker count.
fn check_internal(checks: &mut Checks, m: &skiff_protocol::MetadataResponse) {
    let brokers = m.brokers.len();
    for (name, key) in [
        ("__consumer_offsets", "offsets.topic.replication.factor"),
        (
            "__transaction_state",
            "transaction.state.log.replication.factor",
        ),
    ] {
        let Some(t) = m
            .topics
            .iter()
            .find(|t| t.name.as_deref() == Some(name) && t.error_code == 0)
        else {
            checks.ok(
                "internal_topic",
                name,
                "not created yet (created on first use)".into(),
            );
            continue;
        };
        let rf = t
            .partitions
            .iter()
            .map(|p| p.replica_nodes.len())
            .min()
            .unwrap_or(0);
        let leaderless = t.partitions.iter().filter(|p| p.leader_id < 0).count();
        if leaderless > 0 {
            checks.fail(
                "internal_topic",
                name,
                format!(
                    "{leaderless} of {} partitions have no leader",
                    t.partitions.len()
                ),
                "bring the brokers holding them back (see `skiff cluster health`)".into(),
            );
        } else if rf < brokers.min(3) {
            checks.warn(
                "internal_topic",
                name,
                format!("replication factor {rf} with {brokers} brokers: losing one broker loses what it holds"),
                format!("{key} applies only when the topic is created: reassign its partitions to more replicas"),
            );
        } else {
            checks.ok(
                "internal_topic",
                name,
                format!("replication factor {rf} with {brokers} brokers"),
            );
        }
    }
}

pub fn run(args: DoctorArgs) -> CliResult {
    let args = args.client;
    let timeout = args.timeout();
    let bootstrap = args.bootstrap();
    let mut checks = Checks::default();
    let mut conn = None;
    for addr in &bootstrap {
        if let Some(c) = reach(&mut checks, addr, timeout, None) {
            check_apis(&mut checks, &c);
            conn.get_or_insert(c);
        }
    }
    if conn.is_some() {
        downgrade_bootstrap_failures(&mut checks.0);
    }
    if let Some(mut conn) = conn {
        let bootstrap_host = host_of(conn.addr()).to_owned();
        match metadata(&mut conn) {
            Ok(m) => {
                checks.ok(
                    "metadata",
                    conn.addr(),
                    format!(
                        "cluster {} with {} brokers, controller {}",
                        m.cluster_id.as_deref().unwrap_or("-"),
                        m.brokers.len(),
                        m.controller_id
                    ),
                );
                let mut nodes: Vec<Node> = m.brokers.iter().map(Node::from).collect();
                nodes.sort_by_key(|n| n.id);
                for n in &nodes {
                    let addr = n.addr();
                    if reach(&mut checks, &addr, timeout, Some(n.id)).is_some()
                        && is_loopback(&n.host)
                        && !is_loopback(&bootstrap_host)
                    {
                        checks.warn(
                            "advertised",
                            &addr,
                            format!("broker {} advertises a loopback address: only clients on its own machine can reach it", n.id),
                            "set advertised.listeners to an address clients can reach".into(),
                        );
                    }
                }
                if nodes.is_empty() {
                    checks.fail(
                        "metadata",
                        conn.addr(),
                        "the cluster lists no brokers".into(),
                        "check the brokers' registration with the controller".into(),
                    );
                }
                check_internal(&mut checks, &m);
            }
            Err(e) => checks.fail(
                "metadata",
                conn.addr(),
                e.to_string(),
                "check the broker's logs".into(),
            ),
        }
    }
    let ok = !checks.0.iter().any(|c| c.status == Status::Fail);
    let report = Report {
        bootstrap,
        ok,
        checks: checks.0,
    };
    emit(args.format, &report, render)?;
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_ERROR)
    })
}

/// The layer's reason of a client error, without the address (the check names it).
fn reason(e: CliError) -> String {
    match e {
        CliError::Dns { reason, .. }
        | CliError::Connect { reason, .. }
        | CliError::Protocol { reason, .. } => reason,
        other => other.to_string(),
    }
}

/// With one bootstrap address answering, clients skip the others: their failures are
/// warnings.
fn downgrade_bootstrap_failures(checks: &mut [Check]) {
    for c in checks {
        if c.status == Status::Fail && matches!(c.check.as_str(), "dns" | "tcp" | "protocol") {
            c.status = Status::Warn;
            c.detail
                .push_str(" (another bootstrap address answered: clients skip this one)");
        }
    }
}

fn metadata(conn: &mut Conn) -> Result<skiff_protocol::MetadataResponse, CliError> {
    let request = skiff_protocol::MetadataRequest {
        topics: None,
        allow_auto_topic_creation: false,
        ..Default::default()
    };
    super::client::call_as!(conn, request, Metadata)
}

fn render(r: &Report) -> String {
    let mut out = String::new();
    for c in &r.checks {
        let status = match c.status {
            Status::Ok => "OK  ",
            Status::Warn => "WARN",
            Status::Fail => "FAIL",
        };
        out.push_str(&format!(
            "{status}  {:<14} {}: {}\n",
            c.check, c.target, c.detail
        ));
        if let Some(f) = &c.fix {
            out.push_str(&format!("      fix: {f}\n"));
        }
    }
    out.push_str(if r.ok {
        "\nno problems found\n"
    } else {
        "\nproblems found (FAIL above)\n"
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_answers_are_classified() {
        let cases: &[(&[u8], Speaker)] = &[
            (b"", Speaker::Nothing),
            (b"HTTP/1.1 400 Bad Request", Speaker::Http),
            (&[21, 3, 3, 0, 2, 2, 50], Speaker::Tls),
            (&[22, 3, 1, 0, 5], Speaker::Tls),
            (&[0, 0, 1, 10, 0, 0, 0x5e, 0x1f, 0, 0], Speaker::Kafka),
            (&[1, 2, 3], Speaker::Unknown),
        ];
        for (bytes, want) in cases {
            assert_eq!(&classify(bytes), want, "{bytes:?}");
        }
    }

    #[test]
    fn loopback_hosts() {
        for (h, want) in [
            ("localhost", true),
            ("127.0.0.1", true),
            ("::1", true),
            ("10.0.0.1", false),
            ("kafka.example", false),
        ] {
            assert_eq!(is_loopback(h), want, "{h}");
        }
        assert_eq!(host_of("a.b:9092"), "a.b");
    }
}
