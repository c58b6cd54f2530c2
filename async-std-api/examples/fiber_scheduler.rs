//! A task scheduler of its own, built on fibers: the generator-multitasking
//! article's scheduler ("cooperative multitasking using coroutines"),
//! with tasks that are fibers and system calls that are the values they
//! suspend with.
//!
//! ```text
//! cargo run -p async-std-api --example fiber_scheduler
//! ASYNC_REACTOR=uring cargo run -p async-std-api --example fiber_scheduler
//! ```
//!
//! The scheduler keeps a queue of ready tasks and runs each until it
//! suspends. A task asks the scheduler for things by suspending with a
//! system call: `get_task_id`, `new_task`, `kill_task`, `wait_for_read`,
//! `wait_for_write` (and a plain `yield_now`). Waiting for a socket is the
//! article's `stream_select`, done here by the runtime: a coroutine per
//! waiting socket waits for readiness and reports the task back on a
//! channel, and the scheduler, when no task is ready, waits on that
//! channel. The program runs the article's two demonstrations: two tasks
//! taking turns, then a small echo server serving three clients, all tasks
//! of one fiber scheduler; it exits 0 when every task has finished.

use std::collections::{BTreeMap, VecDeque};
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsFd, OwnedFd};

use async_std_api::fiber::Fiber;
use async_std_api::io::Async;
use async_std_api::sync::{unbounded, Receiver, Sender};
use async_std_api::{spawn, JoinHandle};

type TaskId = u64;
type Body = Box<dyn FnOnce()>;

/// What a task suspends with, and what it is resumed with.
enum Msg {
    Call(SysCall),
    Reply(Reply),
}

enum SysCall {
    GetTaskId,
    NewTask(Body),
    KillTask(TaskId),
    WaitForRead(OwnedFd),
    WaitForWrite(OwnedFd),
    Yield,
}

enum Reply {
    Nothing,
    TaskId(TaskId),
    Killed(bool),
}

/// Makes a system call from inside a task.
fn syscall(call: SysCall) -> Reply {
    match Fiber::suspend(Msg::Call(call)) {
        Ok(Msg::Reply(r)) => r,
        Ok(Msg::Call(_)) => unreachable!("the scheduler resumes with replies"),
        Err(e) => panic!("a system call outside a task: {e}"),
    }
}

fn get_task_id() -> TaskId {
    match syscall(SysCall::GetTaskId) {
        Reply::TaskId(id) => id,
        _ => unreachable!(),
    }
}

fn new_task(body: impl FnOnce() + 'static) -> TaskId {
    match syscall(SysCall::NewTask(Box::new(body))) {
        Reply::TaskId(id) => id,
        _ => unreachable!(),
    }
}

fn kill_task(id: TaskId) -> bool {
    matches!(syscall(SysCall::KillTask(id)), Reply::Killed(true))
}

fn yield_now() {
    syscall(SysCall::Yield);
}

/// Suspends the task until `socket` is readable.
fn wait_for_read(socket: &impl AsFd) -> io::Result<()> {
    let fd = socket.as_fd().try_clone_to_owned()?;
    syscall(SysCall::WaitForRead(fd));
    Ok(())
}

/// Suspends the task until `socket` is writable.
fn wait_for_write(socket: &impl AsFd) -> io::Result<()> {
    let fd = socket.as_fd().try_clone_to_owned()?;
    syscall(SysCall::WaitForWrite(fd));
    Ok(())
}

struct Task {
    fiber: Fiber<Msg, ()>,
    /// What to resume it with next.
    send: Option<Msg>,
}

/// The article's `Scheduler`: a task map, a ready queue, and the I/O wait.
struct Scheduler {
    next_id: TaskId,
    tasks: BTreeMap<TaskId, Task>,
    ready: VecDeque<TaskId>,
    /// Tasks whose socket became ready, reported by the waiting coroutines.
    io_ready: (Sender<TaskId>, Receiver<TaskId>),
    /// The coroutine waiting for each waiting task's socket.
    waiting_io: BTreeMap<TaskId, JoinHandle<()>>,
}

impl Scheduler {
    fn new() -> Scheduler {
        Scheduler {
            next_id: 1,
            tasks: BTreeMap::new(),
            ready: VecDeque::new(),
            io_ready: unbounded(),
            waiting_io: BTreeMap::new(),
        }
    }

    fn new_task(&mut self, body: Body) -> TaskId {
        let id = self.next_id;
        self.next_id += 1;
        let fiber = Fiber::new(move |_first: Msg| body());
        self.tasks.insert(
            id,
            Task {
                fiber,
                send: Some(Msg::Reply(Reply::Nothing)),
            },
        );
        self.ready.push_back(id);
        id
    }

    /// Waits (in a coroutine of the runtime) until `fd` is ready, then
    /// reports `task` as ready.
    fn wait_io(&mut self, task: TaskId, fd: OwnedFd, write: bool) {
        let done = self.io_ready.0.clone();
        let waiter = spawn(move || {
            let watched = Async::new_nonblocking(fd);
            let r = if write {
                watched.writable()
            } else {
                watched.readable()
            };
            if r.is_ok() {
                let _ = done.send(task);
            }
        });
        self.waiting_io.insert(task, waiter);
    }

    /// A socket wait reported `id` ready.
    fn io_done(&mut self, id: TaskId) {
        if self.waiting_io.remove(&id).is_some() && self.tasks.contains_key(&id) {
            self.ready.push_back(id);
        }
    }

