//! Compile-time contracts (STYLE S22): handles bound to the loop are
//! `!Send`; the cancellation value is `Send + Sync` (it travels inside
//! `io::Error`).

use async_std_api::net::{TcpListener, TcpStream};
use async_std_api::time::Timeout;
use async_std_api::{Cancelled, Coroutine, Error, JoinError, JoinHandle};

/// Resolves only if `T` is not `Send` (two candidate impls otherwise).
trait AmbiguousIfSend<A> {
    fn check() {}
}
impl<T: ?Sized> AmbiguousIfSend<()> for T {}
impl<T: ?Sized + Send> AmbiguousIfSend<u8> for T {}

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn loop_bound_handles_are_not_send() {
    <JoinHandle<u32> as AmbiguousIfSend<_>>::check();
    <Coroutine as AmbiguousIfSend<_>>::check();
    <JoinError as AmbiguousIfSend<_>>::check();
    <Timeout as AmbiguousIfSend<_>>::check();
    <TcpStream as AmbiguousIfSend<_>>::check();
    <TcpListener as AmbiguousIfSend<_>>::check();
}

#[test]
fn cancellation_and_runtime_errors_are_send_and_sync() {
    assert_send_sync::<Cancelled>();
    assert_send_sync::<Error>();
}
