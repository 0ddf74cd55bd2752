//! The admin HTTP port (`skiff.admin.listener`): health probes and a JSON operator view of
//! the partitions, served by axum on the server's tokio runtime.
//!
//! Mental model: the port is bound only when configured (the key is empty by default: no
//! port is bound unless asked for). It is bound *first* in `Server::start`, before the logs
//! load, so `/livez` answers during a long recovery and `/readyz` says why the broker is not
//! ready yet. [`AdminState`] is what the handlers see: the broker once it is open
//! ([`AdminState::set_broker`]), whether the Kafka listeners are bound, and the shutdown
//! signal; readiness itself is the pure [`model::readiness`].
//!
//! Endpoints (all JSON; the shapes live in [`model`]):
//! - `GET /livez` -> 200 `{"status":"ok"}` whenever the process serves HTTP;
//! - `GET /readyz` -> 200 `{"status":"ok"}` or 503 `{"status":"not_ready","reasons":[...]}`
//!   (alias `/v1/status/ready`, Redpanda's path);
//! - `GET /api/v1/partitions` -> every hosted partition ([`model::PartitionList`]);
//! - `GET /api/v1/partitions/{topic}/{partition}` -> one partition plus the sections of
//!   [`sections::SECTION_PROVIDERS`] ([`model::PartitionDetail`]); 404 if not hosted, 400
//!   for a partition that is not a number;
//! - `GET /api/v1/stats` -> the broker's counters since start ([`crate::stats::StatsSnapshot`]):
//!   `{"fetch_sessions": {"created", "incremental_fetches", "cached"}, "sendfile": {"regions",
//!   "bytes"}, "copied_bytes"}` (tests use it to prove fetch sessions and zero-copy are used);
//! - `GET /metrics` -> Prometheus/OpenMetrics text ([`crate::metrics::render`], issue 20;
//!   404 when the `metrics` feature is compiled out, 503 while loading);
//! - anything else -> 404 `{"error":"not_found",...}`; `/api/v1/...` before the broker is
//!   open -> 503 `not_ready`.
//!
//! Invariants: read-only (no endpoint changes broker state); handlers never hold a log lock
//! across an `.await` (the per-partition work runs on the blocking pool); shutdown is
//! bounded ([`ADMIN_SHUTDOWN_MS_MAX`]) even with idle keep-alive connections open.

pub mod model;
pub mod sections;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use skiff_types::TopicPartition;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::broker::Broker;
use crate::error::ServerError;
use model::{ApiError, PartitionDetail, PartitionList, PartitionSummary, ReadinessFacts, Status};

/// How long shutdown waits for in-flight admin requests before dropping them.
pub const ADMIN_SHUTDOWN_MS_MAX: u64 = 2_000;

/// What the admin handlers see of the server. Shared as `Arc<AdminState>`.
#[derive(Debug)]
pub struct AdminState {
    broker: OnceLock<Arc<Broker>>,
    listeners_bound: AtomicBool,
    shutdown: watch::Receiver<bool>,
}

impl AdminState {
    /// A server that is starting: nothing loaded, nothing bound.
    pub fn new(shutdown: watch::Receiver<bool>) -> Arc<Self> {
        Arc::new(Self {
            broker: OnceLock::new(),
            listeners_bound: AtomicBool::new(false),
            shutdown,
        })
    }

    /// The broker state is open (metadata replayed, logs loaded).
    pub fn set_broker(&self, broker: &Arc<Broker>) {
        let _ = self.broker.set(Arc::clone(broker));
    }

    /// Every Kafka listener is bound.
    pub fn set_listeners_bound(&self) {
        self.listeners_bound.store(true, Ordering::Release);
    }

    pub fn broker(&self) -> Option<&Arc<Broker>> {
        self.broker.get()
    }

    pub fn facts(&self) -> ReadinessFacts {
        ReadinessFacts {
            logs_and_metadata_loaded: self.broker.get().is_some(),
            listeners_bound: self.listeners_bound.load(Ordering::Acquire),
            shutting_down: *self.shutdown.borrow(),
            offline_log_dirs: self
                .broker
                .get()
                .map_or(0, |b| b.replicas.log_manager().offline_dirs().len()),
        }
    }
}

