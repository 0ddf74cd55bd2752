//! Accepting connections on one listener, with connection limits (B19).
//!
//! Mental model: one accept loop per listener. `max.connections` is a semaphore across all
//! listeners: when it is exhausted the loop stops accepting until a connection ends (the kernel
//! backlog absorbs the rest). `max.connections.per.ip` is counted per peer address: a connection
//! beyond it is accepted and closed at once. Each connection runs in its own task and holds a
//! [`ConnectionGuard`] that gives its slots back when it ends, and a clone of the drain sender
//! so shutdown can wait for every connection to finish.
//!
//! Thread-safety: the per-IP table is a mutex-protected map touched only at accept and close.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};
use tracing::Instrument;

use crate::broker::Broker;
use crate::connection;
use crate::handlers::ListenerInfo;

/// Connection counts shared by every listener.
#[derive(Debug)]
pub struct ConnectionLimits {
    total: Arc<Semaphore>,
    per_ip: Mutex<HashMap<IpAddr, usize>>,
    per_ip_max: usize,
}

impl ConnectionLimits {
    pub fn new(total_max: usize, per_ip_max: usize) -> Arc<Self> {
        Arc::new(Self {
            total: Arc::new(Semaphore::new(total_max.clamp(1, Semaphore::MAX_PERMITS))),
            per_ip: Mutex::new(HashMap::new()),
            per_ip_max: per_ip_max.max(1),
        })
    }

    fn try_ip(self: &Arc<Self>, ip: IpAddr) -> Option<IpSlot> {
        let mut m = self.per_ip.lock();
        let n = m.entry(ip).or_insert(0);
        if *n >= self.per_ip_max {
            return None;
        }
        *n += 1;
        Some(IpSlot {
            limits: Arc::clone(self),
            ip,
        })
    }

    /// Open connections from `ip` (tests, metrics).
    pub fn open_from(&self, ip: IpAddr) -> usize {
        self.per_ip.lock().get(&ip).copied().unwrap_or(0)
    }
}

/// Gives a per-IP slot back when dropped.
#[derive(Debug)]
struct IpSlot {
    limits: Arc<ConnectionLimits>,
    ip: IpAddr,
}

impl Drop for IpSlot {
    fn drop(&mut self) {
        let mut m = self.limits.per_ip.lock();
        if let Some(n) = m.get_mut(&self.ip) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                m.remove(&self.ip);
            }
        }
    }
}

/// Everything a connection holds for its lifetime.
#[derive(Debug)]
struct ConnectionGuard {
    _total: OwnedSemaphorePermit,
    _ip: IpSlot,
    _drain: mpsc::Sender<()>,
}

/// Runs the accept loop until shutdown.
pub async fn accept_loop(
    listener: TcpListener,
    info: Arc<ListenerInfo>,
    broker: Arc<Broker>,
    limits: Arc<ConnectionLimits>,
    drain: mpsc::Sender<()>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        let permit = tokio::select! {
            p = Arc::clone(&limits.total).acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
            _ = shutdown.changed() => break,
        };
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = shutdown.changed() => break,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // EMFILE and friends: back off briefly instead of spinning.
                tracing::warn!(listener = %info.name, error = %e, "accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let Some(ip_slot) = limits.try_ip(peer.ip()) else {
            tracing::warn!(%peer, "max.connections.per.ip reached; closing the new connection");
            drop(stream);
            continue;
        };
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(%peer, error = %e, "cannot set TCP_NODELAY");
        }
        let guard = ConnectionGuard {
            _total: permit,
            _ip: ip_slot,
            _drain: drain.clone(),
        };
        let broker = Arc::clone(&broker);
        let info = Arc::clone(&info);
        let shutdown = shutdown.clone();
        tokio::spawn(serve_one(stream, peer, broker, info, shutdown, guard));
    }
    tracing::debug!(listener = %info.name, "stopped accepting");
}

async fn serve_one(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    broker: Arc<Broker>,
    info: Arc<ListenerInfo>,
    shutdown: watch::Receiver<bool>,
    guard: ConnectionGuard,
) {
    let span = tracing::debug_span!("connection", %peer, listener = %info.name);
    async move {
        tracing::debug!("connection opened");
        connection::serve(stream, peer, broker, info, shutdown).await;
        tracing::debug!("connection closed");
        drop(guard);
    }
    .instrument(span)
    .await;
}
