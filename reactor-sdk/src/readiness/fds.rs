//! Descriptors: readiness watches (polls) and requests (read, write,
//! accept, connect, close, and the datagram ones), run as readiness plus the
//! kit's non-blocking system calls (`reactor_sdk::sys`).
//!
//! # Invariants
//!
//! - **D1** A descriptor has an entry, and an backend registration (both
//!   directions, edge-triggered, token = its number), exactly while a
//!   request waits on it or a poll watches it: one nobody waits on is not
//!   registered, so a number closed and reused behind the reactor's back
//!   never inherits a stale registration.
//! - **D2** Requests wait in two FIFO queues per descriptor (readers:
//!   read, accept, recvfrom; writers: write, connect, sendto); only the
//!   front of a queue is tried, so reads complete in submission order, and
//!   so do writes.
//! - **D3** A new request is tried first from the next iteration's `fresh`
//!   list, in submission order across descriptors; after `EAGAIN` it waits
//!   for its direction's next edge, and the backend is told
//!   (`Backend::drained`).
//! - **D4** A request's host buffer and address are used only while it is
//!   pending (AA-R5): once it completed, was withdrawn or disposed, nothing
//!   touches them.

use std::collections::{HashMap, VecDeque};
use std::os::fd::RawFd;
use std::rc::Rc;

use async_abi::sdk::request::Opcode;
use async_abi::*;

use super::{Backend, Deferred, Event, Kind, Readiness};
use crate::error::check_flags;
use crate::sys::{self, HostAddr, HostBuf};
use crate::{Error, HostCallback, Result, Submitted};

/// Both directions: a descriptor's registration (D1).
const BOTH: u32 = AA_POLL_READABLE | AA_POLL_WRITABLE;

/// Every descriptor something waits on, and the requests to try first.
#[derive(Debug)]
pub(super) struct Fds<B: Backend> {
    map: HashMap<RawFd, Entry<B>>,
    fresh: Vec<Rc<Event<B>>>,
}

impl<B: Backend> Default for Fds<B> {
    fn default() -> Fds<B> {
        Fds {
            map: HashMap::new(),
            fresh: Vec::new(),
        }
    }
}

/// One descriptor's waiters (D1, D2).
#[derive(Debug)]
struct Entry<B: Backend> {
    readers: VecDeque<Rc<Event<B>>>,
    writers: VecDeque<Rc<Event<B>>>,
    polls: Vec<Rc<Event<B>>>,
    socket: bool,
}

impl<B: Backend> Entry<B> {
    fn new(socket: bool) -> Entry<B> {
        Entry {
            readers: VecDeque::new(),
            writers: VecDeque::new(),
            polls: Vec::new(),
            socket,
        }
    }

    fn is_empty(&self) -> bool {
        self.readers.is_empty() && self.writers.is_empty() && self.polls.is_empty()
    }

    fn queue(&mut self, reads: bool) -> &mut VecDeque<Rc<Event<B>>> {
        if reads {
            &mut self.readers
        } else {
            &mut self.writers
        }
    }
}

impl<B: Backend> Fds<B> {
    /// The requests submitted since the last call (D3).
    pub(super) fn take_fresh(&mut self) -> Vec<Rc<Event<B>>> {
        std::mem::take(&mut self.fresh)
    }

    /// Drops everything (`destroy`, with no event alive).
    pub(super) fn clear(&mut self) {
        self.map.clear();
        self.fresh.clear();
    }
}

/// A request, converted from `AaIoOp` by `ffi.rs`, which wrapped the
/// host's buffer and address (D4).
#[derive(Debug)]
pub(super) struct Req {
    pub(super) opcode: Opcode,
    pub(super) fd: RawFd,
    pub(super) buf: HostBuf,
    /// File offset, -1 for the current position or a stream.
    pub(super) offset: i64,
    /// Accept, recvfrom: where the peer's address goes.
    pub(super) peer: Option<HostAddr>,
    /// Connect, sendto: the reactor's copy of the address.
    pub(super) target: Option<Box<AaSockAddr>>,
    /// `AA_IO_PEEK`.
    pub(super) peek: bool,
}

/// What one try of a request gave.
enum Attempt {
    Done(i64),
    WouldBlock,
}

/// Whether a request reads (its queue, D2).
fn reads(op: Opcode) -> bool {
    op.reads()
}

