//! Reactor conformance cases (work in progress).
