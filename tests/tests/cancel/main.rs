//! Cancellation: before start, while suspended, self-cancel, first reason
//! wins, edge-triggered delivery, waiters vs the awaited (P-04), `protect`,
//! the line between a cancellation and a failure, and a caught cancellation
//! that still ends the coroutine cancelled (D-25).

mod cancel_d25;
mod cancel_delivery;
mod cancel_join;
mod cancel_protect;
mod cancel_rules;
