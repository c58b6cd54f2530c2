//! Spawn strategies: ScopeProvider, SpawnStrategy hooks, hiPriority (R-HP1)
//! and the Supervisor.

mod strategy_hooks;
mod strategy_supervisor;
