//! Inter-node TLS and SASL (issue 19 item 4), as real processes: three combined voters whose
//! CONTROLLER listener and inter-broker listener (BROKER) are SASL_SSL with PLAIN, the
//! clients' listener PLAINTEXT:
//! - the quorum forms (openraft's RPCs over TLS after a SASL login on the CONTROLLER
//!   listener), every node registers with the active controller the same way, and a topic
//!   created through a node that does not lead is forwarded to the controller;
//! - a topic of replication factor 3 gets all three nodes in sync (the followers' fetchers
//!   log in to the leader's BROKER listener); acks=all produces are answered and read back,
//!   and every replica holds the records;
//! - a broker-only node whose configured password is wrong does not join: its logins to the
//!   voters are refused, it logs why (naming the voter and the broker's message) and never
//!   registers, while the three others keep serving acks=all produces.
//!
//! Certificates come from `skiff_testkit::certs::TestPki` (a CA, a `localhost` + `127.0.0.1`
//! server certificate that every node presents and checks its peers against). Every wait polls
//! with a deadline; the whole test stays well within 120 s; per-phase timings are printed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use skiff_protocol::ResponseBody;
use skiff_testkit::certs::TestPki;
use skiff_testkit::client::{create_topics_request, records_of};
use skiff_testkit::cluster::{CLUSTER_ID, TEST_TIMERS, batch};
use skiff_testkit::process::{free_port, skiff_binary};
use skiff_testkit::{Broker, Conn, wait_until};

const TOPIC: &str = "secure";
const PASSWORD: &str = "broker-secret";

/// One node's ports: the clients' PLAINTEXT, the inter-broker BROKER, the CONTROLLER listener.
#[derive(Clone, Copy, Debug)]
struct Ports {
    client: u16,
    broker: u16,
    controller: u16,
}

/// `listeners` of a node (a broker-only node has no CONTROLLER listener).
fn listeners(p: Ports, voter: bool) -> String {
    let mut l = format!(
        "PLAINTEXT://127.0.0.1:{},BROKER://127.0.0.1:{}",
        p.client, p.broker
    );
    if voter {
        l.push_str(&format!(",CONTROLLER://127.0.0.1:{}", p.controller));
    }
    l
}

/// The PLAIN JAAS text of a listener: this node logs in as `broker` with `password`; the
/// listener accepts `broker` with the right password.
fn jaas(password: &str) -> String {
    format!(
        "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"broker\" password=\"{password}\" user_broker=\"{PASSWORD}\";"
    )
}

/// Node `id`'s properties: node 1-3 combined voters, others broker-only.
fn properties(id: usize, ports: &[Ports], pki: &TestPki, data: &Path, password: &str) -> String {
    let voter = id <= 3;
    let voters: Vec<String> = (0..3)
        .map(|i| format!("{}@127.0.0.1:{}", i + 1, ports[i].controller))
        .collect();
    let mut lines = vec![
        format!(
            "process.roles={}",
            if voter { "broker,controller" } else { "broker" }
        ),
        format!("node.id={id}"),
        format!("controller.quorum.voters={}", voters.join(",")),
        format!("listeners={}", listeners(ports[id - 1], voter)),
        "controller.listener.names=CONTROLLER".into(),
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,BROKER:SASL_SSL,CONTROLLER:SASL_SSL"
            .into(),
        "inter.broker.listener.name=BROKER".into(),
        "sasl.enabled.mechanisms=PLAIN".into(),
        "sasl.mechanism.controller.protocol=PLAIN".into(),
        "sasl.mechanism.inter.broker.protocol=PLAIN".into(),
        format!(
            "listener.name.controller.plain.sasl.jaas.config={}",
            jaas(password)
        ),
        format!(
            "listener.name.broker.plain.sasl.jaas.config={}",
            jaas(password)
        ),
        "ssl.keystore.type=PEM".into(),
        format!("ssl.keystore.location={}", pki.server.pem.display()),
        "ssl.truststore.type=PEM".into(),
        format!("ssl.truststore.location={}", pki.ca_crt.display()),
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer".into(),
        "super.users=User:broker".into(),
        // The test's client is ANONYMOUS on the PLAINTEXT listener; no ACL is ever created.
        "allow.everyone.if.no.acl.found=true".into(),
        "replica.fetch.backoff.ms=100".into(),
        format!("log.dirs={}", data.display()),
    ];
    for (k, v) in TEST_TIMERS {
        lines.push(format!("{k}={v}"));
    }
    lines.join("\n") + "\n"
}

