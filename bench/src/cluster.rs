//! `skiff-bench cluster` (issue 16): the metadata quorum of a 3-node cluster: metadata
//! operations per second through the quorum, controller failover time, idle CPU.
//!
//! Mental model: the benchmark owns three combined KRaft nodes (`process.roles=
//! broker,controller`), real `skiff serve` processes of the `--skiff` binary (a release build),
//! laid out as `skiff-testkit`'s `Cluster` does: node `i` (1-based) listens for clients on
//! `--base-port + i - 1` and for the quorum on `--base-port + 100 + i - 1`, keeps its
//! properties in `<dir>/node-i/server.properties` (Kafka's default timers written out, then
//! every `--set key=value`), its data in `<dir>/node-i/data` (formatted with `skiff format`)
//! and its stderr in `<dir>/node-i/broker.log`. A node is up when it prints its PLAINTEXT
//! ready line; the cluster is formed when every node's Metadata lists brokers 1, 2, 3 and all
//! name the same controller. Then, one blocking client, one request in flight:
//! 1. **ops/s**: CreateTopics of a fresh 1-partition, replication-factor-1 topic per request
//!    for `--seconds`, to the active controller's broker port, then to a node that is not the
//!    controller (it forwards the request): requests per second, p50/p99 latency.
//! 2. **failover**, `--failovers` times: SIGKILL the active controller, then every ~20 ms a
//!    new attempt (own connection and thread, bounded by [`ATTEMPT_TIMEOUT`]) to create that
//!    sample's 1-partition topic through a survivor, until one is answered 0 (or
//!    TOPIC_ALREADY_EXISTS: see [`failover`]): kill to that answer is one sample. The
//!    survivor's Metadata, asked every ~20 ms, says when it knows a new controller. The killed
//!    node is restarted (same file, same data) and must catch up (it knows the topic) and
//!    register again (its `registered with the controller` log line: Metadata still lists the
//!    old registration until the controller lets it go) before the next sample.
//! 3. **idle CPU**: 5 s after that, utime + stime of each node from `/proc/<pid>/stat` over
//!    `--idle-seconds`, as % of one core; clock
//!    ticks from the auxiliary vector's `AT_CLKTCK`, which is what `sysconf(_SC_CLK_TCK)`
//!    returns (`rustix::param` is not enabled in this workspace).
//!
//! Output: `cluster: ...` lines. Every child is SIGKILLed at the end and on any error (a drop
//! guard). `--dir` is wiped at the start, not at the end, so the logs can be read.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use hdrhistogram::Histogram;
use skiff_protocol::{
    BlockingClient, CreatableTopic, CreateTopicsRequest, MetadataRequest, MetadataRequestTopic,
    MetadataResponse, ResponseBody,
};

use crate::machine::{self, MachineInfo};

const CLUSTER_ID: &str = "c2tpZmYtY2x1c3Rlci0xNg";
const NODES: usize = 3;
const CREATE_TOPICS_VERSION: i16 = 7;
const METADATA_VERSION: i16 = 12;
const TOPIC_ALREADY_EXISTS: i16 = 36;
/// Kafka's defaults, written into every node's file (then `--set` replaces any of them).
const DEFAULT_TIMERS: &[(&str, &str)] = &[
    ("controller.quorum.election.timeout.ms", "1000"),
    ("controller.quorum.fetch.timeout.ms", "2000"),
    ("broker.heartbeat.interval.ms", "2000"),
    ("broker.session.timeout.ms", "9000"),
];
/// Spawn to ready line; any wait for the cluster; the whole of one failover.
const DEADLINE: Duration = Duration::from_secs(120);
/// A request outside the failover loop.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// One failover attempt (connect + answer), also its CreateTopics `timeout_ms`.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(1);
/// Failover attempts start this far apart.
const ATTEMPT_EVERY: Duration = Duration::from_millis(20);
const IDLE_SETTLE: Duration = Duration::from_secs(5);
/// The broker lifecycle's info line once the controller accepted its registration.
const REGISTERED: &str = "registered with the controller";

