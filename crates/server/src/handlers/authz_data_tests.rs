//! Authorization of the data-plane and admin handlers (issue 19): placeholder.