    fn run(&mut self) {
        while !self.tasks.is_empty() {
            let Some(id) = self.ready.pop_front() else {
                // Nothing ready: the article's blocking `stream_select`.
                let id = self
                    .io_ready
                    .1
                    .recv()
                    .expect("the scheduler holds a sender");
                self.io_done(id);
                continue;
            };
            let Some(task) = self.tasks.get_mut(&id) else {
                continue; // killed while queued
            };
            let send = task.send.take().unwrap_or(Msg::Reply(Reply::Nothing));
            let fiber = task.fiber.clone();
            let out = if fiber.is_started() {
                fiber.resume(send)
            } else {
                fiber.start(send)
            }
            .expect("a queued task is suspended or new");
            match out {
                None => {
                    self.tasks.remove(&id); // finished
                }
                Some(Msg::Call(call)) => self.handle(id, call),
                Some(Msg::Reply(_)) => unreachable!("tasks suspend with calls"),
            }
            // The article's non-blocking poll: with sockets waited on, let
            // the runtime run once (its readiness reports and the waiting
            // coroutines), then take the reports that arrived.
            if !self.waiting_io.is_empty() {
                let _ = async_std_api::suspend();
            }
            while let Ok(woken) = self.io_ready.1.try_recv() {
                self.io_done(woken);
            }
        }
    }

    fn reply(&mut self, id: TaskId, r: Reply) {
        if let Some(t) = self.tasks.get_mut(&id) {
            t.send = Some(Msg::Reply(r));
            self.ready.push_back(id);
        }
    }

    fn handle(&mut self, id: TaskId, call: SysCall) {
        match call {
            SysCall::GetTaskId => self.reply(id, Reply::TaskId(id)),
            SysCall::NewTask(body) => {
                let new = self.new_task(body);
                self.reply(id, Reply::TaskId(new));
            }
            SysCall::KillTask(victim) => {
                // Dropping a suspended fiber unwinds its stack.
                let killed = self.tasks.remove(&victim).is_some();
                self.ready.retain(|t| *t != victim);
                if let Some(waiter) = self.waiting_io.remove(&victim) {
                    waiter.cancel(); // its socket wait ends with it
                }
                self.reply(id, Reply::Killed(killed));
            }
            SysCall::WaitForRead(fd) => self.wait_io(id, fd, false),
            SysCall::WaitForWrite(fd) => self.wait_io(id, fd, true),
            SysCall::Yield => self.reply(id, Reply::Nothing),
        }
    }
}

/// The article's echo server, as a task: accepts and starts a task per
/// client.
fn server(listener: TcpListener) {
    println!("server task {} listening", get_task_id());
    loop {
        wait_for_read(&listener).expect("dup the listener");
        match listener.accept() {
            Ok((conn, _)) => {
                new_task(move || handle_client(conn));
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => panic!("accept: {e}"),
        }
    }
}

fn handle_client(mut conn: TcpStream) {
    conn.set_nonblocking(true).expect("non-blocking");
    let mut buf = [0u8; 1024];
    let n = loop {
        wait_for_read(&conn).expect("dup the socket");
        match conn.read(&mut buf) {
            Ok(n) => break n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => panic!("read: {e}"),
        }
    };
    wait_for_write(&conn).expect("dup the socket");
    conn.write_all(&buf[..n]).expect("write");
}

fn client(port: u16, text: String) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_nonblocking(true).expect("non-blocking");
    wait_for_write(&s).expect("dup the socket");
    s.write_all(text.as_bytes()).expect("write");
    let mut buf = [0u8; 1024];
    loop {
        wait_for_read(&s).expect("dup the socket");
        match s.read(&mut buf) {
            Ok(n) => return String::from_utf8_lossy(&buf[..n]).into_owned(),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => panic!("read: {e}"),
        }
    }
}

fn main() {
    async_std_api::run(|| {
        // The article's first demonstration: two tasks taking turns.
        let mut sched = Scheduler::new();
        for (name, rounds) in [("A", 3), ("B", 2)] {
            sched.new_task(Box::new(move || {
                let id = get_task_id();
                for i in 1..=rounds {
                    println!("task {name} (id {id}) iteration {i}");
                    yield_now();
                }
            }));
        }
        sched.run();

        // The echo server and three clients; the last client kills the
        // server when everyone has been answered.
        let mut sched = Scheduler::new();
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("non-blocking");
        let port = listener.local_addr().expect("addr").port();
        let server_id = sched.new_task(Box::new(move || server(listener)));
        sched.new_task(Box::new(move || {
            let mut answered = Vec::new();
            let mut clients = Vec::new();
            for i in 0..3 {
                let (tx, rx) = unbounded::<String>();
                clients.push(rx);
                new_task(move || {
                    let reply = client(port, format!("hello {i}"));
                    let _ = tx.send(reply);
                });
            }
            for rx in clients {
                // Poll the clients' results cooperatively.
                let reply = loop {
                    match rx.try_recv() {
                        Ok(r) => break r,
                        Err(_) => yield_now(),
                    }
                };
                println!("client got {reply:?}");
                answered.push(reply);
            }
            assert_eq!(answered, ["hello 0", "hello 1", "hello 2"]);
            assert!(kill_task(server_id), "the server task was alive");
            println!("server task {server_id} killed; all tasks done");
        }));
        sched.run();
        assert!(sched.waiting_io.is_empty(), "no socket wait left behind");
    })
    .expect("runtime");
}
