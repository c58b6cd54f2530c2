//! Scopes: spawning into them, the tree, cancellation, waiting,
//! disposal and zombies, introspection, O(1) membership.

mod scope_await;
mod scope_await_idle;
mod scope_cancel;
mod scope_dispose;
mod scope_membership;
mod scope_rfc_examples;
mod scope_spawn;
mod scope_zombies;
