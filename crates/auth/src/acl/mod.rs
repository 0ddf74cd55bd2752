//! ACLs (issue 19): the vocabulary ([`types`]), filters ([`filter`]), CreateAcls and filter
//! validation ([`validate`]) and the authorizer with Kafka's `StandardAuthorizer` semantics
//! ([`index`], over the prefix trie in `trie`).
//!
//! Mental model: the metadata log's ACL records become an [`AclIndex`] (one [`AclBinding`]
//! per [`AclId`]); every request asks [`AclIndex::authorize`]; DescribeAcls and DeleteAcls
//! select with an [`AclBindingFilter`]; CreateAcls checks each binding with
//! [`validate_new_binding`]. Invariant: nothing here does I/O or reads a clock.

pub mod filter;
pub mod index;
mod trie;
pub mod types;
pub mod validate;

pub use filter::AclBindingFilter;
pub use index::{AclId, AclIndex, AuthorizerConfig};
pub use types::*;
pub use validate::{AclValidationError, validate_filter, validate_new_binding};

#[cfg(test)]
mod tests;
