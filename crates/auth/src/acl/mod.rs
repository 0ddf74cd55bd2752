//! ACLs (issue 19): the vocabulary ([`types`]) and the authorizer with Kafka's
//! StandardAuthorizer semantics (filled by the ACL work).

pub mod types;

pub use types::*;
pub mod index;

pub use index::{AclId, AclIndex, AuthorizerConfig};
