//! Compile-time contracts (STYLE S22): handles bound to the loop are
//! `!Send`; the values that report what happened (cancellation, failure,
//! join and scope errors) are `Send + Sync`: they travel inside `io::Error`
//! and out of `run`.

use async_std_api::net::{TcpListener, TcpStream};
use async_std_api::signal::Signal;
use async_std_api::time::Timeout;
use async_std_api::{
    Cancelled, Coroutine, Error, Failure, HiPriority, JoinError, JoinHandle, Scope, ScopeError,
    ScopeRef, Supervisor,
};

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
    <Scope as AmbiguousIfSend<_>>::check();
    <ScopeRef as AmbiguousIfSend<_>>::check();
    <Supervisor as AmbiguousIfSend<_>>::check();
    <HiPriority as AmbiguousIfSend<_>>::check();
    <Signal as AmbiguousIfSend<_>>::check();
    <Timeout as AmbiguousIfSend<_>>::check();
    <TcpStream as AmbiguousIfSend<_>>::check();
    <TcpListener as AmbiguousIfSend<_>>::check();
}

#[test]
fn cancellation_failures_and_errors_are_send_and_sync() {
    assert_send_sync::<Cancelled>();
    assert_send_sync::<Failure>();
    assert_send_sync::<JoinError>();
    assert_send_sync::<ScopeError>();
    assert_send_sync::<Error>();
}
