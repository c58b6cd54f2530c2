//! TCP: many concurrent connections with plain std::io code, cancelled I/O.

mod tcp_cancel;
mod tcp_echo;
mod tcp_fairness;
mod tcp_faults;
mod tcp_races;
