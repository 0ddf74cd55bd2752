//! `skiff dev [--nodes N] [--base-port P] [--data DIR]`: a local KRaft cluster of combined
//! (broker + controller) nodes as child processes, for development.
//!
//! Mental model: [`plan`] (pure) lays the nodes out: node `i` (1-based) listens for clients
//! on `P + i - 1` and for the quorum on `P + N + i - 1` (so one node is Kafka's quickstart pair
//! 9092/9093), keeps its data in `DIR/node-i/data` and its configuration in
//! `DIR/node-i/server.properties`, the documented example of a cluster configuration. [`run`]
//! writes the files, formats every node once with one cluster id (kept in `DIR/cluster.id`, so a
//! second run reuses the data), starts `skiff serve --config` per node, prints
//! `skiff ready cluster bootstrap=localhost:P,...` once every node printed its PLAINTEXT ready
//! line and every node's Metadata lists all N brokers (registered and unfenced: KRaft lists
//! only unfenced brokers), forwards SIGTERM/SIGINT to all and exits when all have exited (0 when
//! all exited 0). It restarts nothing by itself.

use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};

use tokio::io::{AsyncBufReadExt, BufReader};

use crate::{EXIT_CONFIG, EXIT_FAILURE};

#[derive(clap::Args, Debug)]
pub struct DevArgs {
    /// How many combined nodes.
    #[arg(long, default_value_t = 1)]
    nodes: u16,
    /// The first node's client port; the others follow, then the controller ports.
    #[arg(long, default_value_t = 9092)]
    base_port: u16,
    /// Where the nodes' configurations and data live.
    #[arg(long, default_value = "./skiff-dev")]
    data: PathBuf,
}

/// One node of the layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodePlan {
    pub id: i32,
    pub port: u16,
    pub controller_port: u16,
    pub dir: PathBuf,
    /// The `server.properties` text.
    pub properties: String,
}

/// The layout of `nodes` nodes (see the module docs); `Err` when the ports do not fit.
pub fn plan(nodes: u16, base_port: u16, data: &Path) -> Result<Vec<NodePlan>, String> {
    if nodes == 0 {
        return Err("--nodes must be at least 1".into());
    }
    let last = u32::from(base_port) + 2 * u32::from(nodes) - 1;
    if base_port == 0 || last > u32::from(u16::MAX) {
        return Err(format!(
            "--base-port {base_port} with --nodes {nodes} needs ports {base_port}..={last}; choose a base port between 1 and {}",
            u32::from(u16::MAX) + 1 - 2 * u32::from(nodes)
        ));
    }
    let controller_port = |i: u16| base_port + nodes + i - 1;
    let voters: Vec<String> = (1..=nodes)
        .map(|i| format!("{i}@localhost:{}", controller_port(i)))
        .collect();
    let rf = nodes.min(3);
    Ok((1..=nodes)
        .map(|i| {
            let dir = data.join(format!("node-{i}"));
            let port = base_port + i - 1;
            let cport = controller_port(i);
            let properties = format!(
                "# Node {i} of a {nodes}-node Skiff dev cluster (written by `skiff dev`).\n\
                 process.roles=broker,controller\n\
                 node.id={i}\n\
                 controller.quorum.voters={}\n\
                 listeners=PLAINTEXT://localhost:{port},CONTROLLER://localhost:{cport}\n\
                 advertised.listeners=PLAINTEXT://localhost:{port}\n\
                 controller.listener.names=CONTROLLER\n\
                 inter.broker.listener.name=PLAINTEXT\n\
                 log.dirs={}\n\
                 offsets.topic.replication.factor={rf}\n\
                 transaction.state.log.replication.factor={rf}\n",
                voters.join(","),
                dir.join("data").display()
            );
            NodePlan {
                id: i32::from(i),
                port,
                controller_port: cport,
                dir,
                properties,
            }
        })
        .collect())
}

