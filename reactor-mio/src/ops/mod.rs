//! Completion-level requests on a readiness reactor: a request waits in its
//! descriptor's FIFO queue, and each readiness edge (or a fresh submission)
//! tries the system call again until it stops returning `EAGAIN`.
//!
//! # Invariants (on top of the registry's G1-G4)
//!
//! - **O1** Only a queue's head is tried, and a queue is tried from its head
//!   until one request would block: requests on one descriptor and in one
//!   direction complete in submission order, and each with its own result.
//!   Readers and writers are separate queues, so they complete
//!   independently.
//! - **O2** Spurious readiness never completes a request: `EAGAIN` (and, for
//!   a connect, "not connected yet") leaves it queued.
//! - **O3** A request that never waited for readiness is tried at least once
//!   without an edge: inline with `AA_IO_TRY_INLINE`, else by the next
//!   `run_once` (the descriptor is marked dirty), unless its direction's
//!   readiness hint is false (registry G6): then the edge that sets the hint
//!   again is what tries it. Removing a queue's head (cancel, close,
//!   dispose) also marks it dirty, so the new head is tried.
//! - **O4** A request leaves its queue before its callback runs and its
//!   phase is `Done` from then on (event invariant E3).
//!
//! # Access
//!
//! Loop thread only; the registry borrow is released before every callback
//! (reactor invariant R1).

mod accept;
mod close;
mod connect;
mod dgram;
mod read;
mod write;

use std::io;
use std::rc::Rc;

use async_abi::AA_EVENT_IO;
use mio::Interest;

use crate::error::{Error, Result};
use crate::event::{Event, IoPhase, IoState, Opcode, Request, State};
use crate::ffi::HostCallback;
use crate::reactor::{Deferred, Reactor};
use crate::registry::{FdEntry, Key};
use crate::sys;

/// What one try of a request's system call gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Attempt {
    /// Not now: wait for readiness (O2).
    WouldBlock,
    /// Completed with this result (bytes, a descriptor, 0 or `-errno`).
    Done(i64),
}

impl Attempt {
    fn from_io(res: io::Result<i64>) -> Attempt {
        match res {
            Ok(n) => Attempt::Done(n),
            Err(e) if sys::would_block(&e) => Attempt::WouldBlock,
            Err(e) => Attempt::Done(sys::neg_errno(&e)),
        }
    }
}

/// What `io_submit` did: completed inline (`AA_DONE`, no event) or pending
/// (the event, whose callback will run once).
pub(crate) type Submitted = reactor_sdk::Submitted<Event>;

/// Tries a request's system call once.
fn attempt(req: &Request, phase: &mut IoPhase, socket: bool) -> Attempt {
    match req.opcode {
        Opcode::Read => read::attempt(req, socket),
        Opcode::Write => write::attempt(req, socket),
        Opcode::Accept => accept::attempt(req),
        Opcode::Connect => connect::attempt(req, phase),
        Opcode::RecvFrom => dgram::recv_from(req),
        Opcode::SendTo => dgram::send_to(req),
        // Closes never queue (close.rs); file requests are refused by
        // `ffi.rs` (no `AA_CAP_IO_FILE`).
        _ => Attempt::Done(-i64::from(libc::EINVAL)),
    }
}

/// Records what an attempt says about the descriptor's readiness (G6).
fn note_attempt(entry: &mut FdEntry, req: &Request, outcome: Attempt) {
    let got = match outcome {
        Attempt::WouldBlock => None,
        // A peek leaves the data queued: however short, it drained
        // nothing, and epoll will not report that data again (G6).
        Attempt::Done(_) if req.peek => return,
        // Only a data transfer can come back short.
        Attempt::Done(n)
            if matches!(
                req.opcode,
                Opcode::Read | Opcode::Write | Opcode::RecvFrom | Opcode::SendTo
            ) =>
        {
            Some(n)
        }
        Attempt::Done(_) => return,
    };
    entry.note_attempt(req.opcode.reads(), req.buf.len(), got);
}

impl Reactor {
    /// `io_submit` for a converted request.
    pub(crate) fn io_submit(
        &self,
        req: Request,
        inline: bool,
        callback: HostCallback,
    ) -> Result<Submitted> {
        if req.opcode == Opcode::Close {
            return self.submit_close(req, inline, callback);
        }
        let fd = req.fd;
        let reads = req.opcode.reads();
        // One registry borrow for the whole submission: nothing below calls
        // the host (R1), and the attempt is a plain system call.
        let mut registry = self.registry.borrow_mut();
        let key = registry
            .entry_for(fd)
            .map_err(|e| Error::os(format_args!("io_submit: fd {fd}"), &e))?;
        let entry = registry
            .get_mut(key)
            .expect("entry_for returned a live key");
        if req.peek && !entry.socket {
            return Err(Error::invalid(format!(
                "io_submit: AA_IO_PEEK on fd {fd}, which is not a socket"
            )));
        }
        let (idle, hint) = if reads {
            (entry.readers.is_empty(), entry.read_hint)
        } else {
            (entry.writers.is_empty(), entry.write_hint)
        };
        let mut phase = IoPhase::Queued;
        let tried = inline && idle && hint;
        if tried {
            let outcome = attempt(&req, &mut phase, entry.socket);
            note_attempt(entry, &req, outcome);
            if let Attempt::Done(result) = outcome {
                return Ok(Submitted::Done(result));
            }
        }
        let want = if reads {
            Interest::READABLE
        } else {
            Interest::WRITABLE
        };
        self.with_mio(|mio| entry.ensure(mio, key, want, false, true))
            .map_err(|e| Error::os(format_args!("io_submit: register fd {fd}"), &e))?;
        let state = State::Io(IoState {
            request: req,
            phase,
        });
        let ev = self.new_event(AA_EVENT_IO, 0, callback, None, state);
        let queue = if reads {
            &mut entry.readers
        } else {
            &mut entry.writers
        };
        queue.push_back(Rc::clone(&ev));
        let always_ready = entry.always_ready;
        drop(registry);
        // O3: a request nobody tried yet is tried by the next iteration,
        // unless the hint says its descriptor is not ready (G6): the next
        // readiness report tries it.
        if (!tried && hint) || always_ready {
            self.mark_dirty(key);
        }
        self.touch(&ev);
        Ok(Submitted::Pending(ev))
    }

