//! Name resolution (`dns_resolve`): the kit's resolver pool
//! (`reactor_sdk::dns`: `getaddrinfo` on at most four threads, its
//! invariants DN1-DN4), woken through this reactor's waker, and the events
//! of its lookups.
//!
//! # What this module owns
//!
//! The loop's side of a lookup: its event (state [`DnsState`]: the id in
//! the resolver and whether it is still pending), made at `dns_resolve`,
//! stopped by cancel, close and dispose, and completed by [`Reactor::run_dns`].
//!
//! # Drop order
//!
//! `destroy` (no lookup alive) ends the pool (`Resolver::shut_down`):
//! threads inside `getaddrinfo` finish, drop their result and exit, holding
//! only the pool and through it the waker's descriptor.

use std::ffi::CString;
use std::rc::Rc;
use std::sync::Arc;

use async_abi::sdk::dns::Hints;
use async_abi::AA_EVENT_DNS;

use crate::error::Result;
use crate::event::{DnsState, Event, State};
use crate::ffi::HostCallback;
use crate::reactor::Reactor;

/// The reactor's resolver: pending lookups keep their event.
pub(crate) type Resolver = reactor_sdk::dns::Resolver<Rc<Event>>;

impl Reactor {
    /// `dns_resolve`.
    pub(crate) fn dns_resolve(
        &self,
        node: Option<CString>,
        service: Option<CString>,
        hints: Hints,
        callback: HostCallback,
    ) -> Result<Rc<Event>> {
        let id = {
            let mut resolver = self.resolver.borrow_mut();
            let resolver = resolver.get_or_insert_with(|| {
                let shared = Arc::clone(&self.shared);
                Resolver::new(Box::new(move || {
                    // A failed wake-up leaves the result for the next
                    // iteration; nothing better can be done from here.
                    let _ = shared.wake();
                }))
            });
            resolver.reserve(node.as_ref())?
        };
        let state = State::Dns(DnsState { id, active: true });
        let ev = self.new_event(AA_EVENT_DNS, 0, callback, None, state);
        self.resolver
            .borrow_mut()
            .as_mut()
            .expect("made above")
            .start(id, node, service, hints, Rc::clone(&ev));
        self.touch(&ev);
        Ok(ev)
    }

    /// Ends a pending lookup (cancel, close, dispose): a queued job is
    /// dropped, a running one's result will be (DN1). Returns whether it
    /// was pending.
    pub(crate) fn dns_stop(&self, ev: &Event) -> bool {
        let id = match &mut *ev.state.borrow_mut() {
            State::Dns(d) if d.active => {
                d.active = false;
                d.id
            }
            _ => return false,
        };
        let owner = self.resolver.borrow_mut().as_mut().and_then(|r| r.stop(id));
        drop(owner);
        self.touch(ev);
        true
    }

    /// Delivers the lookups that finished (DN1, DN3). Returns the number of
    /// callbacks run.
    pub(crate) fn run_dns(&self) -> i32 {
        reactor_sdk::dns::deliver(&self.resolver, |ev| {
            if let State::Dns(d) = &mut *ev.state.borrow_mut() {
                d.active = false;
            }
            self.touch(ev);
        })
    }

    /// `destroy`: ends the pool (see the drop order).
    pub(crate) fn close_resolver(&self) {
        if let Some(mut resolver) = self.resolver.borrow_mut().take() {
            resolver.shut_down();
        }
    }
}