/// The `cluster` subcommand's arguments.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The skiff binary to run (a release build).
    #[arg(long, default_value = "target/release/skiff")]
    pub skiff: PathBuf,
    /// Scratch directory for the nodes (wiped first, kept at the end). Not a tmpfs.
    #[arg(long, default_value = "./bench-data/cluster")]
    pub dir: PathBuf,
    /// Broker ports are P..P+2, controller ports P+100..P+102.
    #[arg(long, default_value_t = 19092)]
    pub base_port: u16,
    /// Length of each ops/s run.
    #[arg(long, default_value_t = 10)]
    pub seconds: u64,
    /// Controller kills.
    #[arg(long, default_value_t = 5)]
    pub failovers: usize,
    /// Length of the idle CPU window.
    #[arg(long, default_value_t = 30)]
    pub idle_seconds: u64,
    /// A property for every node's file (repeatable), e.g. a timer.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

struct Node {
    id: i32,
    port: u16,
    config: PathBuf,
    log: PathBuf,
    child: Option<Child>,
}

/// The nodes; dropping it SIGKILLs every running child.
struct Nodes {
    skiff: PathBuf,
    nodes: Vec<Node>,
}

impl Drop for Nodes {
    fn drop(&mut self) {
        for i in 0..self.nodes.len() {
            let _ = self.kill(i);
        }
    }
}

impl Nodes {
    /// Starts node `i` (0-based); spawn to its PLAINTEXT ready line.
    fn start(&mut self, i: usize) -> Result<Duration> {
        let n = &mut self.nodes[i];
        let stderr = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&n.log)?;
        let started = Instant::now();
        let log_filter = std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into());
        let mut child = Command::new(&self.skiff)
            .arg("serve")
            .arg("--config")
            .arg(&n.config)
            .env("RUST_LOG", log_filter)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .with_context(|| format!("spawn {}", self.skiff.display()))?;
        let stdout = child.stdout.take().context("piped stdout")?;
        n.child = Some(child);
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            // Drains stdout for the child's whole life.
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let _ = tx.send(line);
            }
        });
        loop {
            let line = rx
                .recv_timeout(DEADLINE.saturating_sub(started.elapsed()))
                .with_context(|| format!("node {}: no ready line, see its log", n.id))?;
            if line.starts_with("skiff ready listener=PLAINTEXT ") {
                return Ok(started.elapsed());
            }
        }
    }

    /// SIGKILL of node `i`, reaped.
    fn kill(&mut self, i: usize) -> Result<()> {
        if let Some(mut c) = self.nodes[i].child.take() {
            c.kill()?;
            c.wait()?;
        }
        Ok(())
    }

    fn index_of(&self, id: i32) -> Result<usize> {
        let i = self.nodes.iter().position(|n| n.id == id);
        i.with_context(|| format!("no node {id}"))
    }

    /// Polls every node's Metadata until each lists brokers 1..=3, all name the same
    /// controller and each knows `marker` (the topic created last: the node's metadata log
    /// has caught up to it); that controller's id.
    fn wait_formed(&self, marker: &[&str]) -> Result<i32> {
        poll("the cluster to form", |last| {
            let mut controllers = Vec::new();
            for n in &self.nodes {
                let m = connect(n.port, ATTEMPT_TIMEOUT)
                    .and_then(|mut c| metadata(&mut c, Some(marker)));
                let m = match m {
                    Ok(m) => m,
                    Err(e) => {
                        *last = format!("node {}: {e:#}", n.id);
                        continue;
                    }
                };
                let mut ids: Vec<i32> = m.brokers.iter().map(|b| b.node_id).collect();
                ids.sort_unstable();
                let knows = m.topics.iter().all(|t| t.error_code == 0);
                if ids == [1, 2, 3] && m.controller_id >= 0 && knows {
                    controllers.push(m.controller_id);
                } else {
                    let c = m.controller_id;
                    *last = format!(
                        "node {}: brokers {ids:?} controller {c} knows {knows}",
                        n.id
                    );
                }
            }
            let agreed = controllers.windows(2).all(|w| w[0] == w[1]);
            (controllers.len() == NODES && agreed).then(|| controllers[0])
        })
    }

    /// Waits until node `i` logged more than `before` registrations.
    fn wait_registered(&self, i: usize, before: usize) -> Result<()> {
        poll("a new registration line", |last| {
            let id = self.nodes[i].id;
            *last = format!("node {id}: RUST_LOG must keep skiff_server::cluster at info");
            (self.registrations(i) > before).then_some(())
        })
    }

    /// `registered with the controller` lines in node `i`'s log so far.
    fn registrations(&self, i: usize) -> usize {
        let log = std::fs::read_to_string(&self.nodes[i].log);
        log.map_or(0, |s| s.matches(REGISTERED).count())
    }
}

