//! The kernel's floor for a catch-up read over TCP (issue 4, cell C1): a page-cache file sent
//! with `sendfile(2)` in 1 MiB calls, with no broker logic at all.
//!
//! Mental model: two processes, each pinned by the caller (`taskset`), one per role. The
//! receiver listens, prints its port on stdout, accepts one connection and reads `size` bytes
//! into a 1 MiB buffer; in `fetch` mode it first sends a 100-byte request per 1 MiB, as a
//! consumer with one fetch in flight does. The sender connects, and per 1 MiB (in `fetch`
//! mode after reading the 100-byte request) calls `sendfile` until the chunk is out. Each
//! prints one JSON line `{"bytes":..,"cpu_s":..,"wall_s":..}` timed around its transfer loop
//! only (CPU = `CLOCK_PROCESS_CPUTIME_ID`), so start-up is not counted. What the sender's CPU
//! per MB shows is the cheapest any broker answering those reads can be on this machine: the
//! Python stand-in used before costs more than Skiff itself (interpreter work per call).
//! Blocking sockets, single-threaded; owns only its sockets.

use std::fs::File;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};

const CHUNK: u64 = 1 << 20;
const REQUEST: usize = 100;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// `send` or `recv`.
    #[arg(long)]
    role: String,
    /// `fetch` (a 100-byte request before each 1 MiB) or `stream` (back to back).
    #[arg(long, default_value = "fetch")]
    mode: String,
    /// Bytes to move.
    #[arg(long)]
    size: u64,
    /// recv: the address to listen on (port 0 = ephemeral); send: the receiver's address.
    #[arg(long, default_value = "127.0.0.1:0")]
    addr: String,
    /// send: the page-cache file to send (at least `size` bytes).
    #[arg(long)]
    file: Option<PathBuf>,
}

fn cpu_s() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

fn report(bytes: u64, c0: f64, t0: Instant) {
    println!(
        "{{\"bytes\": {bytes}, \"cpu_s\": {:.6}, \"wall_s\": {:.6}}}",
        cpu_s() - c0,
        t0.elapsed().as_secs_f64()
    );
}

pub fn main(args: Args) -> Result<()> {
    let fetch = match args.mode.as_str() {
        "fetch" => true,
        "stream" => false,
        other => bail!("--mode must be fetch or stream, not {other}"),
    };
    match args.role.as_str() {
        "recv" => recv(&args, fetch),
        "send" => send(&args, fetch),
        other => bail!("--role must be send or recv, not {other}"),
    }
}

fn recv(args: &Args, fetch: bool) -> Result<()> {
    let listener = TcpListener::bind(&args.addr).with_context(|| format!("bind {}", args.addr))?;
    println!("{}", listener.local_addr()?.port());
    std::io::stdout().flush()?;
    let (mut conn, _) = listener.accept()?;
    let mut buf = vec![0u8; CHUNK as usize];
    let request = [b'f'; REQUEST];
    let mut got = 0u64;
    let (c0, t0) = (cpu_s(), Instant::now());
    while got < args.size {
        let mut want = if fetch {
            CHUNK.min(args.size - got)
        } else {
            args.size - got
        };
        if fetch {
            conn.write_all(&request)?;
        }
        while want > 0 {
            let n = conn.read(&mut buf[..want.min(CHUNK) as usize])?;
            if n == 0 {
                bail!("sender closed after {got} of {} bytes", args.size);
            }
            got += n as u64;
            want -= n as u64;
        }
    }
    report(got, c0, t0);
    Ok(())
}

fn send(args: &Args, fetch: bool) -> Result<()> {
    let path = args
        .file
        .as_ref()
        .context("--file is required for --role send")?;
    let file = File::open(path).with_context(|| format!("open {}", path.display()))?;
    let mut conn =
        TcpStream::connect(&args.addr).with_context(|| format!("connect {}", args.addr))?;
    let mut request = [0u8; REQUEST];
    let mut off = 0u64;
    let (c0, t0) = (cpu_s(), Instant::now());
    while off < args.size {
        if fetch {
            conn.read_exact(&mut request)?;
        }
        let end = (off + CHUNK).min(args.size);
        while off < end {
            let mut pos = off;
            let n = rustix::fs::sendfile(
                conn.as_fd(),
                file.as_fd(),
                Some(&mut pos),
                (end - off) as usize,
            )?;
            if n == 0 {
                bail!("{} ended at {off} of {} bytes", path.display(), args.size);
            }
            off += n as u64;
        }
    }
    report(off, c0, t0);
    Ok(())
}
