//! Coroutines: spawn order, suspend, join, panics, state queries.

mod coroutine_join;
mod coroutine_order;
mod coroutine_state;
mod coroutine_types;
