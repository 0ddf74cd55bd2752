//! Test support: an in-process server on an ephemeral port and a raw Kafka protocol client.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use skiff_protocol::{
    ApiKey, RequestBody, RequestHeader, ResponseBody, decode_response, encode_request,
};
use skiff_server::{Server, ServerSettings, StorageTopicConfigs};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Every wait in these tests is bounded by this.
pub const DEADLINE: Duration = Duration::from_secs(20);

pub struct TestServer {
    pub server: Server,
    pub dir: tempfile::TempDir,
    pub addr: std::net::SocketAddr,
}

pub async fn start() -> TestServer {
    start_with(|_| {}).await
}

pub async fn start_with(f: impl FnOnce(&mut ServerSettings)) -> TestServer {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = ServerSettings::with_log_dir(dir.path().join("data"));
    f(&mut settings);
    let server = Server::start(settings, Arc::new(StorageTopicConfigs::default()))
        .await
        .unwrap();
    let addr = server.listeners()[0].local_addr;
    TestServer { server, dir, addr }
}

/// A raw client: encodes requests with the protocol crate, reads frames back.
pub struct Client {
    pub stream: TcpStream,
    next_correlation: i32,
}

impl Client {
    pub async fn connect(addr: std::net::SocketAddr) -> Client {
        let stream = tokio::time::timeout(DEADLINE, TcpStream::connect(addr))
            .await
            .unwrap()
            .unwrap();
        Client {
            stream,
            next_correlation: 1,
        }
    }

    /// Encodes a request frame (size prefix included); returns it and its correlation id.
    pub fn frame(&mut self, version: i16, body: impl Into<RequestBody>) -> (Bytes, i32) {
        let body = body.into();
        let correlation_id = self.next_correlation;
        self.next_correlation += 1;
        let header = RequestHeader {
            request_api_key: body.api_key() as i16,
            request_api_version: version,
            correlation_id,
            client_id: Some("skiff-test".into()),
        };
        let mut out = BytesMut::new();
        encode_request(&header, &body, &mut out).unwrap();
        (out.freeze(), correlation_id)
    }

    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.unwrap();
    }

    /// Reads one response frame (without its size), or `None` if the server closed.
    pub async fn read_frame(&mut self) -> Option<Bytes> {
        let read = async {
            let mut size = [0u8; 4];
            if self.stream.read_exact(&mut size).await.is_err() {
                return None;
            }
            let n = i32::from_be_bytes(size) as usize;
            let mut buf = vec![0u8; n];
            self.stream.read_exact(&mut buf).await.ok()?;
            Some(Bytes::from(buf))
        };
        tokio::time::timeout(DEADLINE, read)
            .await
            .expect("response within the deadline")
    }

    /// Whether the server closed the connection (EOF or reset) within the deadline.
    pub async fn is_closed(&mut self) -> bool {
        let mut buf = [0u8; 64];
        match tokio::time::timeout(DEADLINE, self.stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => true,
            Ok(Ok(_)) => false,
            Err(_) => false,
        }
    }

    /// Sends a request and decodes its response.
    pub async fn call(&mut self, version: i16, body: impl Into<RequestBody>) -> ResponseBody {
        let body = body.into();
        let key = body.api_key();
        let (frame, cid) = self.frame(version, body);
        self.send_raw(&frame).await;
        let resp = self.read_frame().await.expect("a response");
        decode(key, version, cid, resp)
    }
}

/// Decodes a response frame and checks its correlation id.
pub fn decode(key: ApiKey, version: i16, correlation_id: i32, frame: Bytes) -> ResponseBody {
    let (header, body) = decode_response(key, version, frame).unwrap();
    assert_eq!(header.correlation_id, correlation_id);
    body
}

/// The correlation id at the front of a response frame.
pub fn correlation_of(frame: &Bytes) -> i32 {
    (&frame[..4]).get_i32()
}
