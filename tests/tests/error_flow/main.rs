//! The error flow (the RFC's "Error Handling" list, EF1-EF5 in
//! `scope::flow`): handlers, cancellation of the failing scope, the parent,
//! the global scope; what is not a failure.

mod error_flow_handlers;
mod error_flow_propagation;
