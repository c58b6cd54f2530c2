//! Task groups (R-TG1 .. R-TG6, D-14, P-12): explicit tasks, results and
//! errors by ordinal, race and first result, cancel and dispose, the
//! scope's failures, O(1) membership, and the RFC's examples as recorded
//! events.

mod tg_basics;
mod tg_cancel;
mod tg_failure_flow;
mod tg_rfc_examples;
