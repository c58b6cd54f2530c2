//! `spawn_blocking`: work on the blocking pool while the loop runs the other
//! coroutines; results, panics and cancellation (D-30), the pool's bound,
//! and its configuration.

mod blocking_pool;
