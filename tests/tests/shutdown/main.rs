//! Graceful shutdown (R-GS1, R-DL1) and signals.

mod shutdown_phases;
mod shutdown_signal;