/// Tries a request's system call once (D4: only while pending).
fn attempt(req: &Req, connecting: &mut bool, socket: bool) -> Attempt {
    let outcome = match req.opcode {
        Opcode::Read => sys::read(req.fd, req.buf, req.offset, socket, req.peek).map(|n| n as i64),
        Opcode::Write => sys::write(req.fd, req.buf, req.offset, socket).map(|n| n as i64),
        Opcode::Accept => {
            let mut peer = AaSockAddr::EMPTY;
            sys::accept(req.fd, &mut peer).map(|fd| {
                if let Some(slot) = &req.peer {
                    slot.write(&peer);
                }
                i64::from(fd)
            })
        }
        Opcode::RecvFrom => {
            let mut from = AaSockAddr::EMPTY;
            sys::recv_from(req.fd, req.buf, &mut from, req.peek).map(|n| {
                if let Some(slot) = &req.peer {
                    slot.write(&from);
                }
                n as i64
            })
        }
        Opcode::SendTo => sys::send_to(req.fd, req.buf, req.target.as_deref()).map(|n| n as i64),
        Opcode::Connect => return connect(req, connecting),
        _ => Ok(-i64::from(libc::EINVAL)),
    };
    match outcome {
        Ok(n) => Attempt::Done(n),
        Err(e) if sys::would_block(&e) => Attempt::WouldBlock,
        Err(e) => Attempt::Done(sys::neg_errno(&e)),
    }
}

/// `AA_IO_CONNECT`: starts the connect, then (after a writable edge) asks
/// the socket how it went.
fn connect(req: &Req, connecting: &mut bool) -> Attempt {
    let Some(target) = &req.target else {
        return Attempt::Done(-i64::from(libc::EINVAL));
    };
    if !*connecting {
        return match sys::connect(req.fd, target) {
            Ok(()) => Attempt::Done(0),
            Err(e) if sys::would_block(&e) || e.kind() == std::io::ErrorKind::Interrupted => {
                *connecting = true;
                Attempt::WouldBlock
            }
            Err(e) => Attempt::Done(sys::neg_errno(&e)),
        };
    }
    match sys::socket_error(req.fd) {
        Ok(0) => match sys::is_connected(req.fd) {
            Ok(true) => Attempt::Done(0),
            Ok(false) => Attempt::WouldBlock,
            Err(e) => Attempt::Done(sys::neg_errno(&e)),
        },
        Ok(err) => Attempt::Done(-i64::from(err)),
        Err(e) => Attempt::Done(sys::neg_errno(&e)),
    }
}

impl<B: Backend> Readiness<B> {
    /// The entry of `fd`, made and registered if it has none (D1).
    fn entry(&self, fd: RawFd, what: &str) -> Result<()> {
        if self.fds.borrow().map.contains_key(&fd) {
            return Ok(());
        }
        let socket =
            sys::is_socket(fd).map_err(|e| Error::os(format_args!("{what}: fd {fd}"), &e))?;
        self.backend
            .borrow()
            .register(fd, fd as u64, BOTH)
            .map_err(|e| Error::os(format_args!("{what}: register fd {fd}"), &e))?;
        self.fds.borrow_mut().map.insert(fd, Entry::new(socket));
        Ok(())
    }

    /// Drops `fd`'s entry and registration once nothing waits on it (D1).
    fn release(&self, fd: RawFd) {
        let mut fds = self.fds.borrow_mut();
        if fds.map.get(&fd).is_some_and(Entry::<B>::is_empty) {
            fds.map.remove(&fd);
            let _ = self.backend.borrow().deregister(fd);
        }
    }

    /// Re-registers `fd`: the backend then reports its current readiness again.
    fn recheck(&self, fd: RawFd) {
        let _ = self.backend.borrow().modify(fd, fd as u64, BOTH);
    }

    // -----------------------------------------------------------------
    // Polls
    // -----------------------------------------------------------------

    pub(super) fn poll_new(
        &self,
        fd: RawFd,
        interest: u32,
        flags: u32,
        cb: HostCallback,
    ) -> Result<Rc<Event<B>>> {
        check_flags("poll_new", flags, AA_EVF_HIDDEN | AA_EVF_OWNS_FD)?;
        check_interest("poll_new", interest)?;
        self.entry(fd, "poll_new")?;
        let state = Kind::Poll {
            fd,
            interest,
            armed: true,
            dead: false,
        };
        let ev = self.new_event(AA_EVENT_POLL, flags, cb, state);
        if let Some(entry) = self.fds.borrow_mut().map.get_mut(&fd) {
            entry.polls.push(Rc::clone(&ev));
        }
        self.recheck(fd);
        self.touch(&ev);
        Ok(ev)
    }

