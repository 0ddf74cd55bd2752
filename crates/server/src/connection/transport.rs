//! The byte stream under a connection (issue 19): plain TCP, or TLS over TCP.
//!
//! Mental model: [`accept`] turns an accepted socket into a reader and a [`Writer`]. On a
//! PLAINTEXT or SASL_PLAINTEXT listener they are the two halves of the socket and file regions
//! go out with `sendfile(2)`. On an SSL or SASL_SSL listener the TLS handshake runs first
//! (bounded by a deadline; bytes that are not TLS end it), then both halves go through rustls
//! and a file region is read into memory and encrypted: sendfile cannot be used under TLS
//! without kernel TLS, which costs a copy through user space per fetched byte (measured in
//! docs/performance.md, "TLS and authorization").
//!
//! Invariant: a [`Writer`] writes exactly the bytes of a region or fails (the response frame
//! promised them); nothing here panics on peer input.

use std::io;
use std::os::unix::fs::FileExt;
use std::pin::Pin;
use std::time::Duration;

use skiff_auth::principal::KafkaPrincipal;
use skiff_protocol::FileRegion;
use tokio::io::{AsyncRead, AsyncWriteExt, BufReader, WriteHalf};
use tokio::net::TcpStream;
use tokio::net::tcp::OwnedWriteHalf;
use tokio_rustls::server::TlsStream;

use crate::security::ListenerSecurity;
use crate::sendfile::send_region;
use crate::stats::ServerStats;

/// The reading half.
pub type Reader = Pin<Box<dyn AsyncRead + Send>>;

/// Socket reads under rustls on a TLS connection.
const TLS_READ_BUFFER_BYTES: usize = 64 * 1024;

/// How much of a file region is read into memory at a time on a TLS connection.
const TLS_REGION_CHUNK_BYTES: usize = 256 * 1024;

/// The writing half.
#[derive(Debug)]
pub enum Writer {
    Plain(OwnedWriteHalf),
    Tls {
        w: WriteHalf<TlsStream<BufReader<TcpStream>>>,
        /// File regions are read into this buffer, kept for the connection's life (grown to
        /// at most [`TLS_REGION_CHUNK_BYTES`]) instead of a fresh zeroed one per region.
        buf: Vec<u8>,
    },
}

/// Why a connection could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum AcceptError {
    #[error("TLS handshake did not complete within {0:?}")]
    HandshakeTimeout(Duration),
    #[error("TLS handshake failed: {0}")]
    Handshake(io::Error),
    #[error("no principal for the client certificate: {0}")]
    Principal(String),
}

/// Sets up the stream of an accepted connection: TLS on SSL / SASL_SSL listeners. Returns
/// the certificate principal of a mutual-TLS client (`None` without TLS).
pub async fn accept(
    stream: TcpStream,
    security: &ListenerSecurity,
    handshake_timeout: Duration,
) -> Result<(Reader, Writer, Option<KafkaPrincipal>), AcceptError> {
    let Some(tls) = security.tls.as_ref().filter(|_| security.protocol.is_tls()) else {
        let (rd, wr) = stream.into_split();
        return Ok((Box::pin(rd), Writer::Plain(wr), None));
    };
    let acceptor = tls.acceptor();
    // rustls reads at most 4 KiB per `read_tls`: a buffer under it turns those into memory
    // copies, with one socket read per 64 KiB instead of one per 4 KiB.
    let buffered = tokio::io::BufReader::with_capacity(TLS_READ_BUFFER_BYTES, stream);
    let tls_stream = match tokio::time::timeout(handshake_timeout, acceptor.accept(buffered)).await
    {
        Err(_) => return Err(AcceptError::HandshakeTimeout(handshake_timeout)),
        Ok(Err(e)) => return Err(AcceptError::Handshake(e)),
        Ok(Ok(s)) => s,
    };
    let principal = tls
        .principal(tls_stream.get_ref().1)
        .map_err(AcceptError::Principal)?;
    let (rd, wr) = tokio::io::split(tls_stream);
    Ok((
        Box::pin(rd),
        Writer::Tls {
            w: wr,
            buf: Vec::new(),
        },
        Some(principal),
    ))
}

impl Writer {
    pub async fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Writer::Plain(w) => w.write_all(bytes).await,
            Writer::Tls { w, .. } => w.write_all(bytes).await,
        }
    }

    /// Writes a segment-file region: `sendfile` on plain TCP (counted as sent by sendfile),
    /// read and encrypted on TLS (counted as copied).
    pub async fn write_region(
        &mut self,
        region: &FileRegion,
        stats: &ServerStats,
    ) -> io::Result<()> {
        match self {
            Writer::Plain(w) => {
                send_region(w.as_ref(), region).await?;
                stats.sent_by_sendfile(u64::from(region.len));
            }
            Writer::Tls { w, buf } => {
                let mut pos = region.position;
                let end = region.position + u64::from(region.len);
                let want = TLS_REGION_CHUNK_BYTES.min(region.len as usize);
                if buf.len() < want {
                    buf.resize(want, 0);
                }
                while pos < end {
                    let n = usize::try_from(end - pos)
                        .unwrap_or(usize::MAX)
                        .min(buf.len());
                    // Page-cache reads, as sendfile would do in the kernel (a cold page blocks
                    // this worker briefly in both cases).
                    region.file.read_exact_at(&mut buf[..n], pos)?;
                    w.write_all(&buf[..n]).await?;
                    pos += n as u64;
                }
                stats.copied(u64::from(region.len));
            }
        }
        Ok(())
    }

    /// Flushes (TLS buffers records) and closes the write side.
    pub async fn flush(&mut self) -> io::Result<()> {
        match self {
            Writer::Plain(w) => w.flush().await,
            Writer::Tls { w, .. } => w.flush().await,
        }
    }

    pub async fn shutdown(&mut self) {
        let _ = match self {
            Writer::Plain(w) => w.shutdown().await,
            Writer::Tls { w, .. } => w.shutdown().await,
        };
    }
}
