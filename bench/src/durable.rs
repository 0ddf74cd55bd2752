//! Durable mode (`flush.messages=1`): every produce batch is fdatasynced before it would be
//! acknowledged, with group commit across concurrent producers.
//!
//! Mental model: the broker's produce path for a durable topic is validate (no lock) ->
//! lock the log, `append_validated`, unlock -> `SyncState::sync_to(last_offset + 1)` (no log
//! lock; one fdatasync at a time covers everything appended before it started). Here one
//! writer, or W writer threads sharing one `Log` behind a mutex, run that loop for a fixed
//! duration with B-byte batches (1 KiB records). Reported: MB/s of batch bytes, appends/s,
//! fdatasyncs/s (the group-commit factor is appends per fsync), compared with the raw fsync
//! loop at the same B measured in the same run.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow};
use parking_lot::Mutex;
use skiff_storage::LogConfig;

use crate::append::{now_ms, open_log};
use crate::machine::settle;
use crate::payload::BatchPool;
use crate::report::MB;

/// What a durable cell measured.
#[derive(Debug, Clone, Copy)]
pub struct DurableRun {
    pub mb_per_s: f64,
    pub appends_per_s: f64,
    pub fsyncs_per_s: f64,
}

/// Runs `writers` producer threads for `duration` on a fresh durable log in `dir`. The threads
/// share `pool` read-only: validation returns a fresh buffer, which is what gets appended.
pub fn run(dir: &Path, pool: &BatchPool, writers: usize, duration: Duration) -> Result<DurableRun> {
    let mut cfg = LogConfig::default();
    cfg.set("flush.messages", "1")
        .map_err(|e| anyhow!("flush.messages=1: {e}"))?;
    let vcfg = cfg.validation_config();
    let log = Arc::new(Mutex::new(open_log(dir, cfg, now_ms())?));
    let sync = Arc::clone(log.lock().sync());
    let bytes = AtomicU64::new(0);
    let appends = AtomicU64::new(0);
    let fsyncs = AtomicU64::new(0);
    settle();
    let start = Instant::now();
    let deadline = start + duration;
    std::thread::scope(|s| -> Result<()> {
        let mut handles = Vec::with_capacity(writers);
        for w in 0..writers {
            let (log, sync, vcfg) = (&log, &sync, &vcfg);
            let (bytes, appends, fsyncs) = (&bytes, &appends, &fsyncs);
            let batches = &pool.batches;
            handles.push(s.spawn(move || -> Result<()> {
                let mut i = w * 7;
                while Instant::now() < deadline {
                    let src = &batches[i % batches.len()];
                    i += 1;
                    let now = now_ms();
                    let v = skiff_storage::validate::validate_client_batch(src, vcfg, now)
                        .map_err(|e| anyhow!("validation rejected a benchmark batch: {e:?}"))?;
                    let len = v.size() as u64;
                    let info = log.lock().append_validated(&v, 0, now)?;
                    fsyncs.fetch_add(
                        u64::from(sync.sync_to(info.last_offset + 1)?),
                        Ordering::Relaxed,
                    );
                    bytes.fetch_add(len, Ordering::Relaxed);
                    appends.fetch_add(1, Ordering::Relaxed);
                }
                Ok(())
            }));
        }
        for h in handles {
            h.join()
                .map_err(|_| anyhow!("a durable writer thread panicked"))??;
        }
        Ok(())
    })?;
    let secs = start.elapsed().as_secs_f64();
    drop(log);
    Ok(DurableRun {
        mb_per_s: bytes.load(Ordering::Relaxed) as f64 / secs / MB,
        appends_per_s: appends.load(Ordering::Relaxed) as f64 / secs,
        fsyncs_per_s: fsyncs.load(Ordering::Relaxed) as f64 / secs,
    })
}
