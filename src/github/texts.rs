//! Comment texts.
