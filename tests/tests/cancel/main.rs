//! Cancellation: before start, while suspended, self-cancel, first reason
//! wins, edge-triggered delivery, waiters vs the awaited (P-04), `protect`,
//! and the line between a cancellation and a failure.

mod cancel_delivery;
mod cancel_join;
mod cancel_protect;
mod cancel_rules;
