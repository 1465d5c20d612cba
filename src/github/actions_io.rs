//! Actions I/O.