/// Writes node `id`'s properties and formats its dir: (properties file, data dir).
fn prepare(
    root: &Path,
    id: usize,
    ports: &[Ports],
    pki: &TestPki,
    password: &str,
) -> (PathBuf, PathBuf) {
    let node = root.join(format!("node-{id}"));
    std::fs::create_dir_all(&node).unwrap();
    let data = node.join("data");
    let file = root.join(format!("node-{id}.properties"));
    std::fs::write(&file, properties(id, ports, pki, &data, password)).unwrap();
    let out = Command::new(skiff_binary())
        .args(["format", "-t", CLUSTER_ID, "-c"])
        .arg(&file)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "skiff format node {id}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (file, data)
}

/// (leader, ISR sorted) of [`TOPIC`]-0 in the Metadata of the node on client port `port`.
fn partition_state(port: u16) -> (i32, Vec<i32>) {
    let ResponseBody::Metadata(m) = Conn::open(port).call(
        12,
        skiff_protocol::MetadataRequest {
            topics: None,
            ..Default::default()
        },
    ) else {
        panic!("not a Metadata response")
    };
    let Some(p) = m
        .topics
        .iter()
        .find(|t| t.name.as_deref() == Some(TOPIC))
        .and_then(|t| t.partitions.first())
    else {
        return (-1, Vec::new());
    };
    let mut isr = p.isr_nodes.clone();
    isr.sort_unstable();
    (p.leader_id, isr)
}

/// The broker ids and the controller id in the Metadata of the node on client port `port`.
fn brokers(port: u16) -> (Vec<i32>, i32) {
    let ResponseBody::Metadata(m) = Conn::open(port).call(
        12,
        skiff_protocol::MetadataRequest {
            topics: Some(Vec::new()),
            ..Default::default()
        },
    ) else {
        panic!("not a Metadata response")
    };
    let mut ids: Vec<i32> = m.brokers.iter().map(|b| b.node_id).collect();
    ids.sort_unstable();
    (ids, m.controller_id)
}

/// The values of every record in a fetch answer's records, in order.
fn values(data: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    for b in skiff_record::batches(data) {
        let Ok((_, view)) = b else { break };
        let recs = view.records_data(1 << 20).unwrap();
        for r in skiff_record::records(&recs, view.records_count()) {
            let r = r.unwrap();
            out.push(String::from_utf8(r.value.unwrap().to_vec()).unwrap());
        }
    }
    out
}

/// acks=all produces of `values` to the leader on client port `port`, from offset `first`.
fn produce_all(port: u16, first: i64, vals: &[String]) {
    for (i, v) in vals.iter().enumerate() {
        let offset = wait_until("an acks=all produce", Duration::from_secs(15), || {
            let (code, offset) = Conn::open(port).produce(TOPIC, 0, batch(v));
            (code == 0).then_some(offset)
        });
        assert_eq!(offset, first + i as i64, "acks=all produce {v}");
    }
}