    pub(super) fn poll_set_interest(&self, ev: &Rc<Event<B>>, interest: u32) -> Result<()> {
        ev.check_open("poll_set_interest")?;
        check_interest("poll_set_interest", interest)?;
        let fd = match &mut ev.state.borrow_mut().0 {
            Kind::Poll { dead: true, fd, .. } => {
                return Err(Error::new(
                    AA_E_CLOSED,
                    format!("poll_set_interest: fd {fd} was closed through the reactor"),
                ))
            }
            Kind::Poll {
                fd,
                interest: now,
                armed,
                ..
            } => {
                *now = interest;
                *armed = true;
                *fd
            }
            _ => return Err(Error::invalid("poll_set_interest: event is not a poll")),
        };
        self.recheck(fd);
        self.touch(ev);
        Ok(())
    }

    /// Takes a poll off its descriptor (close, dispose); one that owns its
    /// descriptor closes it (`AA_EVF_OWNS_FD`).
    pub(super) fn release_poll(&self, ev: &Rc<Event<B>>) {
        let (fd, dead) = match &mut ev.state.borrow_mut().0 {
            Kind::Poll {
                fd, armed, dead, ..
            } => {
                *armed = false;
                (*fd, std::mem::replace(dead, true))
            }
            _ => return,
        };
        if dead {
            return;
        }
        if let Some(entry) = self.fds.borrow_mut().map.get_mut(&fd) {
            entry.polls.retain(|p| !Rc::ptr_eq(p, ev));
        }
        self.release(fd);
        if ev.header.flags & AA_EVF_OWNS_FD != 0 {
            // A descriptor that is already bad has nothing left to close.
            let _ = self.forget_and_close(fd);
        }
    }

    // -----------------------------------------------------------------
    // Requests
    // -----------------------------------------------------------------

    /// `io_submit` of a request whose pointers `ffi.rs` vouched for.
    pub(super) fn io_submit(&self, req: Req, cb: HostCallback) -> Result<Submitted<Event<B>>> {
        let fd = req.fd;
        if req.opcode == Opcode::Close {
            let result = self.forget_and_close(fd)?;
            let ev = self.new_event(AA_EVENT_IO, 0, cb, io_state(req, false));
            self.defer(Deferred::Notify {
                ev: Rc::clone(&ev),
                status: 0,
                value: result,
            });
            return Ok(Submitted::Pending(ev));
        }
        self.entry(fd, "io_submit")?;
        let socket = self.fds.borrow().map.get(&fd).is_some_and(|e| e.socket);
        if req.peek && !socket {
            self.release(fd);
            return Err(Error::invalid(format!(
                "io_submit: AA_IO_PEEK on fd {fd}, which is not a socket"
            )));
        }
        let queue_reads = reads(req.opcode);
        let ev = self.new_event(AA_EVENT_IO, 0, cb, io_state(req, true));
        {
            let mut fds = self.fds.borrow_mut();
            let entry = fds.map.get_mut(&fd).expect("made by entry()");
            entry.queue(queue_reads).push_back(Rc::clone(&ev));
            fds.fresh.push(Rc::clone(&ev));
        }
        self.touch(&ev);
        Ok(Submitted::Pending(ev))
    }

    /// Tries each new request in submission order, if it is the front of
    /// its queue (D2, D3).
    pub(super) fn start_fresh(&self, fresh: Vec<Rc<Event<B>>>) -> i32 {
        let mut count = 0;
        for ev in fresh {
            let (fd, queue_reads) = match &ev.state.borrow().0 {
                Kind::Io {
                    req, pending: true, ..
                } => (req.fd, reads(req.opcode)),
                _ => continue,
            };
            let front = self
                .fds
                .borrow_mut()
                .map
                .get_mut(&fd)
                .and_then(|entry| entry.queue(queue_reads).front().map(|f| Rc::ptr_eq(f, &ev)));
            if front == Some(true) {
                count += self.drain(fd, queue_reads, 1);
            }
        }
        count
    }

    /// The backend reported `fd`: tries its queues, then tells its polls.
    pub(super) fn fd_ready(&self, fd: RawFd, bits: u32) -> i32 {
        let mut count = 0;
        let (readers, writers) = match self.fds.borrow().map.get(&fd) {
            Some(entry) => (entry.readers.len(), entry.writers.len()),
            None => return 0,
        };
        if bits & (AA_POLL_READABLE | AA_POLL_ERROR) != 0 {
            count += self.drain(fd, true, readers);
        }
        if bits & (AA_POLL_WRITABLE | AA_POLL_ERROR) != 0 {
            count += self.drain(fd, false, writers);
        }
        let polls = match self.fds.borrow().map.get(&fd) {
            Some(entry) => entry.polls.clone(),
            None => return count,
        };
        for ev in polls {
            let ready = match &ev.state.borrow().0 {
                Kind::Poll {
                    armed: true,
                    interest,
                    ..
                } if *interest != 0 => bits & (*interest | AA_POLL_ERROR | AA_POLL_HUP),
                _ => 0,
            };
            if ready != 0 && ev.deliverable() {
                ev.callback.notify(&*ev, 0, i64::from(ready));
                count += 1;
            }
        }
        count
    }

