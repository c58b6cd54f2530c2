//! `sync`: channels, deferreds and futures, locks and signals between the
//! coroutines of one runtime. Order per sender and FIFO hand-off, nothing
//! lost or leaked under cancellation (D-29), waits that nothing can
//! complete reported as deadlocks, and the primitives as `until` triggers
//! and combinator inputs.

mod sync_channel;
mod sync_deferred;
mod sync_locks;
mod sync_signals;
mod sync_threads;
mod sync_latch;
