//! A blocking Kafka client for the CLI: [`Conn`] is one connection with its negotiated API
//! versions; [`Cluster`] is the bootstrap connection plus lazy connections to the nodes a
//! command needs.
//!
//! Mental model: `Conn::connect` resolves and connects with a deadline, then asks ApiVersions
//! (v3 with `client_software_name = skiff-cli`, v0 if the broker refuses v3) and keeps the
//! node's ranges. [`Conn::call`] sends a request at the highest version both sides support (the
//! generated codecs write only the fields that version has), and [`call_as!`] unwraps the
//! response variant. `Cluster::connect` tries each bootstrap address in turn, then reads
//! Metadata to learn the nodes, the controller and the cluster id; `node(id)` and
//! `coordinator(..)` connect on first use and reuse the connection.
//! Invariants: a request is never sent at a version the node did not advertise (refused locally
//! as [`CliError::Unsupported`]); every error names the address it came from.

use std::collections::HashMap;
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use skiff_protocol::{
    ApiKey, ApiVersionsRequest, BlockingClient, FindCoordinatorRequest, MetadataRequest,
    MetadataRequestTopic, MetadataResponse, RequestBody, ResponseBody,
};

use super::{CliError, ClientArgs};

/// `call_as!(conn, request, Variant)`: sends `request` and returns the `ResponseBody::Variant`
/// payload, or a protocol error when the broker answered something else.
macro_rules! call_as {
    ($conn:expr, $req:expr, $variant:ident) => {{
        let conn: &mut $crate::cli::client::Conn = $conn;
        match conn.call($req)? {
            skiff_protocol::ResponseBody::$variant(r) => Ok::<_, $crate::cli::CliError>(r),
            other => Err($crate::cli::CliError::Protocol {
                addr: conn.addr().to_owned(),
                reason: format!(
                    "expected a {} response, got {}",
                    stringify!($variant),
                    other.api_key().name()
                ),
            }),
        }
    }};
}
pub(crate) use call_as;

/// The client id every CLI request carries.
pub const CLIENT_ID: &str = "skiff-cli";

/// One connection to one broker, with its API versions.
#[derive(Debug)]
pub struct Conn {
    addr: String,
    client: BlockingClient<TcpStream>,
    /// api key -> (min, max) as the node advertised.
    apis: HashMap<i16, (i16, i16)>,
}

impl Conn {
    /// Connects to `addr` (`host:port`) within `timeout` and negotiates versions.
    pub fn connect(addr: &str, timeout: Duration) -> Result<Conn, CliError> {
        let stream = tcp_connect(addr, timeout)?;
        let mut client = BlockingClient::new(stream, CLIENT_ID);
        let mut conn_apis = HashMap::new();
        let request = ApiVersionsRequest {
            client_software_name: "skiff-cli".into(),
            client_software_version: env!("CARGO_PKG_VERSION").into(),
        };
        let answer = match client.call(3, request.clone()) {
            Ok(ResponseBody::ApiVersions(r)) if r.error_code == 0 => r,
            _ => {
                // A broker older than v3 answers in v0 format: ask again on a new connection.
                let stream = tcp_connect(addr, timeout)?;
                client = BlockingClient::new(stream, CLIENT_ID);
                match client.call(0, request) {
                    Ok(ResponseBody::ApiVersions(r)) if r.error_code == 0 => r,
                    Ok(other) => {
                        return Err(CliError::Protocol {
                            addr: addr.into(),
                            reason: format!(
                                "ApiVersions failed ({}): is this a Kafka port?",
                                other.api_key().name()
                            ),
                        });
                    }
                    Err(e) => {
                        return Err(CliError::Protocol {
                            addr: addr.into(),
                            reason: format!(
                                "no Kafka ApiVersions answer ({e}): is this a Kafka listener \
                                 (not HTTP, not TLS)?"
                            ),
                        });
                    }
                }
            }
        };
        for k in answer.api_keys {
            conn_apis.insert(k.api_key, (k.min_version, k.max_version));
        }
        Ok(Conn {
            addr: addr.into(),
            client,
            apis: conn_apis,
        })
    }

    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The version `api` is sent at: the highest both sides support.
    pub fn version(&self, api: ApiKey) -> Option<i16> {
        let (lo, hi) = *self.apis.get(&(api as i16))?;
        let (ours_lo, ours_hi) = api.supported_versions();
        let (low, high) = (ours_lo.max(lo), ours_hi.min(hi));
        (low <= high).then_some(high)
    }

    /// The node's advertised ranges, `api key -> (min, max)`.
    pub fn apis(&self) -> &HashMap<i16, (i16, i16)> {
        &self.apis
    }

    /// Sends `body` at the negotiated version; its response.
    pub fn call(&mut self, body: impl Into<RequestBody>) -> Result<ResponseBody, CliError> {
        let body = body.into();
        let api = body.api_key();
        let version = self.version(api).ok_or_else(|| CliError::Unsupported {
            addr: self.addr.clone(),
            api: api.name(),
        })?;
        self.call_at(version, body)
    }