/// Calls `check` every 50 ms until it gives `Some`, for at most [`DEADLINE`]; `check` leaves
/// what it saw last in its argument for the error.
fn poll<T>(what: &str, mut check: impl FnMut(&mut String) -> Option<T>) -> Result<T> {
    let until = Instant::now() + DEADLINE;
    let mut last = String::new();
    loop {
        if let Some(v) = check(&mut last) {
            return Ok(v);
        }
        if Instant::now() > until {
            bail!("waited {DEADLINE:?} for {what}; last: {last}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

type Client = BlockingClient<TcpStream>;

fn connect(port: u16, timeout: Duration) -> Result<Client> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let s =
        TcpStream::connect_timeout(&addr, timeout).with_context(|| format!("connect {addr}"))?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    s.set_nodelay(true)?;
    Ok(BlockingClient::new(s, "skiff-bench-cluster"))
}

/// Metadata of `topics` (`None`: all of them).
fn metadata(c: &mut Client, topics: Option<&[&str]>) -> Result<MetadataResponse> {
    let topic = |t: &&str| MetadataRequestTopic {
        name: Some((*t).into()),
        ..MetadataRequestTopic::default()
    };
    let req = MetadataRequest {
        topics: topics.map(|ts| ts.iter().map(topic).collect()),
        allow_auto_topic_creation: false,
        ..MetadataRequest::default()
    };
    match c.call(METADATA_VERSION, req)? {
        ResponseBody::Metadata(m) => Ok(m),
        other => bail!("Metadata answered {:?}", other.api_key()),
    }
}

/// CreateTopics of one 1-partition, replication-factor-1 topic: its error code.
fn create(c: &mut Client, name: &str, timeout: Duration) -> Result<i16> {
    let req = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: name.into(),
            num_partitions: 1,
            replication_factor: 1,
            ..CreatableTopic::default()
        }],
        timeout_ms: i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX),
        ..CreateTopicsRequest::default()
    };
    let ResponseBody::CreateTopics(r) = c.call(CREATE_TOPICS_VERSION, req)? else {
        bail!("not a CreateTopics response");
    };
    Ok(r.topics
        .first()
        .context("CreateTopics answered no topic")?
        .error_code)
}

/// Sequential creates to `port` for `seconds`: (successes, errors, seconds, latency in µs).
fn ops(port: u16, prefix: &str, seconds: u64) -> Result<(u64, u64, f64, Histogram<u64>)> {
    let mut c = connect(port, CALL_TIMEOUT)?;
    let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
    let (mut ok, mut errors) = (0u64, 0u64);
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(seconds) {
        let t = Instant::now();
        let code = create(&mut c, &format!("{prefix}-{}", ok + errors), CALL_TIMEOUT)?;
        hist.saturating_record(t.elapsed().as_micros() as u64);
        if code == 0 { ok += 1 } else { errors += 1 }
    }
    Ok((ok, errors, start.elapsed().as_secs_f64(), hist))
}

/// One failover sample.
#[derive(Default)]
struct Failover {
    total: Duration,
    /// When the survivor's Metadata first named another controller.
    elected: Option<(Duration, i32)>,
    attempts: u32,
    /// Attempts answered before the success: by error code, and without an answer.
    codes: BTreeMap<i16, u32>,
    no_answer: u32,
    /// Wall clock of the kill, `HH:MM:SS.mmm` UTC (to read the nodes' logs against).
    killed_at: String,
    /// The topic created, and the answer that ended the sample (0 or TOPIC_ALREADY_EXISTS).
    created: String,
    answer: i16,
}

