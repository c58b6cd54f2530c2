//! The scheduler's behaviour through the C ABI, under both engines.
//!
//! Tests that hold in any order among equal priorities also run under
//! `policy=chaos` (`any_order_tests!`); `chaos.rs` tests the policy itself.
//!
//! Every test goes through the vtable a host gets from `plugin_desc()`
//! (`host.rs`), with a fake reactor the test drives. Tests record events and
//! assert whole sequences and exact counts, and end with a clean `finish()`
//! (no coroutine alive, `destroy` succeeds).

mod host;

mod chaos;
mod create;
mod deadlock;
mod fp;
mod guard;
mod handlers;
mod order;
mod pool;
mod scale;
mod shutdown;
mod stress;
