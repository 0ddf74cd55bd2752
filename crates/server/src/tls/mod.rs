//! TLS (issue 19): placeholder, filled by the TLS work.