    /// Sends `body` at `version` (the caller checked the node supports it).
    pub fn call_at(
        &mut self,
        version: i16,
        body: impl Into<RequestBody>,
    ) -> Result<ResponseBody, CliError> {
        let body = body.into();
        let api = body.api_key().name();
        self.client
            .call(version, body)
            .map_err(|e| CliError::Protocol {
                addr: self.addr.clone(),
                reason: format!("{api} v{version}: {e}"),
            })
    }
}

impl Conn {
    /// How long a call waits for its answer (JoinGroup waits for a rebalance: longer).
    pub fn set_read_timeout(&self, timeout: Duration) -> Result<(), CliError> {
        self.client
            .stream()
            .set_read_timeout(Some(timeout))
            .map_err(|e| CliError::Connect {
                addr: self.addr.clone(),
                reason: e.to_string(),
            })
    }

    /// Sends `body` at the negotiated version without reading an answer: Produce with acks=0,
    /// which the broker never answers (the correlation id is one no answer will carry).
    pub fn send_oneway(&mut self, body: impl Into<RequestBody>) -> Result<(), CliError> {
        use std::io::Write;
        let body = body.into();
        let api = body.api_key();
        let version = self.version(api).ok_or_else(|| CliError::Unsupported {
            addr: self.addr.clone(),
            api: api.name(),
        })?;
        let header = skiff_protocol::RequestHeader {
            request_api_key: api as i16,
            request_api_version: version,
            correlation_id: -1,
            client_id: Some(CLIENT_ID.into()),
        };
        let mut out = bytes::BytesMut::new();
        let fail = |reason: String| CliError::Protocol {
            addr: self.addr.clone(),
            reason: format!("{} v{version}: {reason}", api.name()),
        };
        skiff_protocol::encode_request(&header, &body, &mut out)
            .map_err(|e| fail(e.to_string()))?;
        let mut stream: &TcpStream = self.client.stream();
        stream.write_all(&out).map_err(|e| fail(e.to_string()))
    }
}

/// Resolves `addr` and connects to the first address that answers within `timeout`.
pub fn tcp_connect(addr: &str, timeout: Duration) -> Result<TcpStream, CliError> {
    let resolved: Vec<_> = addr
        .to_socket_addrs()
        .map_err(|e| CliError::Dns {
            addr: addr.into(),
            reason: e.to_string(),
        })?
        .collect();
    if resolved.is_empty() {
        return Err(CliError::Dns {
            addr: addr.into(),
            reason: "no addresses".into(),
        });
    }
    let mut last = String::new();
    for sa in resolved {
        match TcpStream::connect_timeout(&sa, timeout) {
            Ok(s) => {
                let _ = s.set_nodelay(true);
                let io = |e: std::io::Error| CliError::Connect {
                    addr: addr.into(),
                    reason: e.to_string(),
                };
                s.set_read_timeout(Some(timeout)).map_err(io)?;
                s.set_write_timeout(Some(timeout)).map_err(io)?;
                return Ok(s);
            }
            Err(e) => last = format!("{sa}: {e}"),
        }
    }
    Err(CliError::Connect {
        addr: addr.into(),
        reason: last,
    })
}

/// A node as Metadata describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub id: i32,
    pub host: String,
    pub port: i32,
    pub rack: Option<String>,
}

