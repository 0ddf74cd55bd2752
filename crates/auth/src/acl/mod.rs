//! ACLs (issue 19): placeholder, filled by the ACL work.
