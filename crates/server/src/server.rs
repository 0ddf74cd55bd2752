//! Starting and stopping the whole server: broker state, listeners, background work.
//!
//! Start: bind the admin HTTP port if configured (first, so `/livez` answers and `/readyz`
//! says "loading" during a long recovery), open the metadata log and every partition log
//! (blocking, before serving), start the log manager's background ticker, the cleaner and the
//! log scrubber (issue 12), bind every listener
//! (port 0 = ephemeral; the advertised port then follows the bound one) and spawn one accept
//! loop per listener; a single combined voter then waits until it serves as a broker
//! (registered, unfenced); then tell the admin state the listeners are bound.
//! Shutdown (SIGTERM/SIGINT in the binary): flip the shutdown watch (accept loops stop,
//! connections stop reading at a frame boundary, long-polling fetches answer now, `/readyz`
//! turns 503), a single combined voter fences its own registration (so its next start
//! registers at once), wait for connections to drain (bounded by `shutdown_drain_ms_max`),
//! stop the admin port, stop the ticker, then `LogManager::shutdown()` (flush, checkpoints,
//! clean-shutdown marker), close the metadata log and release the log dirs' `.lock`s (taken
//! by `Broker::open` before anything touched the dirs).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use skiff_storage::log_manager::BackgroundHandle;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::admin_http::{AdminHttp, AdminState};
use crate::broker::Broker;
use crate::error::ServerError;
use crate::handlers::ListenerInfo;
use crate::listener::{ConnectionLimits, accept_loop};
use crate::settings::{ServerSettings, TopicConfigs};

/// A listener as bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoundListener {
    pub name: String,
    pub local_addr: SocketAddr,
    pub advertised_host: String,
    pub advertised_port: u16,
}

impl BoundListener {
    /// The line the binary prints on stdout when ready.
    pub fn ready_line(&self) -> String {
        format!(
            "skiff ready listener={} bind={} advertised={}:{}",
            self.name,
            self.local_addr,
            bracket_ipv6(&self.advertised_host),
            self.advertised_port
        )
    }
}

fn bracket_ipv6(host: &str) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

/// A running server.
#[derive(Debug)]
pub struct Server {
    broker: Arc<Broker>,
    listeners: Vec<BoundListener>,
    shutdown_tx: watch::Sender<bool>,
    drain_rx: mpsc::Receiver<()>,
    accept_tasks: Vec<JoinHandle<()>>,
    background: Option<BackgroundHandle>,
    admin: Option<AdminHttp>,
    // compaction (issue 7)
    cleaner: Option<skiff_compaction::LogCleaner>,
    // corruption handling (issue 12)
    scrubber: Option<skiff_storage::integrity::scrubber::Scrubber>,
}

