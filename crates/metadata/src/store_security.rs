//! Issue 19: the store's ACL and SCRAM writes (CreateAcls, DeleteAcls,
//! AlterUserScramCredentials at the active controller).
//!
//! Mental model: each is one `submit` of the pure controller's request (`controller/security.rs`
//! holds the rules): lock, handle against the image, propose, publish. A request with nothing
//! to change (every ACL already present, every item refused) proposes nothing and still
//! answers per item. Errors of the whole call (NOT_CONTROLLER, a failed proposal) are the
//! caller's to answer for every item.

use skiff_auth::acl::AclBinding;

use crate::controller::{Request, Response, ScramDeletion, ScramUpsertion};
use crate::security::{AclDeleteResult, AclFilter, ApiError, ScramResult};
use crate::store::unexpected;
use crate::{MetadataError, MetadataStore};

impl MetadataStore {
    /// CreateAcls: per binding (request order), created (or already present) or its error.
    pub fn create_acls(
        &self,
        acls: Vec<AclBinding>,
    ) -> Result<Vec<Result<(), ApiError>>, MetadataError> {
        let mut w = self.lock_writer();
        match self.submit(&mut w, &Request::CreateAcls { acls })? {
            Response::AclsCreated(r) => Ok(r),
            r => Err(unexpected(r)),
        }
    }

    /// DeleteAcls: per filter (request order), the ACLs it matched (now removed) or its error.
    pub fn delete_acls(
        &self,
        filters: Vec<AclFilter>,
    ) -> Result<Vec<AclDeleteResult>, MetadataError> {
        let mut w = self.lock_writer();
        match self.submit(&mut w, &Request::DeleteAcls { filters })? {
            Response::AclsDeleted(r) => Ok(r),
            r => Err(unexpected(r)),
        }
    }

    /// AlterUserScramCredentials: per user, the outcome (successes first).
    pub fn alter_scram_credentials(
        &self,
        deletions: Vec<ScramDeletion>,
        upsertions: Vec<ScramUpsertion>,
    ) -> Result<Vec<ScramResult>, MetadataError> {
        let mut w = self.lock_writer();
        let request = Request::AlterScramCredentials {
            deletions,
            upsertions,
        };
        match self.submit(&mut w, &request)? {
            Response::ScramAltered(r) => Ok(r),
            r => Err(unexpected(r)),
        }
    }
}
