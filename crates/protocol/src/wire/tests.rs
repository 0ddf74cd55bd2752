//! Wire primitive tests.