pub fn run(args: DevArgs) -> ExitCode {
    let nodes = match plan(args.nodes, args.base_port, &args.data) {
        Ok(n) => n,
        Err(e) => {
            eprintln!("skiff dev: {e}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    let cluster_id = match prepare(&args.data, &nodes) {
        Ok(id) => id,
        Err(e) => {
            eprintln!("skiff dev: {e}");
            return ExitCode::from(EXIT_FAILURE);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("skiff dev: cannot start the async runtime: {e}");
            return ExitCode::from(EXIT_FAILURE);
        }
    };
    runtime.block_on(supervise(nodes, cluster_id))
}

/// Writes every node's properties and formats its dirs (once: a formatted node is kept).
fn prepare(data: &Path, nodes: &[NodePlan]) -> Result<String, String> {
    std::fs::create_dir_all(data).map_err(|e| format!("cannot create {}: {e}", data.display()))?;
    let id_file = data.join("cluster.id");
    let cluster_id = match std::fs::read_to_string(&id_file) {
        Ok(id) => id.trim().to_string(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let id = skiff_metadata::cluster_id::random();
            skiff_storage::checkpoint::write_atomic(&id_file, format!("{id}\n").as_bytes())
                .map_err(|e| format!("cannot write {}: {e}", id_file.display()))?;
            id
        }
        Err(e) => return Err(format!("cannot read {}: {e}", id_file.display())),
    };
    for n in nodes {
        std::fs::create_dir_all(&n.dir)
            .map_err(|e| format!("cannot create {}: {e}", n.dir.display()))?;
        let file = n.dir.join("server.properties");
        skiff_storage::checkpoint::write_atomic(&file, n.properties.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", file.display()))?;
        let dirs = [n.dir.join("data")];
        let _locks = skiff_storage::dir_lock::lock_dirs(&dirs).map_err(|e| e.to_string())?;
        skiff_metadata::format::format_storage(&dirs, &cluster_id, n.id, true)
            .map_err(|e| e.to_string())?;
    }
    Ok(cluster_id)
}

async fn supervise(nodes: Vec<NodePlan>, cluster_id: String) -> ExitCode {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        eprintln!("skiff dev: cannot listen for signals");
        return ExitCode::from(EXIT_FAILURE);
    };
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("skiff dev: cannot find the skiff binary: {e}");
            return ExitCode::from(EXIT_FAILURE);
        }
    };
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::channel::<i32>(nodes.len());
    let (exit_tx, mut exit_rx) = tokio::sync::mpsc::channel::<(i32, Option<i32>)>(nodes.len());
    let mut pids = Vec::new();
    for n in &nodes {
        let mut cmd = tokio::process::Command::new(&exe);
        cmd.arg("serve")
            .arg("--config")
            .arg(n.dir.join("server.properties"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                eprintln!("skiff dev: cannot start node {}: {e}", n.id);
                forward(&pids);
                return ExitCode::from(EXIT_FAILURE);
            }
        };
        if let Some(pid) = child.id() {
            pids.push(pid);
        }
        if let Some(out) = child.stdout.take() {
            let (tx, id) = (ready_tx.clone(), n.id);
            tokio::spawn(async move {
                let mut lines = BufReader::new(out).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    println!("node {id}: {line}");
                    if line.starts_with("skiff ready listener=PLAINTEXT ") {
                        let _ = tx.send(id).await;
                    }
                }
            });
        }
        let (tx, id) = (exit_tx.clone(), n.id);
        tokio::spawn(async move {
            let code = child.wait().await.ok().and_then(|s| s.code());
            let _ = tx.send((id, code)).await;
        });
    }
    drop((ready_tx, exit_tx));
    let bootstrap: Vec<String> = nodes
        .iter()
        .map(|n| format!("localhost:{}", n.port))
        .collect();
    let (mut ready, mut exited) = (0usize, 0usize);
    let (mut announced, mut signalled, mut all_zero) = (false, false, true);
    let (registered_tx, mut registered_rx) = tokio::sync::mpsc::channel::<()>(1);
    let mut waiting = false;
    while exited < nodes.len() {
        if !waiting && ready == nodes.len() {
            waiting = true;
            let ports: Vec<u16> = nodes.iter().map(|n| n.port).collect();
            let want = nodes.len();
            let tx = registered_tx.clone();
            tokio::spawn(async move {
                if all_registered(ports, want).await {
                    let _ = tx.send(()).await;
                }
            });
        }
        tokio::select! {
            Some(()) = registered_rx.recv(), if !announced => {
                println!(
                    "skiff ready cluster bootstrap={} cluster.id={cluster_id}",
                    bootstrap.join(",")
                );
                announced = true;
            }
            Some(_) = ready_rx.recv(), if !waiting => ready += 1,
            _ = term.recv() => { signalled = true; forward(&pids); }
            _ = int.recv() => { signalled = true; forward(&pids); }
            Some((id, code)) = exit_rx.recv() => {
                exited += 1;
                all_zero &= code == Some(0);
                let how = code.map_or_else(|| "by a signal".to_string(), |c| format!("with code {c}"));
                eprintln!("skiff dev: node {id} exited {how}");
            }
        }
    }
    if signalled && all_zero {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_FAILURE)
    }
}

