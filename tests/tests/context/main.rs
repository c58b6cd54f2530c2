//! The Context API (R-CX1, R-CX2, D-15, REF-23): slots shared along the
//! scope tree, object keys, weak slots, and the coroutine-local context
//! freed when its coroutine completes; the RFC's Context examples as
//! recorded events.

mod context_coroutine;
mod context_inheritance;
mod context_rfc_examples;
mod context_slots;
