//! Networking: TCP (many concurrent connections with plain std::io code,
//! cancelled I/O, faults, fairness), UDP, Unix sockets, readiness on any
//! descriptor, name resolution, and the `http_server` and `http_hello`
//! examples under real requests.

mod tcp_cancel;
mod tcp_echo;
mod tcp_fairness;
mod tcp_lanes;
mod tcp_read_readiness;
mod tcp_faults;
mod tcp_races;
mod udp;
mod async_fd;
mod dns;
mod fd_table;
mod http_hello;
mod http_server;
mod unix;
mod uring_fast_paths;