/// Polls every node's Metadata until each lists `want` brokers (they registered and were
/// unfenced, and every node has applied that: a client may bootstrap from any of them);
/// `false` if that never happens (the nodes exit first, or two minutes pass).
async fn all_registered(ports: Vec<u16>, want: usize) -> bool {
    let clients: Vec<_> = ports
        .iter()
        .map(|port| {
            skiff_server::node_client::NodeClient::spawn(
                format!("localhost:{port}"),
                skiff_server::node_client::NodeClientConfig {
                    client_id: "skiff-dev".into(),
                    request_timeout: std::time::Duration::from_secs(5),
                    ..Default::default()
                },
            )
        })
        .collect();
    let mut seen = vec![false; clients.len()];
    for _ in 0..1200 {
        for (i, client) in clients.iter().enumerate() {
            if seen[i] {
                continue;
            }
            let req = skiff_protocol::MetadataRequest {
                topics: Some(Vec::new()),
                ..Default::default()
            };
            if let Ok(skiff_protocol::ResponseBody::Metadata(m)) = client.call(req).await {
                seen[i] = m.brokers.len() >= want;
            }
        }
        if seen.iter().all(|s| *s) {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    eprintln!("skiff dev: the nodes did not all register within two minutes");
    false
}

/// Sends SIGTERM to every child (a child that already exited is gone or a zombie until its
/// waiter reaps it, so its pid is not reused yet).
fn forward(pids: &[u32]) {
    use rustix::process::{Pid, Signal, kill_process};
    for pid in pids {
        if let Some(pid) = i32::try_from(*pid).ok().and_then(Pid::from_raw) {
            let _ = kill_process(pid, Signal::TERM);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_lays_out_ports_dirs_and_voters() {
        let one = plan(1, 9092, Path::new("/d")).unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!((one[0].port, one[0].controller_port), (9092, 9093));
        assert!(
            one[0]
                .properties
                .contains("controller.quorum.voters=1@localhost:9093\n")
        );
        assert!(one[0].properties.contains("log.dirs=/d/node-1/data\n"));
        assert!(
            one[0]
                .properties
                .contains("offsets.topic.replication.factor=1\n")
        );

        let three = plan(3, 19092, Path::new("/d")).unwrap();
        let ports: Vec<(u16, u16)> = three.iter().map(|n| (n.port, n.controller_port)).collect();
        assert_eq!(ports, [(19092, 19095), (19093, 19096), (19094, 19097)]);
        for n in &three {
            assert!(n.properties.contains(
                "controller.quorum.voters=1@localhost:19095,2@localhost:19096,3@localhost:19097\n"
            ));
            assert!(n.properties.contains(&format!("node.id={}\n", n.id)));
            assert!(
                n.properties
                    .contains("transaction.state.log.replication.factor=3\n")
            );
        }
        assert!(
            plan(5, 9092, Path::new("/d")).unwrap()[0]
                .properties
                .contains("offsets.topic.replication.factor=3\n")
        );
        assert!(plan(0, 9092, Path::new("/d")).is_err());
        assert!(
            plan(2, 65534, Path::new("/d"))
                .unwrap_err()
                .contains("65534..=65537")
        );
    }
}