impl Server {
    /// Opens storage and metadata, binds every listener and starts serving.
    pub async fn start(
        settings: ServerSettings,
        topic_configs: Arc<dyn TopicConfigs>,
    ) -> Result<Server, ServerError> {
        if settings.listeners.is_empty() {
            return Err(ServerError::Config("no listeners configured".into()));
        }
        let (shutdown_tx, shutdown_rx) = watch::channel(false);
        let listener_settings = settings.listeners.clone();
        let admin_state = AdminState::new(shutdown_rx.clone());
        // On an early return below, dropping `admin` stops the admin port again.
        let admin = match &settings.admin_bind {
            Some((host, port)) => {
                Some(AdminHttp::bind(host, *port, Arc::clone(&admin_state)).await?)
            }
            None => None,
        };
        let broker = {
            let rx = shutdown_rx.clone();
            tokio::task::spawn_blocking(move || Broker::open(settings, topic_configs, rx))
                .await
                .map_err(|e| ServerError::Settings(format!("startup task failed: {e}")))??
        };
        admin_state.set_broker(&broker);
        // issue 19: the authorizer follows the image's ACLs (no-op without an authorizer).
        if broker.authz.is_enabled() {
            crate::acl_sync::install(&broker);
        }
        let background = Some(broker.replicas.log_manager().start_background());
        let cleaner = Some(crate::cleaner::start(&broker));
        let scrubber = Some(crate::scrubber::start(&broker));
        crate::coordinator::GroupCoordinator::start(&broker);
        crate::txn::TxnCoordinator::start(&broker);
        // delivery delay (issue 8): the DSO timer
        crate::delivery::schedule_loaded(&broker);
        tokio::spawn(crate::delivery::run(Arc::clone(&broker)));
        tokio::spawn(crate::security::reload_tls(Arc::clone(&broker)));
        let limits = ConnectionLimits::new(
            broker.settings.connections_max,
            broker.settings.connections_per_ip_max,
        );
        if let Some(live) = broker.topic_configs.live() {
            crate::live_config::follow_connection_limits(live, &limits);
        }
        let (drain_tx, drain_rx) = mpsc::channel::<()>(1);
        let mut listeners = Vec::new();
        let mut accept_tasks = Vec::new();
        for l in &listener_settings {
            let host = if l.bind_host.is_empty() {
                "0.0.0.0"
            } else {
                l.bind_host.trim_start_matches('[').trim_end_matches(']')
            };
            let tcp = TcpListener::bind((host, l.bind_port))
                .await
                .map_err(|source| ServerError::Bind {
                    name: l.name.clone(),
                    addr: format!("{host}:{}", l.bind_port),
                    source,
                })?;
            let local_addr = tcp.local_addr()?;
            let advertised_host = if l.advertised_host.is_empty() {
                "localhost".to_string()
            } else {
                l.advertised_host.clone()
            };
            let advertised_port = if l.advertised_port == 0 {
                local_addr.port()
            } else {
                l.advertised_port
            };
            let info = Arc::new(ListenerInfo {
                name: l.name.clone(),
                advertised_host: advertised_host.clone(),
                advertised_port,
                controller: l.controller,
            });
            tracing::info!(listener = %l.name, bind = %local_addr, advertised = %format!("{advertised_host}:{advertised_port}"), "listening");
            listeners.push(BoundListener {
                name: l.name.clone(),
                local_addr,
                advertised_host,
                advertised_port,
            });
            accept_tasks.push(tokio::spawn(accept_loop(
                tcp,
                info,
                Arc::clone(&broker),
                Arc::clone(&limits),
                drain_tx.clone(),
                shutdown_rx.clone(),
            )));
        }
        drop(drain_tx);
        // issue 16: registration, heartbeats, the controller timer, the partition reconciler.
        crate::cluster::start(&broker, &listeners);
        crate::cluster::until_single_voter_serves(&broker, Duration::from_secs(20)).await;
        admin_state.set_listeners_bound();
        Ok(Server {
            broker,
            listeners,
            shutdown_tx,
            drain_rx,
            accept_tasks,
            background,
            admin,
            cleaner,
            scrubber,
        })
    }

    /// The bound listeners, in configuration order.
    pub fn listeners(&self) -> &[BoundListener] {
        &self.listeners
    }

    /// The admin HTTP port's address, if `skiff.admin.listener` is set.
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.admin.as_ref().map(AdminHttp::local_addr)
    }

    /// The ready line of the admin HTTP port, if bound (`skiff ready admin bind=...`).
    pub fn admin_ready_line(&self) -> Option<String> {
        self.admin.as_ref().map(AdminHttp::ready_line)
    }

    pub fn broker(&self) -> &Arc<Broker> {
        &self.broker
    }

    /// Resolves with a message when the metadata quorum cannot go on safely (its voters
    /// disagree): the binary then stops with exit 2. Never resolves on a single node.
    pub async fn fatal(&self) -> String {
        let Some(q) = &self.broker.quorum else {
            return std::future::pending().await;
        };
        let mut rx = q.fatal();
        loop {
            if let Some(m) = rx.borrow_and_update().clone() {
                return m;
            }
            if rx.changed().await.is_err() {
                return std::future::pending().await;
            }
        }
    }

    /// Stops accepting, drains connections, then shuts storage down cleanly.
    pub async fn shutdown(mut self) -> Result<(), ServerError> {
        tracing::info!("shutting down");
        let _ = self.shutdown_tx.send(true);
        for t in self.accept_tasks.drain(..) {
            let _ = t.await;
        }
        crate::cluster::fence_self_at_shutdown(&self.broker).await;
        let drain = Duration::from_millis(self.broker.settings.shutdown_drain_ms_max);
        if tokio::time::timeout(drain, self.drain_rx.recv())
            .await
            .is_err()
        {
            tracing::warn!(
                "connections still open after {} ms; closing storage anyway",
                drain.as_millis()
            );
        }
        if let Some(admin) = self.admin.take() {
            admin.shutdown().await;
        }
        let background = self.background.take();
        let cleaner = self.cleaner.take();
        let scrubber = self.scrubber.take();
        let broker = Arc::clone(&self.broker);
        tokio::task::spawn_blocking(move || {
            drop(cleaner); // stops the cleaner threads before storage closes
            drop(scrubber);
            drop(background);
            broker.replicas.log_manager().shutdown()?;
            broker.metadata.close()?;
            broker.release_dir_locks();
            Ok::<(), ServerError>(())
        })
        .await
        .map_err(|e| ServerError::Settings(format!("shutdown task failed: {e}")))??;
        tracing::info!("shutdown complete");
        Ok(())
    }
}
