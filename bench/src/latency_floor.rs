//! The machine's floor for end-to-end latency (issue 14, the p99.9/p50 target): a bare relay
//! with a log's I/O pattern and none of a broker's logic, measured beside the brokers in the
//! same run and with the same pinning.
//!
//! Mental model: two processes. The relay (on the broker core) listens, prints its port on
//! stdout, accepts the producer's connection and then the consumer's, and forwards every byte
//! from the first to the second; with `--log-dir` it also `write(2)`s each chunk to a segment
//! file before forwarding, and when a segment reaches `--segment-bytes` it starts the next one
//! and `fdatasync`s the full one on a second thread, as a broker's roll does. The client (on
//! the generator core) connects both ends, sends `--rate` records of `--size` bytes per second
//! for `--secs` seconds on an absolute schedule (it sleeps when ahead, like the paced
//! rdkafka_performance), each stamped with `CLOCK_MONOTONIC` (one clock for both processes'
//! threads on one machine), and a reader thread takes the latency of every record that comes
//! back. The first `--warmup-s` seconds are dropped, as in the broker latency phase. Output:
//! one JSON line with p50/p99/p99.9/max in ms and the sample count.
//!
//! What it shows: the latency any broker on this machine pays on top of its own work, loopback
//! TCP both ways, scheduling on shared cores and the disk's writeback, with no protocol,
//! batching or fetch loop. Blocking sockets with TCP_NODELAY; the relay is single-threaded
//! apart from the flush thread; owns only its sockets and the segment files it creates.

use std::fs::File;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Context, Result, bail};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// `relay` or `client`.
    #[arg(long)]
    role: String,
    /// relay: the address to listen on (port 0 = ephemeral); client: the relay's address.
    #[arg(long, default_value = "127.0.0.1:0")]
    addr: String,
    /// relay: write every chunk to segment files here before forwarding it (none: no disk).
    #[arg(long)]
    log_dir: Option<PathBuf>,
    /// relay: segment size; a full segment is fdatasync'ed by the flush thread.
    #[arg(long, default_value_t = 1 << 30)]
    segment_bytes: u64,
    /// client: records per second.
    #[arg(long, default_value_t = 67_000)]
    rate: u64,
    /// client: record size in bytes (at least 8: the timestamp).
    #[arg(long, default_value_t = 1024)]
    size: usize,
    /// client: seconds of load.
    #[arg(long, default_value_t = 12)]
    secs: u64,
    /// client: seconds of samples dropped at the start.
    #[arg(long, default_value_t = 2)]
    warmup_s: u64,
}

fn mono_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

pub fn main(args: Args) -> Result<()> {
    match args.role.as_str() {
        "relay" => relay(&args),
        "client" => client(&args),
        other => bail!("--role must be relay or client, not {other}"),
    }
}

fn relay(args: &Args) -> Result<()> {
    let listener = TcpListener::bind(&args.addr).context("bind")?;
    println!("{}", listener.local_addr()?.port());
    std::io::stdout().flush()?;
    let (mut from, _) = listener.accept().context("accept producer")?;
    let (mut to, _) = listener.accept().context("accept consumer")?;
    from.set_nodelay(true)?;
    to.set_nodelay(true)?;
    let (flush_tx, flush_rx) = mpsc::channel::<File>();
    let flusher = std::thread::spawn(move || {
        for f in flush_rx {
            let _ = f.sync_data();
        }
    });
    let mut segment = match &args.log_dir {
        Some(dir) => Some(Segments::open(dir.clone(), args.segment_bytes)?),
        None => None,
    };
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = from.read(&mut buf).context("read from producer")?;
        if n == 0 {
            break;
        }
        if let Some(s) = segment.as_mut() {
            s.append(&buf[..n], &flush_tx)?;
        }
        to.write_all(&buf[..n]).context("forward")?;
    }
    drop(to);
    drop(flush_tx);
    let _ = flusher.join();
    if let Some(s) = segment {
        s.remove();
    }
    Ok(())
}