/// Kills the controller; then a new attempt every [`ATTEMPT_EVERY`], each on its own
/// connection and thread (an attempt may be held up to its timeout, e.g. by the survivor's
/// reconnect backoff towards the dead controller, and must not delay the next), until one
/// succeeds. Every attempt creates the same topic: a survivor that cannot forward an attempt
/// answers LEADER_NOT_AVAILABLE and creates the topic later in the background, so fresh names
/// would leave one topic per failed attempt; hence TOPIC_ALREADY_EXISTS (only the new
/// controller's committed image can say so) also ends the sample. Between launches, the
/// survivor's Metadata (answered locally) is asked for its controller.
fn failover(nodes: &mut Nodes, k: usize, controller: i32) -> Result<Failover> {
    let victim = nodes.index_of(controller)?;
    let survivor = (0..NODES).find(|i| *i != victim).context("no survivor")?;
    let port = nodes.nodes[survivor].port;
    let (tx, rx) = mpsc::channel::<(Instant, Result<i16>)>();
    let mut f = Failover {
        created: format!("failover-{k}"),
        ..Failover::default()
    };
    let t0 = Instant::now();
    f.killed_at = utc_now();
    nodes.kill(victim)?;
    loop {
        let launched = Instant::now();
        f.attempts += 1;
        let (name, tx) = (f.created.clone(), tx.clone());
        std::thread::spawn(move || {
            let r = connect(port, ATTEMPT_TIMEOUT)
                .and_then(|mut c| create(&mut c, &name, ATTEMPT_TIMEOUT));
            let _ = tx.send((Instant::now(), r));
        });
        if f.elected.is_none()
            && let Ok(m) =
                connect(port, ATTEMPT_TIMEOUT).and_then(|mut c| metadata(&mut c, Some(&[])))
            && m.controller_id >= 0
            && m.controller_id != controller
        {
            f.elected = Some((t0.elapsed(), m.controller_id));
        }
        while let Ok((at, r)) = rx.recv_timeout(ATTEMPT_EVERY.saturating_sub(launched.elapsed())) {
            match r {
                Ok(code @ (0 | TOPIC_ALREADY_EXISTS)) => {
                    f.total = at.duration_since(t0);
                    f.answer = code;
                    return Ok(f);
                }
                Ok(code) => *f.codes.entry(code).or_default() += 1,
                Err(_) => f.no_answer += 1,
            }
        }
        if t0.elapsed() > DEADLINE {
            bail!("no CreateTopics succeeded within {DEADLINE:?} of killing node {controller}");
        }
    }
}

/// Clock ticks per second: `AT_CLKTCK` (17) of `/proc/self/auxv`.
fn clock_ticks() -> Option<u64> {
    let auxv = std::fs::read("/proc/self/auxv").ok()?;
    let w = std::mem::size_of::<usize>();
    let word = |b: &[u8]| Some(usize::from_ne_bytes(b.try_into().ok()?) as u64);
    auxv.chunks_exact(2 * w)
        .find_map(|pair| (word(&pair[..w])? == 17).then(|| word(&pair[w..]))?)
}

/// utime + stime of `pid` in clock ticks (`/proc/<pid>/stat`).
fn cpu_ticks(pid: u32) -> Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let rest = stat.rfind(')').and_then(|i| stat.get(i + 1..));
    let f: Vec<&str> = rest.context("malformed stat")?.split_whitespace().collect();
    // After ")": state is field 3, so utime (field 14) is index 11 and stime index 12.
    let tick = |i: usize| -> Result<u64> { Ok(f.get(i).context("short stat")?.parse()?) };
    Ok(tick(11)? + tick(12)?)
}

/// One node's properties file.
fn node_properties(id: usize, base: u16, data: &std::path::Path, props: &[String]) -> String {
    let port = |j: usize, off: u16| base + off + j as u16 - 1;
    let voters: Vec<String> = (1..=NODES)
        .map(|j| format!("{j}@127.0.0.1:{}", port(j, 100)))
        .collect();
    let mut lines = vec![
        "process.roles=broker,controller".to_string(),
        format!("node.id={id}"),
        format!("controller.quorum.voters={}", voters.join(",")),
        format!(
            "listeners=PLAINTEXT://127.0.0.1:{},CONTROLLER://127.0.0.1:{}",
            port(id, 0),
            port(id, 100)
        ),
        "controller.listener.names=CONTROLLER".to_string(),
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT".to_string(),
        "inter.broker.listener.name=PLAINTEXT".to_string(),
        format!("log.dirs={}", data.display()),
    ];
    lines.extend(props.iter().cloned());
    lines.join("\n") + "\n"
}

