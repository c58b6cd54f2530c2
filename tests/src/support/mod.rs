//! Helpers for the suite (work in progress).
