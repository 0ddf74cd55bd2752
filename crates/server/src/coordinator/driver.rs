//! The coordinator's timer driver: one tokio task that sleeps until the earliest shard
//! deadline, then fires every due shard's timers.
//!
//! Mental model: slots publish their next deadline after every call; when one changes the
//! coordinator's `Notify` wakes the driver, which recomputes the earliest deadline (a stored
//! permit means a change between computing and waiting is never lost). On the broker's
//! shutdown signal it answers every parked request NOT_COORDINATOR (so connections can drain)
//! and stops. Deadlines are wall-clock milliseconds, the shards' clock.

use std::sync::Arc;
use std::time::Duration;

use skiff_types::ErrorCode;

use crate::broker::Broker;

/// How long the driver sleeps when no timer is pending (it is woken earlier by any change).
const IDLE_SLEEP: Duration = Duration::from_secs(3600);

/// Runs until the broker shuts down.
pub(super) async fn run(broker: Arc<Broker>) {
    let mut shutdown = broker.shutdown_signal();
    let c = &broker.groups;
    loop {
        if *shutdown.borrow() {
            break;
        }
        let sleep = match c.earliest_deadline() {
            Some(d) => {
                Duration::from_millis(u64::try_from(d.saturating_sub(broker.now_ms())).unwrap_or(0))
            }
            None => IDLE_SLEEP,
        };
        tokio::select! {
            _ = tokio::time::sleep(sleep) => {}
            _ = c.wake.notified() => continue,
            _ = shutdown.changed() => break,
        }
        c.tick_due(&broker, broker.now_ms());
    }
    c.fail_all_pending(ErrorCode::NotCoordinator);
}