/// `key=value` of the default timers with every `--set` applied.
fn properties(set: &[String]) -> Result<Vec<String>> {
    let mut props: Vec<(&str, &str)> = DEFAULT_TIMERS.to_vec();
    for s in set {
        let kv = s.split_once('=');
        let (k, v) = kv.with_context(|| format!("--set {s:?}: expected KEY=VALUE"))?;
        match props.iter_mut().find(|(pk, _)| *pk == k) {
            Some(p) => p.1 = v,
            None => props.push((k, v)),
        }
    }
    Ok(props.iter().map(|(k, v)| format!("{k}={v}")).collect())
}

/// `HH:MM:SS.mmm` UTC now, as the nodes' log lines print it.
fn utc_now() -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    let ms = now.map_or(0, |d| d.as_millis()) % 86_400_000;
    let (h, m, s) = (ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60);
    format!("{h:02}:{m:02}:{s:02}.{:03}", ms % 1000)
}

fn verdict(met: bool) -> &'static str {
    if met { "PASS" } else { "MISS" }
}

fn ms(d: Duration) -> u128 {
    d.as_millis()
}

/// Runs the benchmark and prints the figures.
pub fn main(a: Args) -> Result<()> {
    if a.base_port == 0 || u32::from(a.base_port) + 100 + NODES as u32 > u32::from(u16::MAX) {
        bail!(
            "--base-port {} leaves no room for the controller ports",
            a.base_port
        );
    }
    let props = properties(&a.set)?;
    if a.dir.exists() {
        std::fs::remove_dir_all(&a.dir).with_context(|| format!("wipe {}", a.dir.display()))?;
    }
    std::fs::create_dir_all(&a.dir)?;
    let info = MachineInfo::probe(&a.dir);
    println!(
        "cluster: machine: {} cores, MemTotal {}, {}, kernel {}; load average {} at start",
        info.nproc,
        info.mem_total,
        info.filesystem,
        info.kernel,
        machine::load_average()
    );
    println!("cluster: settings {}", props.join(" "));
    println!(
        "cluster: skiff={} nodes={NODES} base_port={} seconds={} failovers={} idle_seconds={}",
        a.skiff.display(),
        a.base_port,
        a.seconds,
        a.failovers,
        a.idle_seconds
    );

    let mut nodes = setup(&a, &props)?;
    let t = Instant::now();
    for i in 0..NODES {
        nodes.start(i)?;
    }
    let controller = nodes.wait_formed(&[])?;
    println!(
        "cluster: formed_ms={} controller={controller}",
        ms(t.elapsed())
    );
    ops_phase(&nodes, controller, a.seconds)?;
    failover_phase(&mut nodes, a.failovers)?;
    idle_phase(&nodes, a.idle_seconds)?;
    println!(
        "cluster: load average {} at end; logs in {}/node-*/broker.log",
        machine::load_average(),
        a.dir.display()
    );
    Ok(())
}

/// Writes and formats every node's files (nothing started).
fn setup(a: &Args, props: &[String]) -> Result<Nodes> {
    let mut nodes = Nodes {
        skiff: a.skiff.clone(),
        nodes: Vec::new(),
    };
    for id in 1..=NODES {
        let home = a.dir.join(format!("node-{id}"));
        std::fs::create_dir_all(&home)?;
        let config = home.join("server.properties");
        let text = node_properties(id, a.base_port, &home.join("data"), props);
        std::fs::write(&config, text)?;
        let out = Command::new(&a.skiff)
            .args(["format", "-t", CLUSTER_ID, "-c"])
            .arg(&config)
            .env("RUST_LOG", "warn")
            .output()
            .with_context(|| format!("run {} format", a.skiff.display()))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            bail!("skiff format node {id}: {err}");
        }
        nodes.nodes.push(Node {
            id: i32::try_from(id)?,
            port: a.base_port + id as u16 - 1,
            config,
            log: home.join("broker.log"),
            child: None,
        });
    }
    Ok(nodes)
}

/// CreateTopics/s to the controller, then through another node.
fn ops_phase(nodes: &Nodes, controller: i32, seconds: u64) -> Result<()> {
    let ctl = nodes.index_of(controller)?;
    let other = (0..NODES).find(|i| *i != ctl).context("no second node")?;
    for (what, i) in [("controller", ctl), ("non_controller", other)] {
        let (ok, errors, secs, h) = ops(nodes.nodes[i].port, &format!("ops-{what}"), seconds)?;
        let q = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
        println!(
            "cluster: create_topics via={what} node={} ops={ok} errors={errors} ops_per_s={:.0} latency_ms p50={:.2} p99={:.2} max={:.2}",
            nodes.nodes[i].id,
            ok as f64 / secs,
            q(0.5),
            q(0.99),
            h.max() as f64 / 1000.0,
        );
    }

    Ok(())
}

