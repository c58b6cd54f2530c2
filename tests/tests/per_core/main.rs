//! Thread-per-core (D-39): `run_per_core` runs one loop per thread, each
//! with its own scheduler and reactor; `spawn_on`, `LoopSender` and one
//! shutdown for every loop connect them; `SO_REUSEPORT` listeners spread
//! connections over them.

mod per_core_channel;
mod per_core_net;
mod per_core_run;
mod per_core_shutdown;
mod per_core_spawn;
