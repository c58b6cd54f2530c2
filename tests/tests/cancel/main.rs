//! Cancellation: before start, while suspended, self-cancel, first reason
//! wins, edge-triggered delivery, waiters vs the awaited (P-04).

mod cancel_delivery;
mod cancel_join;
