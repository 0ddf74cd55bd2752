//! Forwarded requests carry their client (issue 19; Kafka's Envelope, KIP-590).
//!
//! Mental model: a node that is not the active controller forwards admin writes
//! (`cluster::is_forwarded`) to the controller over its own inter-node connection, which is
//! authenticated as the node (a super user), not as the client. So the forwarded request is
//! wrapped in an Envelope (API 58, controller listeners only) holding the client's request
//! frame, its principal and its address ([`wrap`]); the controller checks that the sender may
//! forward (CLUSTER_ACTION on the cluster, as Kafka does), then dispatches the inner request
//! as the client: the handlers authorize the client's principal from the client's host
//! ([`handle`]), and the inner response travels back inside the Envelope response
//! ([`unwrap_response`]).
//!
//! The principal is written as its text (`User:alice`), Skiff's own encoding of Kafka's
//! serialized principal (only Skiff nodes read it); the address is 4 or 16 bytes, as Kafka.
//! Invariant: an inner request is never dispatched without a principal, and never an Envelope
//! inside an Envelope.

use std::net::{IpAddr, SocketAddr};

use bytes::{Bytes, BytesMut};
use skiff_auth::acl::AclOperation;
use skiff_auth::principal::KafkaPrincipal;
use skiff_protocol::{
    ApiKey, EnvelopeRequest, EnvelopeResponse, RequestBody, RequestHeader, ResponseBody,
    decode_request, decode_response, encode_request, encode_response,
};
use skiff_types::ErrorCode;

use crate::handlers::{self, Reply, RequestContext};

/// Wraps a client's request (at `version`) for the controller.
pub fn wrap(
    principal: &KafkaPrincipal,
    client_ip: IpAddr,
    client_id: Option<&str>,
    version: i16,
    body: &RequestBody,
) -> Result<EnvelopeRequest, String> {
    let header = RequestHeader {
        request_api_key: body.api_key() as i16,
        request_api_version: version,
        correlation_id: 0,
        client_id: client_id.map(str::to_string),
    };
    let mut frame = BytesMut::new();
    encode_request(&header, body, &mut frame).map_err(|e| e.to_string())?;
    // The inner request is the frame without its size prefix.
    let request_data = frame.freeze().slice(4..);
    let address = match client_ip.to_canonical() {
        IpAddr::V4(v4) => Bytes::copy_from_slice(&v4.octets()),
        IpAddr::V6(v6) => Bytes::copy_from_slice(&v6.octets()),
    };
    Ok(EnvelopeRequest {
        request_data,
        request_principal: Some(Bytes::from(principal.to_string())),
        client_host_address: address,
    })
}

/// The inner response of an Envelope response for a request of `key` at `version`.
pub fn unwrap_response(
    key: ApiKey,
    version: i16,
    resp: EnvelopeResponse,
) -> Result<ResponseBody, String> {
    if resp.error_code != 0 {
        return Err(format!(
            "the controller refused the forwarded request: {}",
            ErrorCode::from_code(resp.error_code).map_or("UNKNOWN", ErrorCode::name)
        ));
    }
    let data = resp
        .response_data
        .ok_or_else(|| "the controller's Envelope response has no data".to_string())?;
    decode_response(key, version, data)
        .map(|(_, body)| body)
        .map_err(|e| format!("undecodable forwarded response: {e}"))
}

fn refused(code: ErrorCode) -> Reply {
    Reply::Now(ResponseBody::Envelope(EnvelopeResponse {
        response_data: None,
        error_code: code as i16,
    }))
}

