//! The reactor driven through its C vtable alone (`plugin_desc()`), the way
//! a host drives it: sockets, cancellation and buffer ownership, timers,
//! triggers, polls, `create` refusals.

mod support;

mod create;
mod fast_paths;
mod io_cancel;
mod io_socket;
mod poll;
mod timer;
mod trigger;