/// The inter-node client itself against a node's BROKER and CONTROLLER listeners: with the
/// CA and the right password it is served (the host name 127.0.0.1 checked against the
/// certificate); a wrong password is refused with the broker's message; without TLS the
/// listener never answers.
fn direct_logins(pki: &TestPki, node: Ports) {
    use skiff_server::node_client::{
        ClientSecurity, NodeClient, NodeClientConfig, NodeClientError, SaslLogin,
    };
    let ca = pki.ca_crt.display().to_string();
    let props = move |k: &str| match k {
        "ssl.truststore.type" => Some("PEM".to_string()),
        "ssl.truststore.location" => Some(ca.clone()),
        _ => None,
    };
    let tls_cfg = skiff_server::tls::TlsListenerConfig::from_props(&props, "BROKER").unwrap();
    let tls = skiff_server::tls::client_config(&tls_cfg, true).unwrap();
    let security = |password: &str, tls_on: bool| ClientSecurity {
        tls: tls_on.then(|| tls.clone()),
        sasl: Some(SaslLogin {
            mechanism: "PLAIN".into(),
            user: "broker".into(),
            password: password.into(),
        }),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let call = |port: u16, sec: ClientSecurity| {
        rt.block_on(async {
            let c = NodeClient::spawn(
                format!("127.0.0.1:{port}"),
                NodeClientConfig {
                    connect_timeout: Duration::from_secs(3),
                    request_timeout: Duration::from_secs(5),
                    security: sec,
                    ..NodeClientConfig::default()
                },
            );
            c.call(skiff_protocol::MetadataRequest {
                topics: Some(Vec::new()),
                ..Default::default()
            })
            .await
        })
    };
    for port in [node.broker, node.controller] {
        let ok = call(port, security(PASSWORD, true));
        assert!(
            matches!(ok, Ok(ResponseBody::Metadata(_))),
            "port {port}: {ok:?}"
        );
        let Err(NodeClientError::Connect { reason, .. }) = call(port, security("nope", true))
        else {
            panic!("port {port}: a wrong password was served");
        };
        assert!(
            reason.starts_with(&format!("SASL authentication to 127.0.0.1:{port} failed: "))
                && reason.contains("SASL_AUTHENTICATION_FAILED"),
            "{reason}"
        );
        let plain = call(port, security(PASSWORD, false));
        assert!(
            matches!(plain, Err(NodeClientError::Connect { .. })),
            "port {port} answered without TLS: {plain:?}"
        );
    }
}

#[test]
fn e2e_cluster_over_sasl_ssl_and_a_node_with_a_wrong_password() {
    let t0 = Instant::now();
    let root = tempfile::Builder::new()
        .prefix("skiff-secure-")
        .tempdir()
        .unwrap();
    let pki = TestPki::generate(&root.path().join("pki"));
    let ports: Vec<Ports> = (0..4)
        .map(|_| Ports {
            client: free_port(),
            broker: free_port(),
            controller: free_port(),
        })
        .collect();
    let mut nodes: Vec<Broker> = Vec::new();
    for id in 1..=3 {
        let (file, data) = prepare(root.path(), id, &ports, &pki, PASSWORD);
        let file = file.display().to_string();
        nodes.push(
            Broker::builder()
                .log_dirs(&[&data])
                .serve_args(&["--config", &file])
                .set("listeners", &listeners(ports[id - 1], true))
                .start(),
        );
        assert_eq!(nodes[id - 1].port(), ports[id - 1].client);
    }
    let client: Vec<u16> = ports.iter().map(|p| p.client).collect();
    for (i, &port) in client.iter().take(3).enumerate() {
        wait_until(
            &format!("node {} listing brokers 1-3 and a controller", i + 1),
            Duration::from_secs(30),
            || {
                let (ids, controller) = brokers(port);
                (ids == [1, 2, 3] && controller > 0).then_some(())
            },
        );
    }
    eprintln!("phase start + quorum + registrations: {:?}", t0.elapsed());

    // RF=3, created through a node that does not lead the quorum (forwarded).
    let t = Instant::now();
    let controller = brokers(client[0]).1;
    let via = (1..=3).find(|id| *id != controller).unwrap() as usize;
    let mut req = create_topics_request(TOPIC, 1, &[]);
    req.topics[0].replication_factor = 3;
    let answer = wait_until("the topic created", Duration::from_secs(15), || {
        let ResponseBody::CreateTopics(r) = Conn::open(client[via - 1]).call(7, req.clone()) else {
            panic!("not a CreateTopics response")
        };
        let t = &r.topics[0];
        (t.error_code == 0).then_some(t.error_message.clone())
    });
    assert_eq!(answer, None);
    let leader = wait_until(
        "a leader and all three replicas in sync",
        Duration::from_secs(20),
        || {
            let (leader, isr) = partition_state(client[0]);
            (leader > 0 && isr == [1, 2, 3]).then_some(leader)
        },
    );
    eprintln!(
        "phase RF=3 topic via node {via} (leader {leader}): {:?}",
        t.elapsed()
    );

    // The forwarded request is authorized as the client, not as the forwarding node (a
    // super user on the controller listener): an Envelope carries the client's principal.
    let t = Instant::now();
    // CREATE on the cluster would allow every topic: deny it too (the cluster then has
    // ACLs, so allow.everyone.if.no.acl.found no longer opens it).
    let acl = |resource_type: i8, name: &str, pattern: i8| skiff_protocol::AclCreation {
        resource_type,
        resource_name: name.into(),
        resource_pattern_type: pattern,
        principal: "User:ANONYMOUS".into(),
        host: "*".into(),
        operation: 5,       // CREATE
        permission_type: 2, // DENY
    };
    let deny = skiff_protocol::CreateAclsRequest {
        creations: vec![acl(4, "kafka-cluster", 3), acl(2, "denied-", 4)],
    };
    let ResponseBody::CreateAcls(r) = Conn::open(client[via - 1]).call(3, deny) else {
        panic!("not a CreateAcls response")
    };
    for res in &r.results {
        assert_eq!(res.error_code, 0, "{:?}", res.error_message);
    }
    let denied = create_topics_request("denied-topic", 1, &[]);
    let code = wait_until(
        "the DENY to reach the controller's authorizer",
        Duration::from_secs(15),
        || {
            let ResponseBody::CreateTopics(r) = Conn::open(client[via - 1]).call(7, denied.clone())
            else {
                panic!("not a CreateTopics response")
            };
            let code = r.topics[0].error_code;
            (code != 0).then_some(code)
        },
    );
    assert_eq!(
        code, 29,
        "TOPIC_AUTHORIZATION_FAILED for the client's principal"
    );
    eprintln!(
        "phase forwarded request authorized as its client: {:?}",
        t.elapsed()
    );

    // acks=all: each answer needs the followers to have fetched the batch over SASL_SSL.
    let t = Instant::now();
    let lp = client[(leader - 1) as usize];
    let first: Vec<String> = (0..5).map(|i| format!("s{i}")).collect();
    produce_all(lp, 0, &first);
    let got = Conn::open(lp).fetch(TOPIC, 0, 0, 1 << 20);
    assert_eq!((got.error_code, got.high_watermark), (0, 5));
    assert_eq!(values(&records_of(&got)), first);
    for (i, n) in nodes.iter().enumerate() {
        let logs = n.logs();
        assert!(
            !logs.contains("cannot log in") && !logs.contains("SASL authentication to"),
            "node {} failed a login: {logs}",
            i + 1
        );
    }
    eprintln!("phase 5 acks=all produces, read back: {:?}", t.elapsed());

    let t = Instant::now();
    direct_logins(&pki, ports[(leader - 1) as usize]);
    eprintln!("phase direct logins: {:?}", t.elapsed());

    // A broker-only node with a wrong password: refused by the voters, logged, never joins.
    let t = Instant::now();
    let (file, data) = prepare(root.path(), 4, &ports, &pki, "wrong-secret");
    let log_path = root.path().join("node-4.log");
    let mut cmd = Broker::builder()
        .log_dirs(&[&data])
        .serve_args(&["--config", &file.display().to_string()])
        .set("listeners", &listeners(ports[3], false))
        .command();
    let mut bad = cmd
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .spawn()
        .unwrap();
    let refused = wait_until(
        "node 4 logging a refused login",
        Duration::from_secs(30),
        || {
            let logs = std::fs::read_to_string(&log_path).unwrap_or_default();
            logs.lines()
                .find(|l| l.contains("cannot log in") && l.contains("SASL authentication to"))
                .map(str::to_string)
        },
    );
    assert!(
        refused.contains("127.0.0.1:") && refused.contains("SASL_AUTHENTICATION_FAILED"),
        "{refused}"
    );
    assert!(
        !refused.contains("wrong-secret"),
        "a password in the log: {refused}"
    );
    // The voters keep serving; node 4 is never registered.
    let more: Vec<String> = (5..8).map(|i| format!("s{i}")).collect();
    produce_all(lp, 5, &more);
    for &port in client.iter().take(3) {
        assert_eq!(brokers(port).0, [1, 2, 3]);
        assert_eq!(partition_state(port), (leader, vec![1, 2, 3]));
    }
    let got = Conn::open(lp).fetch(TOPIC, 0, 5, 1 << 20);
    assert_eq!(values(&records_of(&got)), more);
    assert!(
        bad.try_wait().unwrap().is_none(),
        "node 4 exited: it should keep trying"
    );
    let logs = std::fs::read_to_string(&log_path).unwrap();
    assert!(!logs.contains("registered with the controller"), "{logs}");
    // The voters closed node 4's connections after answering the failed exchange.
    assert!(
        nodes
            .iter()
            .any(|n| n.logs().contains("after a failed SASL exchange")),
        "no voter logged the refused login"
    );
    bad.kill().unwrap();
    bad.wait().unwrap();
    eprintln!("phase wrong password refused: {:?}", t.elapsed());

    for n in &mut nodes {
        assert!(n.sigterm().success());
    }
    eprintln!("total: {:?}", t0.elapsed());
}