/// `failovers` samples, each followed by the killed node's restart.
fn failover_phase(nodes: &mut Nodes, failovers: usize) -> Result<()> {
    let mut samples = Vec::new();
    let mut controller = nodes.wait_formed(&[])?;
    for k in 1..=failovers {
        let killed = controller;
        let f = failover(nodes, k, killed)?;
        let elected = f
            .elected
            .map_or("elected_seen_ms=- new_controller=-".into(), |(d, id)| {
                format!("elected_seen_ms={} new_controller={id}", ms(d))
            });
        let codes: Vec<String> = f.codes.iter().map(|(c, n)| format!("{c}x{n}")).collect();
        println!(
            "cluster: failover {k} killed={killed} at={}Z failover_ms={} {elected} answer={} attempts={} no_answer={} error_codes_before=[{}]",
            f.killed_at,
            ms(f.total),
            f.answer,
            f.attempts,
            f.no_answer,
            codes.join(",")
        );
        samples.push(f.total);
        let victim = nodes.index_of(killed)?;
        let before = nodes.registrations(victim);
        let t = Instant::now();
        let ready = nodes.start(victim)?;
        nodes.wait_formed(&[&f.created])?;
        let caught_up = t.elapsed();
        nodes.wait_registered(victim, before)?;
        let registered = t.elapsed();
        controller = nodes.wait_formed(&[])?;
        println!(
            "cluster: failover {k} restarted={killed} ready_ms={} caught_up_ms={} registered_ms={} (kill to registered {}) controller={controller}",
            ms(ready),
            ms(caught_up),
            ms(registered),
            ms(f.total + registered),
        );
    }
    let mut sorted = samples.clone();
    sorted.sort_unstable();
    if let (Some(min), Some(max)) = (sorted.first(), sorted.last()) {
        let median = sorted[sorted.len() / 2];
        let all: Vec<String> = samples.iter().map(|d| ms(*d).to_string()).collect();
        println!(
            "cluster: failover_ms median={} min={} max={} samples={} target=<3000 verdict={}",
            ms(median),
            ms(*min),
            ms(*max),
            all.join(","),
            verdict(median < Duration::from_secs(3)),
        );
    }

    Ok(())
}

/// Each node's CPU over `seconds`, [`IDLE_SETTLE`] after the last failover.
fn idle_phase(nodes: &Nodes, seconds: u64) -> Result<()> {
    std::thread::sleep(IDLE_SETTLE);
    let topics = metadata(&mut connect(nodes.nodes[0].port, CALL_TIMEOUT)?, None)?;
    let topics = topics.topics.len();
    let (hz, hz_note) = match clock_ticks() {
        Some(hz) if hz > 0 => (hz, "AT_CLKTCK"),
        _ => (100, "assumed: no AT_CLKTCK"),
    };
    let pids: Vec<u32> = nodes
        .nodes
        .iter()
        .filter_map(|n| n.child.as_ref().map(Child::id))
        .collect();
    let before: Vec<u64> = pids.iter().map(|p| cpu_ticks(*p)).collect::<Result<_>>()?;
    let t = Instant::now();
    std::thread::sleep(Duration::from_secs(seconds));
    let after: Vec<u64> = pids.iter().map(|p| cpu_ticks(*p)).collect::<Result<_>>()?;
    let secs = t.elapsed().as_secs_f64();
    let mut worst = 0.0f64;
    for (i, (b, e)) in before.iter().zip(&after).enumerate() {
        let ticks = e.saturating_sub(*b);
        let pct = ticks as f64 / hz as f64 / secs * 100.0;
        worst = worst.max(pct);
        println!(
            "cluster: idle_cpu node={} pct_of_core={pct:.3} ticks={ticks} seconds={secs:.1} clk_tck={hz} ({hz_note}) topics={topics}",
            nodes.nodes[i].id,
        );
    }
    let v = verdict(worst < 1.0);
    println!("cluster: idle_cpu max_pct_of_core={worst:.3} target=<1 verdict={v}");
    Ok(())
}
