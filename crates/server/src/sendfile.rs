//! Zero-copy transfer of a segment-file region to a socket (`sendfile(2)` via rustix).
//!
//! Mental model: the kernel copies page-cache pages of the segment file straight into the
//! socket; the bytes never enter user space. The socket is non-blocking (tokio): wait until it
//! is writable, try, and on `WouldBlock` wait again (`try_io` clears tokio's readiness flag).
//! Invariant: exactly `region.len` bytes are sent or an error is returned; a file that is now
//! shorter than the region (sendfile returns 0) is an error, because the response frame already
//! promised those bytes and the connection must then be closed.

use std::io;

use skiff_protocol::FileRegion;
use tokio::io::Interest;
use tokio::net::TcpStream;

/// Sends the whole region to the socket.
pub async fn send_region(stream: &TcpStream, region: &FileRegion) -> io::Result<()> {
    let mut offset = region.position;
    let end = region.position + u64::from(region.len);
    while offset < end {
        stream.writable().await?;
        let remaining = usize::try_from(end - offset).unwrap_or(usize::MAX);
        let result = stream.try_io(Interest::WRITABLE, || {
            rustix::fs::sendfile(stream, &*region.file, Some(&mut offset), remaining)
                .map_err(io::Error::from)
        });
        match result {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "segment file ended before the promised region (truncated underneath?)",
                ));
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