    /// Tries at most `limit` requests from the front of one queue, calling
    /// each one back as it completes, with no borrow held (R1), until one
    /// would block (R4, D2).
    fn drain(&self, fd: RawFd, queue_reads: bool, limit: usize) -> i32 {
        let mut count = 0;
        for _ in 0..limit {
            let (ev, socket) = {
                let mut fds = self.fds.borrow_mut();
                let Some(entry) = fds.map.get_mut(&fd) else {
                    break;
                };
                let socket = entry.socket;
                match entry.queue(queue_reads).front() {
                    Some(ev) => (Rc::clone(ev), socket),
                    None => break,
                }
            };
            let outcome = match &mut ev.state.borrow_mut().0 {
                Kind::Io {
                    req,
                    pending: true,
                    connecting,
                } => attempt(req, connecting, socket),
                _ => Attempt::Done(0),
            };
            let Attempt::Done(result) = outcome else {
                // `EAGAIN`: this direction waits for its next edge, and a
                // level-triggered backend may report it again (mod.rs,
                // the edge contract).
                let dir = if queue_reads {
                    AA_POLL_READABLE
                } else {
                    AA_POLL_WRITABLE
                };
                self.backend.borrow().drained(fd, dir);
                break;
            };
            self.finish_request(&ev, fd, queue_reads);
            if ev.deliverable() {
                ev.callback.notify(&*ev, 0, result);
                count += 1;
            }
        }
        count
    }

    /// Takes a completed request off its queue (D4).
    fn finish_request(&self, ev: &Rc<Event<B>>, fd: RawFd, queue_reads: bool) {
        if let Kind::Io { pending, .. } = &mut ev.state.borrow_mut().0 {
            *pending = false;
        }
        if let Some(entry) = self.fds.borrow_mut().map.get_mut(&fd) {
            entry.queue(queue_reads).retain(|r| !Rc::ptr_eq(r, ev));
        }
        self.release(fd);
        self.touch(ev);
    }

    /// Takes a pending request out of its queue (cancel, close, dispose);
    /// whether it was pending. An `AA_IO_CLOSE` already ran.
    pub(super) fn withdraw_request(&self, ev: &Rc<Event<B>>) -> bool {
        let (fd, queue_reads) = match &ev.state.borrow().0 {
            Kind::Io {
                req, pending: true, ..
            } => (req.fd, reads(req.opcode)),
            _ => return false,
        };
        self.finish_request(ev, fd, queue_reads);
        true
    }

    /// `AA_IO_CLOSE`: forgets `fd` (its requests complete with `-ECANCELED`
    /// from the next `run_once`, its polls die), then closes it. `Err` only
    /// for a descriptor nobody knew and the kernel calls bad.
    fn forget_and_close(&self, fd: RawFd) -> Result<i64> {
        let entry = self.fds.borrow_mut().map.remove(&fd);
        let known = entry.is_some();
        if let Some(entry) = entry {
            let _ = self.backend.borrow().deregister(fd);
            for ev in entry.readers.into_iter().chain(entry.writers) {
                if let Kind::Io { pending, .. } = &mut ev.state.borrow_mut().0 {
                    *pending = false;
                }
                self.defer(Deferred::Notify {
                    ev: Rc::clone(&ev),
                    status: 0,
                    value: -i64::from(libc::ECANCELED),
                });
                self.touch(&ev);
            }
            for ev in entry.polls {
                if let Kind::Poll { armed, dead, .. } = &mut ev.state.borrow_mut().0 {
                    *armed = false;
                    *dead = true;
                }
                self.touch(&ev);
            }
        }
        match sys::close(fd) {
            Ok(()) => Ok(0),
            Err(e) if !known && e.raw_os_error() == Some(libc::EBADF) => {
                Err(Error::os(format_args!("io_submit: close fd {fd}"), &e))
            }
            Err(e) => Ok(sys::neg_errno(&e)),
        }
    }
}

/// A request's state.
fn io_state(req: Req, pending: bool) -> Kind {
    Kind::Io {
        req,
        pending,
        connecting: false,
    }
}

/// Refuses interest bits other than readable and writable.
fn check_interest(what: &str, interest: u32) -> Result<()> {
    let unknown = interest & !(AA_POLL_READABLE | AA_POLL_WRITABLE);
    if unknown != 0 {
        return Err(Error::invalid(format!(
            "{what}: unknown interest bits {unknown:#x}"
        )));
    }
    Ok(())
}
