//! Authorization of the group and transaction handlers (issue 19): placeholder.
