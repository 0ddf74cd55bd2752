//! Inter-node clients by peer (issue 16; issue 19 item 4: their security).
//!
//! Mental model: [`Peers`] makes one [`NodeClient`] per (purpose, `host:port`) on first use and
//! keeps it. Which listener an address is decides how it is reached: a voter's CONTROLLER
//! endpoint (from `controller.quorum.voters`) with `settings.security.controller`, any other
//! address (a broker's inter-broker listener, from the image) with
//! `settings.security.inter_broker`: TLS and a SASL login as a super user where those
//! listeners demand them.
//!
//! Invariant: a client's security is fixed when it is made; [`Peers::default`] (tests) is
//! PLAINTEXT everywhere.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use parking_lot::Mutex;
use skiff_raft::transport::{ClientSecurity, SaslLogin};

use crate::node_client::{NodeClient, NodeClientConfig};
use crate::security::PeerSecurity;
use crate::settings::ServerSettings;

/// Inter-node clients, one per node address and purpose, made on first use.
///
/// A node answers the requests of one connection in order, so a request whose answer waits
/// for replication must not share a connection with the fetches that replication needs:
/// the transaction coordinator's WriteTxnMarkers (acks=-1 on the leader) and the leaders'
/// verification calls get their own connections ([`Peers::client_for`]), apart from the
/// replica fetchers' and the controller RPCs' ([`Peers::client`]).
#[derive(Debug, Default)]
pub struct Peers {
    clients: Mutex<HashMap<(&'static str, String), NodeClient>>,
    /// Topics being created through the controller in the background.
    pub creating: Mutex<HashSet<String>>,
    /// How other brokers' inter-broker listener is reached.
    inter_broker: ClientSecurity,
    /// How the voters' CONTROLLER listener is reached.
    controller: ClientSecurity,
    /// The voters' CONTROLLER endpoints, `host:port`.
    controller_endpoints: HashSet<String>,
}

/// The client side of a listener's security, as the inter-node connections use it (TLS only
/// on SSL / SASL_SSL, the login only on SASL_*).
pub fn client_security(p: &PeerSecurity) -> ClientSecurity {
    ClientSecurity {
        tls: p.tls.clone().filter(|_| p.protocol.is_tls()),
        sasl: p
            .sasl
            .clone()
            .filter(|_| p.protocol.is_sasl())
            .map(|(mechanism, user, password)| SaslLogin {
                mechanism,
                user,
                password,
            }),
    }
}

impl Peers {
    /// No clients yet; each kind of peer's security from `settings`.
    pub fn new(settings: &ServerSettings) -> Peers {
        Peers::with_security(
            client_security(&settings.security.inter_broker),
            client_security(&settings.security.controller),
            settings
                .quorum
                .iter()
                .flat_map(|q| q.voters.iter().map(|(_, h, p)| format!("{h}:{p}"))),
        )
    }

    /// No clients yet: `controller` for the `controller_endpoints` (`host:port`),
    /// `inter_broker` for any other address.
    pub fn with_security(
        inter_broker: ClientSecurity,
        controller: ClientSecurity,
        controller_endpoints: impl IntoIterator<Item = String>,
    ) -> Peers {
        Peers {
            inter_broker,
            controller,
            controller_endpoints: controller_endpoints.into_iter().collect(),
            ..Peers::default()
        }
    }

    /// The same security, no clients: for a task that wants connections of its own.
    pub fn sibling(&self) -> Peers {
        Peers::with_security(
            self.inter_broker.clone(),
            self.controller.clone(),
            self.controller_endpoints.iter().cloned(),
        )
    }

    /// How `addr` is reached: a voter's CONTROLLER endpoint, or a broker's listener.
    pub fn security_for(&self, addr: &str) -> &ClientSecurity {
        if self.controller_endpoints.contains(addr) {
            &self.controller
        } else {
            &self.inter_broker
        }
    }

    /// The shared connection to `addr` (fetchers, controller RPCs, forwarding).
    pub fn client(&self, addr: &str, request_timeout: Duration) -> NodeClient {
        self.client_for("node", addr, request_timeout)
    }

    /// The connection to `addr` for `purpose` (`skiff-<purpose>` is its client id); the
    /// timeout is the one of the call that made it.
    pub fn client_for(
        &self,
        purpose: &'static str,
        addr: &str,
        request_timeout: Duration,
    ) -> NodeClient {
        self.clients
            .lock()
            .entry((purpose, addr.to_string()))
            .or_insert_with(|| {
                NodeClient::spawn(
                    addr,
                    NodeClientConfig {
                        client_id: format!("skiff-{purpose}"),
                        connect_timeout: request_timeout,
                        request_timeout,
                        security: self.security_for(addr).clone(),
                        ..NodeClientConfig::default()
                    },
                )
            })
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::SecurityProtocol;

    fn login(user: &str) -> SaslLogin {
        SaslLogin {
            mechanism: "PLAIN".into(),
            user: user.into(),
            password: "pw".into(),
        }
    }

    #[test]
    fn each_address_gets_its_listener_security() {
        let peers = Peers::with_security(
            ClientSecurity {
                tls: None,
                sasl: Some(login("inter-broker")),
            },
            ClientSecurity {
                tls: None,
                sasl: Some(login("controller")),
            },
            ["localhost:9093".to_string(), "10.0.0.2:9093".to_string()],
        );
        // (address, the login's user)
        let rows = [
            ("localhost:9093", "controller"),
            ("10.0.0.2:9093", "controller"),
            ("localhost:9092", "inter-broker"),
            ("10.0.0.2:9092", "inter-broker"),
            ("127.0.0.1:9093", "inter-broker"),
        ];
        for (addr, user) in rows {
            let got = peers
                .security_for(addr)
                .sasl
                .as_ref()
                .map(|l| l.user.as_str());
            assert_eq!(got, Some(user), "{addr}");
            let sib = peers.sibling();
            let got = sib
                .security_for(addr)
                .sasl
                .as_ref()
                .map(|l| l.user.as_str());
            assert_eq!(got, Some(user), "sibling {addr}");
        }
        assert!(
            Peers::default()
                .security_for("localhost:9093")
                .sasl
                .is_none()
        );
    }

    #[test]
    fn the_login_and_tls_follow_the_protocol() {
        let sasl = Some(("PLAIN".to_string(), "b".to_string(), "pw".to_string()));
        // (protocol, has a login)
        let rows = [
            (SecurityProtocol::Plaintext, false),
            (SecurityProtocol::Ssl, false),
            (SecurityProtocol::SaslPlaintext, true),
            (SecurityProtocol::SaslSsl, true),
        ];
        for (protocol, has_login) in rows {
            let c = client_security(&PeerSecurity {
                protocol,
                tls: None,
                sasl: sasl.clone(),
            });
            assert_eq!(c.sasl.is_some(), has_login, "{protocol:?}");
            assert!(c.tls.is_none());
            if has_login {
                assert_eq!(c.sasl, Some(login("b")));
            }
        }
    }
}