    /// Tries the head requests of one queue of `key` until one would block
    /// (O1), calling each completed request's callback with no borrow held
    /// (R1). Returns the number of callbacks run.
    pub(crate) fn drain(&self, key: Key, readers: bool) -> i32 {
        let mut count = 0;
        // R6: only what was queued when the drain began; what callbacks
        // queue meanwhile waits for the next iteration.
        let mut budget = None;
        loop {
            let (ev, result) = {
                let mut registry = self.registry.borrow_mut();
                let Some(entry) = registry.get_mut(key) else {
                    return count;
                };
                let socket = entry.socket;
                let queue = if readers {
                    &mut entry.readers
                } else {
                    &mut entry.writers
                };
                let left = budget.get_or_insert(queue.len());
                if *left == 0 {
                    if !queue.is_empty() {
                        drop(registry);
                        self.mark_dirty(key);
                    }
                    return count;
                }
                *left -= 1;
                let Some(ev) = queue.pop_front() else {
                    return count;
                };
                let outcome = match &mut *ev.state.borrow_mut() {
                    State::Io(io) if io.phase != IoPhase::Done => {
                        let outcome = attempt(&io.request, &mut io.phase, socket);
                        note_attempt(entry, &io.request, outcome);
                        if let Attempt::Done(_) = outcome {
                            io.phase = IoPhase::Done;
                        }
                        Some(outcome)
                    }
                    // G4 broken: drop the stray entry without a callback.
                    _ => None,
                };
                match outcome {
                    Some(Attempt::WouldBlock) => {
                        // O1: the head stays the head.
                        let queue = if readers {
                            &mut entry.readers
                        } else {
                            &mut entry.writers
                        };
                        queue.push_front(ev);
                        return count;
                    }
                    Some(Attempt::Done(result)) => (ev, Some(result)),
                    None => (ev, None),
                }
            };
            self.touch(&ev);
            if let (Some(result), true) = (result, ev.deliverable()) {
                ev.callback.notify(&*ev, 0, result);
                count += 1;
            }
        }
    }

    /// Removes `ev` from a queue of `key`.
    fn unqueue(&self, key: Key, ev: &Rc<Event>, readers: bool) {
        let mut registry = self.registry.borrow_mut();
        let Some(entry) = registry.get_mut(key) else {
            return;
        };
        let queue = if readers {
            &mut entry.readers
        } else {
            &mut entry.writers
        };
        // Almost always the head (a completed request): no search, no shift.
        if queue.front().is_some_and(|q| Rc::ptr_eq(q, ev)) {
            queue.pop_front();
        } else if let Some(at) = queue.iter().position(|q| Rc::ptr_eq(q, ev)) {
            queue.remove(at);
        }
    }

    /// Takes a pending request out of its queue (cancel, close, dispose) and
    /// marks it `Done` (O4). Returns whether it was pending.
    pub(crate) fn withdraw_request(&self, ev: &Rc<Event>) -> bool {
        let (fd, reads) = {
            let mut state = ev.state.borrow_mut();
            let State::Io(io) = &mut *state else {
                return false;
            };
            if io.phase == IoPhase::Done {
                return false;
            }
            io.phase = IoPhase::Done;
            (io.request.fd, io.request.opcode.reads())
        };
        let key = self.registry.borrow().key_of(fd);
        if let Some(key) = key {
            self.unqueue(key, ev, reads);
            self.mark_dirty(key);
        }
        true
    }

    /// Completes everything a forgotten descriptor entry held (AA_IO_CLOSE,
    /// an owning poll's close): requests with `-ECANCELED`, armed polls with
    /// status `-ECANCELED`, all from the next `run_once` (R2).
    pub(crate) fn cancel_entry(&self, entry: FdEntry) {
        let canceled = -libc::ECANCELED;
        for ev in entry.readers.into_iter().chain(entry.writers) {
            if let State::Io(io) = &mut *ev.state.borrow_mut() {
                io.phase = IoPhase::Done;
            }
            self.defer(Deferred::Notify {
                ev,
                status: 0,
                value: i64::from(canceled),
            });
        }
        for ev in entry.polls {
            let was_armed = match &mut *ev.state.borrow_mut() {
                State::Poll(p) => {
                    let armed = p.armed && p.interest != 0;
                    p.armed = false;
                    p.key = None;
                    armed
                }
                _ => false,
            };
            if was_armed {
                self.defer(Deferred::Notify {
                    ev: Rc::clone(&ev),
                    status: canceled,
                    value: 0,
                });
            }
            self.touch(&ev);
        }
    }
}
