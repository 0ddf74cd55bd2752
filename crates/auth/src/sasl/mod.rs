//! SASL mechanisms (issue 19): placeholder, filled by the SASL work.
