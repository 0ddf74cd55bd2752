//! Accepting connections on one listener, with connection limits (B19).
//!
//! Mental model: one accept loop per listener. `max.connections` is a semaphore across all
//! listeners: when it is exhausted the loop stops accepting until a connection ends (the kernel
//! backlog absorbs the rest). `max.connections.per.ip` is counted per peer address: a connection
//! beyond it is accepted and closed at once. Each connection runs in its own task and holds a
//! [`ConnectionGuard`] that gives its slots back when it ends, and a clone of the drain sender
//! so shutdown can wait for every connection to finish. Both limits follow dynamic broker
//! configs at runtime ([`ConnectionLimits::set_total_max`], [`ConnectionLimits::set_per_ip_max`]).
//!
//! Thread-safety: the per-IP table is a mutex-protected map touched only at accept and close.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

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
    /// The `max.connections` the semaphore's permits stand for (changed by dynamic configs).
    total_max: AtomicUsize,
    per_ip: Mutex<HashMap<IpAddr, usize>>,
    per_ip_max: AtomicUsize,
}

impl ConnectionLimits {
    pub fn new(total_max: usize, per_ip_max: usize) -> Arc<Self> {
        let total_max = total_max.clamp(1, Semaphore::MAX_PERMITS);
        Arc::new(Self {
            total: Arc::new(Semaphore::new(total_max)),
            total_max: AtomicUsize::new(total_max),
            per_ip: Mutex::new(HashMap::new()),
            per_ip_max: AtomicUsize::new(per_ip_max.max(1)),
        })
    }

    /// Changes `max.connections` at runtime (dynamic config): a higher limit admits waiting
    /// connections at once; a lower one takes effect as open connections end (none is closed;
    /// each accept loop already holds the slot of its next connection, so up to one more
    /// connection per listener is still admitted). Call from within the tokio runtime.
    pub fn set_total_max(&self, max: usize) {
        let max = max.clamp(1, Semaphore::MAX_PERMITS);
        let old = self.total_max.swap(max, Ordering::AcqRel);
        if max > old {
            self.total.add_permits(max - old);
        } else if old > max {
            let excess = u32::try_from(old - max).unwrap_or(u32::MAX);
            let total = Arc::clone(&self.total);
            tokio::spawn(async move {
                // Withdraw the excess permits as connections give theirs back.
                if let Ok(p) = total.acquire_many_owned(excess).await {
                    p.forget();
                }
            });
        }
    }

    /// Changes `max.connections.per.ip` at runtime; applies to the next accepted connection.
    pub fn set_per_ip_max(&self, max: usize) {
        self.per_ip_max.store(max.max(1), Ordering::Release);
    }

    fn try_ip(self: &Arc<Self>, ip: IpAddr) -> Option<IpSlot> {
        let mut m = self.per_ip.lock();
        let n = m.entry(ip).or_insert(0);
        if *n >= self.per_ip_max.load(Ordering::Acquire) {
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