impl Node {
    pub fn addr(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

impl From<&skiff_protocol::MetadataResponseBroker> for Node {
    fn from(b: &skiff_protocol::MetadataResponseBroker) -> Self {
        Node {
            id: b.node_id,
            host: b.host.clone(),
            port: b.port,
            rack: b.rack.clone(),
        }
    }
}

/// The bootstrap connection plus lazy connections to nodes.
#[derive(Debug)]
pub struct Cluster {
    timeout: Duration,
    bootstrap: Conn,
    nodes: Vec<Node>,
    conns: HashMap<i32, Conn>,
    cluster_id: Option<String>,
    controller_id: i32,
}

impl Cluster {
    /// Connects to the first bootstrap address that answers and reads the cluster's nodes.
    pub fn connect(args: &ClientArgs) -> Result<Cluster, CliError> {
        let timeout = args.timeout();
        let addrs = args.bootstrap();
        if addrs.is_empty() {
            return Err(CliError::Usage("--brokers is empty".into()));
        }
        let mut errors = Vec::new();
        for addr in &addrs {
            match Conn::connect(addr, timeout) {
                Ok(bootstrap) => {
                    let mut cluster = Cluster {
                        timeout,
                        bootstrap,
                        nodes: Vec::new(),
                        conns: HashMap::new(),
                        cluster_id: None,
                        controller_id: -1,
                    };
                    cluster.metadata(Some(&[]))?;
                    return Ok(cluster);
                }
                Err(e) => errors.push(e),
            }
        }
        match errors.len() {
            1 => Err(errors.remove(0)),
            _ => Err(CliError::Other(format!(
                "no bootstrap broker answered: {}",
                errors
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            ))),
        }
    }

    /// Metadata for `topics` (`None`: every topic; `Some(&[])`: none, only the nodes), without
    /// auto-creating anything; refreshes the known nodes.
    pub fn metadata(&mut self, topics: Option<&[String]>) -> Result<MetadataResponse, CliError> {
        let request = MetadataRequest {
            topics: topics.map(|names| {
                names
                    .iter()
                    .map(|n| MetadataRequestTopic {
                        name: Some(n.clone()),
                        ..Default::default()
                    })
                    .collect()
            }),
            allow_auto_topic_creation: false,
            ..Default::default()
        };
        let response = call_as!(&mut self.bootstrap, request, Metadata)?;
        self.nodes = response.brokers.iter().map(Node::from).collect();
        self.cluster_id.clone_from(&response.cluster_id);
        self.controller_id = response.controller_id;
        Ok(response)
    }

    /// The bootstrap connection (admin requests any broker accepts).
    pub fn any(&mut self) -> &mut Conn {
        &mut self.bootstrap
    }

    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    pub fn cluster_id(&self) -> Option<&str> {
        self.cluster_id.as_deref()
    }

    pub fn controller_id(&self) -> i32 {
        self.controller_id
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The connection to node `id` (connected on first use).
    pub fn node(&mut self, id: i32) -> Result<&mut Conn, CliError> {
        if !self.conns.contains_key(&id) {
            let node = self.nodes.iter().find(|n| n.id == id).ok_or_else(|| {
                CliError::Other(format!("node {id} is not in the cluster metadata"))
            })?;
            let conn = Conn::connect(&node.addr(), self.timeout)?;
            self.conns.insert(id, conn);
        }
        self.conns
            .get_mut(&id)
            .ok_or_else(|| CliError::Other(format!("node {id}: no connection")))
    }

    /// Drops the connection to node `id` (after it failed; the next `node(id)` reconnects).
    pub fn forget(&mut self, id: i32) {
        self.conns.remove(&id);
    }

    /// The node coordinating `key` (`key_type` 0 = group, 1 = transactional id). A coordinator
    /// that is not available yet (Kafka creates `__consumer_offsets` on first use) or still
    /// loading is asked again, a bounded number of times.
    pub fn coordinator_id(&mut self, key_type: i8, key: &str) -> Result<i32, CliError> {
        const NOT_YET: [i16; 2] = [14, 15]; // COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE
        let mut attempt: u32 = 0;
        loop {
            match self.find_coordinator(key_type, key)? {
                Ok(id) => return Ok(id),
                Err((code, _)) if NOT_YET.contains(&code) && attempt < 20 => {
                    attempt += 1;
                    std::thread::sleep(Duration::from_millis(100 * u64::from(attempt.min(5))));
                }
                Err((code, message)) => {
                    let context = format!("finding the coordinator of {key}");
                    return Err(
                        CliError::from_code(context, code, message).unwrap_or_else(|| {
                            CliError::Other(format!("finding the coordinator of {key} failed"))
                        }),
                    );
                }
            }
        }
    }

    /// One FindCoordinator: the node id, or the error code and message.
    fn find_coordinator(
        &mut self,
        key_type: i8,
        key: &str,
    ) -> Result<Result<i32, (i16, Option<String>)>, CliError> {
        let v4 = self
            .bootstrap
            .version(ApiKey::FindCoordinator)
            .is_some_and(|v| v >= 4);
        // v0-3 carry `key`, v4+ `coordinator_keys`: a field the version lacks must stay default.
        let request = FindCoordinatorRequest {
            key: if v4 { String::new() } else { key.into() },
            key_type,
            coordinator_keys: if v4 { vec![key.into()] } else { Vec::new() },
        };
        let r = call_as!(&mut self.bootstrap, request, FindCoordinator)?;
        let (code, message, node_id) = match (v4, r.coordinators.first()) {
            (true, Some(c)) => (c.error_code, c.error_message.clone(), c.node_id),
            (true, None) => {
                return Err(CliError::Protocol {
                    addr: self.bootstrap.addr().into(),
                    reason: "FindCoordinator answered no coordinator".into(),
                });
            }
            (false, _) => (r.error_code, r.error_message.clone(), r.node_id),
        };
        Ok(if code == 0 {
            Ok(node_id)
        } else {
            Err((code, message))
        })
    }

    /// The connection to the coordinator of `key` (see [`Cluster::coordinator_id`]).
    pub fn coordinator(&mut self, key_type: i8, key: &str) -> Result<&mut Conn, CliError> {
        let id = self.coordinator_id(key_type, key)?;
        if !self.nodes.iter().any(|n| n.id == id) {
            self.metadata(Some(&[]))?;
        }
        self.node(id)
    }
}
