//! Timers: delay, sleep, timeout, and join_until with a timeout.

mod time_delay;
mod time_timeout;
mod time_interval;
