//! The ids of coroutines and scopes: plain numbers, unique for a runtime's
//! lifetime, shown bare (`17`) in messages.

use std::fmt;

/// A coroutine's id: unique for the runtime's lifetime, never 0.
///
/// Displays as the bare number (`17`), as in the deadlock report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CoroutineId(pub(crate) u64);

impl CoroutineId {
    /// The id as a number.
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Display for CoroutineId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A scope's id: unique for the runtime's lifetime. The global scope is 1.
///
/// Displays as the bare number (`3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ScopeId(pub(crate) u64);

impl ScopeId {
    /// The id as a number.
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Display for ScopeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}
