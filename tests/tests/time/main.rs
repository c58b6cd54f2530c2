//! Timers: delay, sleep, timeout, and join_until with a timeout; deadlines
//! that cancel (with_timeout).

mod time_delay;
mod time_timeout;
mod time_interval;
mod time_with_timeout;
