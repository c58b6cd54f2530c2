//! Coroutines: spawn order, suspend, join, panics, failures, `on_finally`,
//! state queries and introspection.

mod coroutine_failure;
mod coroutine_finally;
mod coroutine_introspection;
mod coroutine_join;
mod coroutine_order;
mod coroutine_stack;
mod coroutine_state;
mod coroutine_types;
mod coroutine_misuse;