/// Segment files `<dir>/floor-<n>.log`, rolled at `limit` bytes.
struct Segments {
    dir: PathBuf,
    limit: u64,
    n: u32,
    len: u64,
    file: File,
}

impl Segments {
    fn path(dir: &std::path::Path, n: u32) -> PathBuf {
        dir.join(format!("floor-{n}.log"))
    }

    fn open(dir: PathBuf, limit: u64) -> Result<Segments> {
        std::fs::create_dir_all(&dir)?;
        let file = File::create(Self::path(&dir, 0))?;
        Ok(Segments {
            dir,
            limit,
            n: 0,
            len: 0,
            file,
        })
    }

    fn append(&mut self, bytes: &[u8], flush: &mpsc::Sender<File>) -> Result<()> {
        self.file.write_all(bytes).context("segment write")?;
        self.len += bytes.len() as u64;
        if self.len >= self.limit {
            self.n += 1;
            let next = File::create(Self::path(&self.dir, self.n))?;
            let full = std::mem::replace(&mut self.file, next);
            self.len = 0;
            let _ = flush.send(full);
        }
        Ok(())
    }

    fn remove(self) {
        for n in 0..=self.n {
            let _ = std::fs::remove_file(Self::path(&self.dir, n));
        }
    }
}

fn client(args: &Args) -> Result<()> {
    if args.size < 8 {
        bail!("--size must be at least 8 (the timestamp)");
    }
    let mut prod = TcpStream::connect(&args.addr).context("connect producer")?;
    let cons = TcpStream::connect(&args.addr).context("connect consumer")?;
    prod.set_nodelay(true)?;
    cons.set_nodelay(true)?;
    let total = args.rate * args.secs;
    let size = args.size;
    let reader = std::thread::spawn(move || -> Result<Vec<u64>> {
        let mut cons = cons;
        let mut rec = vec![0u8; size];
        let mut lat = Vec::with_capacity(total as usize);
        for _ in 0..total {
            cons.read_exact(&mut rec).context("read back")?;
            let now = mono_ns();
            let mut ts = [0u8; 8];
            ts.copy_from_slice(&rec[..8]);
            lat.push(now.saturating_sub(u64::from_le_bytes(ts)));
        }
        Ok(lat)
    });
    let mut rec = vec![b'x'; size];
    let start = mono_ns();
    let interval_ns = 1_000_000_000 / args.rate.max(1);
    for i in 0..total {
        let due = start + i * interval_ns;
        let now = mono_ns();
        if due > now + 50_000 {
            std::thread::sleep(Duration::from_nanos(due - now));
        }
        rec[..8].copy_from_slice(&mono_ns().to_le_bytes());
        prod.write_all(&rec).context("send")?;
    }
    let sent_s = (mono_ns() - start) as f64 / 1e9;
    drop(prod);
    let lat = reader
        .join()
        .map_err(|_| anyhow::anyhow!("reader panicked"))??;
    let drop_n = (args.rate * args.warmup_s) as usize;
    let mut kept: Vec<u64> = lat.into_iter().skip(drop_n).collect();
    kept.sort_unstable();
    let pct = |q: f64| -> f64 {
        if kept.is_empty() {
            return f64::NAN;
        }
        // vs_kafka.py's percentile: the sample at round(q * (n - 1)).
        let i = ((q * (kept.len() - 1) as f64).round() as usize).min(kept.len() - 1);
        kept[i] as f64 / 1e6
    };
    println!(
        "{{\"samples\": {}, \"achieved_rec_s\": {:.0}, \"p50_ms\": {:.4}, \"p99_ms\": {:.4}, \"p999_ms\": {:.4}, \"max_ms\": {:.4}}}",
        kept.len(),
        total as f64 / sent_s,
        pct(0.5),
        pct(0.99),
        pct(0.999),
        pct(1.0)
    );
    Ok(())
}