/// The controller side: authorizes the forwarding node, then serves the inner request as
/// the client it names.
pub fn handle(ctx: &RequestContext<'_>, req: EnvelopeRequest) -> Reply {
    if !ctx.authorize_cluster(AclOperation::ClusterAction) {
        tracing::warn!(peer = %ctx.peer, principal = %ctx.principal, "an Envelope from a principal without CLUSTER_ACTION: refused");
        return refused(ErrorCode::ClusterAuthorizationFailed);
    }
    let Some(principal) = req
        .request_principal
        .as_ref()
        .and_then(|b| std::str::from_utf8(b).ok())
        .and_then(KafkaPrincipal::parse)
    else {
        return refused(ErrorCode::PrincipalDeserializationFailure);
    };
    let ip = match req.client_host_address.len() {
        4 => {
            let mut a = [0u8; 4];
            a.copy_from_slice(&req.client_host_address);
            IpAddr::from(a)
        }
        16 => {
            let mut a = [0u8; 16];
            a.copy_from_slice(&req.client_host_address);
            IpAddr::from(a)
        }
        _ => return refused(ErrorCode::InvalidRequest),
    };
    let (header, body) = match decode_request(req.request_data) {
        Ok(d) => d,
        Err(e) => {
            tracing::info!(peer = %ctx.peer, error = %e, "an undecodable request inside an Envelope");
            return refused(ErrorCode::InvalidRequest);
        }
    };
    let key = body.api_key();
    if !crate::cluster::is_forwarded(key) {
        return refused(ErrorCode::InvalidRequest);
    }
    let version = header.request_api_version;
    let inner = RequestContext {
        broker: ctx.broker,
        listener: ctx.listener,
        peer: SocketAddr::new(ip, 0),
        api_version: version,
        correlation_id: header.correlation_id,
        client_id: header.client_id.as_deref(),
        principal: &principal,
    };
    let correlation_id = header.correlation_id;
    match handlers::dispatch(&inner, body) {
        Reply::Now(b) => Reply::Now(wrap_response(correlation_id, key, version, &b)),
        Reply::Later(f) | Reply::Hold(f) => Reply::Later(Box::pin(async move {
            let b = f.await;
            wrap_response(correlation_id, key, version, &b)
        })),
        Reply::Nothing | Reply::Close(_) => refused(ErrorCode::InvalidRequest),
    }
}

fn wrap_response(
    correlation_id: i32,
    key: ApiKey,
    version: i16,
    body: &ResponseBody,
) -> ResponseBody {
    let mut out = BytesMut::new();
    match encode_response(correlation_id, key, version, body, &mut out) {
        Ok(()) => ResponseBody::Envelope(EnvelopeResponse {
            response_data: Some(out.freeze().slice(4..)),
            error_code: 0,
        }),
        Err(e) => {
            tracing::error!(api = key.name(), version, error = %e, "cannot encode a forwarded response");
            ResponseBody::Envelope(EnvelopeResponse {
                response_data: None,
                error_code: ErrorCode::UnknownServerError as i16,
            })
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn wrap_carries_the_request_principal_and_address() {
        let body = RequestBody::CreateTopics(skiff_protocol::CreateTopicsRequest {
            timeout_ms: 1234,
            ..Default::default()
        });
        let p = KafkaPrincipal::user("alice");
        let e = wrap(
            &p,
            "::ffff:10.1.2.3".parse().unwrap(),
            Some("cli"),
            7,
            &body,
        )
        .unwrap();
        assert_eq!(&e.request_principal.unwrap()[..], b"User:alice");
        assert_eq!(&e.client_host_address[..], &[10, 1, 2, 3]);
        let (h, inner) = decode_request(e.request_data).unwrap();
        assert_eq!(h.request_api_version, 7);
        assert_eq!(h.client_id.as_deref(), Some("cli"));
        assert_eq!(inner, body);
    }

    #[test]
    fn responses_round_trip_and_errors_surface() {
        let body = ResponseBody::CreateTopics(skiff_protocol::CreateTopicsResponse {
            throttle_time_ms: 5,
            ..Default::default()
        });
        let ResponseBody::Envelope(env) = wrap_response(9, ApiKey::CreateTopics, 7, &body) else {
            panic!("not an envelope");
        };
        assert_eq!(unwrap_response(ApiKey::CreateTopics, 7, env).unwrap(), body);
        let err = unwrap_response(
            ApiKey::CreateTopics,
            7,
            EnvelopeResponse {
                response_data: None,
                error_code: ErrorCode::ClusterAuthorizationFailed as i16,
            },
        )
        .unwrap_err();
        assert!(err.contains("CLUSTER_AUTHORIZATION_FAILED"), "{err}");
    }
}
