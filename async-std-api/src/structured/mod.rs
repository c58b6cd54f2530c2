//! Structured concurrency on the core: scopes and their error flow, spawning
//! into them, graceful shutdown and zombies, task groups, contexts,
//! combinators (and `select`, whose branches are its own) and spawn
//! strategies, and [`run`](run::run), which builds a runtime around the
//! global scope. Imports the core and itself, never the surfaces above
//! (`cargo xtask check-arch` enforces it).

pub mod combinators;
pub(crate) mod context;
pub(crate) mod run;
pub(crate) mod scope;
pub(crate) mod select;
pub(crate) mod shutdown;
pub(crate) mod spawn;
pub(crate) mod strategy;
pub(crate) mod task_group;
pub(crate) mod zombie;