/// The running admin HTTP server.
#[derive(Debug)]
pub struct AdminHttp {
    local_addr: SocketAddr,
    stop_tx: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl AdminHttp {
    /// Binds `host:port` and starts serving. Dropping the value without
    /// [`AdminHttp::shutdown`] also stops the server (the stop signal's sender goes away).
    pub async fn bind(
        host: &str,
        port: u16,
        state: Arc<AdminState>,
    ) -> Result<AdminHttp, ServerError> {
        let tcp = TcpListener::bind((host, port))
            .await
            .map_err(|source| ServerError::Bind {
                name: "admin".into(),
                addr: format!("{host}:{port}"),
                source,
            })?;
        let local_addr = tcp.local_addr()?;
        let (stop_tx, mut stop_rx) = watch::channel(false);
        let app = router(state);
        let task = tokio::spawn(async move {
            let stopped = async move {
                // Err = the sender was dropped: stop as well.
                let _ = stop_rx.wait_for(|stop| *stop).await;
            };
            if let Err(e) = axum::serve(tcp, app).with_graceful_shutdown(stopped).await {
                tracing::error!(error = %e, "admin HTTP server failed");
            }
        });
        tracing::info!(bind = %local_addr, "admin HTTP listening");
        Ok(AdminHttp {
            local_addr,
            stop_tx,
            task,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The line the binary prints on stdout when the port is bound.
    pub fn ready_line(&self) -> String {
        format!("skiff ready admin bind={}", self.local_addr)
    }

    /// Stops accepting, lets in-flight requests finish (bounded), then returns.
    pub async fn shutdown(self) {
        let _ = self.stop_tx.send(true);
        let mut task = self.task;
        let wait = Duration::from_millis(ADMIN_SHUTDOWN_MS_MAX);
        if tokio::time::timeout(wait, &mut task).await.is_err() {
            tracing::warn!(
                "admin HTTP requests still open after {ADMIN_SHUTDOWN_MS_MAX} ms; dropping them"
            );
            task.abort();
        }
    }
}

/// The admin routes over `state`.
pub fn router(state: Arc<AdminState>) -> Router {
    Router::new()
        .route("/livez", get(livez))
        .route("/readyz", get(readyz))
        .route("/v1/status/ready", get(readyz))
        .route("/api/v1/partitions", get(list_partitions))
        .route(
            "/api/v1/partitions/{topic}/{partition}",
            get(partition_detail),
        )
        .route("/api/v1/stats", get(stats))
        .route("/metrics", get(metrics))
        .fallback(not_found)
        .with_state(state)
}

fn error(status: StatusCode, code: &str, message: impl Into<String>) -> Response {
    (status, Json(ApiError::new(code, message))).into_response()
}

async fn not_found() -> Response {
    error(StatusCode::NOT_FOUND, "not_found", "no such admin endpoint")
}

pub async fn livez() -> Json<Status> {
    Json(Status::ok())
}

pub async fn readyz(State(state): State<Arc<AdminState>>) -> Response {
    match model::readiness(state.facts()) {
        Ok(s) => (StatusCode::OK, Json(s)).into_response(),
        Err(s) => (StatusCode::SERVICE_UNAVAILABLE, Json(s)).into_response(),
    }
}

/// The broker, or the 503 the API answers while it is loading.
#[allow(clippy::result_large_err)]
fn loaded(state: &AdminState) -> Result<Arc<Broker>, Response> {
    state.broker().cloned().ok_or_else(|| {
        error(
            StatusCode::SERVICE_UNAVAILABLE,
            "not_ready",
            model::reason::LOADING,
        )
    })
}

/// Runs blocking partition reads off the async workers.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Response> {
    tokio::task::spawn_blocking(f).await.map_err(|e| {
        tracing::error!(error = %e, "admin request task failed");
        error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "request failed",
        )
    })
}

pub async fn list_partitions(State(state): State<Arc<AdminState>>) -> Response {
    let broker = match loaded(&state) {
        Ok(b) => b,
        Err(r) => return r,
    };
    match blocking(move || partition_list(&broker)).await {
        Ok(doc) => Json(doc).into_response(),
        Err(r) => r,
    }
}

pub async fn partition_detail(
    State(state): State<Arc<AdminState>>,
    Path((topic, partition)): Path<(String, String)>,
) -> Response {
    let broker = match loaded(&state) {
        Ok(b) => b,
        Err(r) => return r,
    };
    let Ok(partition) = partition.parse::<i32>() else {
        return error(
            StatusCode::BAD_REQUEST,
            "bad_request",
            format!("partition must be an integer, got {partition:?}"),
        );
    };
    let tp = TopicPartition::new(topic, partition);
    match blocking(move || detail(&broker, &tp).ok_or(tp)).await {
        Ok(Ok(doc)) => Json(doc).into_response(),
        Ok(Err(tp)) => error(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("this broker does not host partition {tp}"),
        ),
        Err(r) => r,
    }
}

pub async fn stats(State(state): State<Arc<AdminState>>) -> Response {
    match loaded(&state) {
        Ok(broker) => {
            let cached = broker.fetch_sessions.lock().len();
            let mut snapshot = broker.stats.snapshot(cached);
            snapshot.replication = broker.replicas.replication_stats();
            Json(snapshot).into_response()
        }
        Err(r) => r,
    }
}

/// `GET /metrics`: rendered on the blocking pool (it takes log locks one at a time).
pub async fn metrics(State(state): State<Arc<AdminState>>) -> Response {
    let broker = match loaded(&state) {
        Ok(b) => b,
        Err(r) => return r,
    };
    match blocking(move || crate::metrics::render(&broker)).await {
        Ok(Some(text)) => (
            [(
                axum::http::header::CONTENT_TYPE,
                crate::metrics::CONTENT_TYPE,
            )],
            text,
        )
            .into_response(),
        Ok(None) => error(
            StatusCode::NOT_FOUND,
            "not_found",
            "metrics are compiled out of this build (cargo feature `metrics`)",
        ),
        Err(r) => r,
    }
}

/// The summary of one hosted log (takes its lock briefly).
fn summary(s: crate::replica::admin::PartitionSnapshot) -> PartitionSummary {
    PartitionSummary {
        topic: s.tp.topic,
        partition: s.tp.partition,
        log_start_offset: s.log_start_offset,
        log_end_offset: s.log_end_offset,
        high_watermark: s.high_watermark,
        size_bytes: s.size_bytes,
        segment_count: s.segment_count,
        quarantined_ranges: s.quarantined_ranges,
    }
}

/// Every hosted partition, sorted by topic then partition (the replica manager's snapshot).
pub fn partition_list(broker: &Broker) -> PartitionList {
    let mut partitions: Vec<PartitionSummary> = broker
        .replicas
        .snapshot()
        .into_iter()
        .map(summary)
        .collect();
    partitions.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
    PartitionList { partitions }
}

/// One hosted partition with its sections; `None` if the broker does not host it.
pub fn detail(broker: &Broker, tp: &TopicPartition) -> Option<PartitionDetail> {
    let summary = summary(broker.replicas.partition_snapshot(tp)?);
    Some(PartitionDetail {
        summary,
        sections: sections::collect(broker, tp),
    })
}

#[cfg(test)]
mod tests;
