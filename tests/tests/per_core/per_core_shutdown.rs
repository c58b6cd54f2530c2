//! One shutdown for every loop: a `Loops::shutdown` from any thread, or a
//! signal with `shutdown_on_signals`, cancels each loop's coroutines and
//! runs their cleanup before the run returns.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use async_std_api::per_core::Loops;
use async_std_api::{delay, on_finally, spawn, Builder, CancelCause};

/// Records its name when dropped (a coroutine's stack unwound or ended).
struct Cleanup(Arc<Mutex<Vec<String>>>, String);

impl Drop for Cleanup {
    fn drop(&mut self) {
        self.0.lock().unwrap().push(self.1.clone());
    }
}

fn sorted(log: &Mutex<Vec<String>>) -> Vec<String> {
    let mut v = log.lock().unwrap().clone();
    v.sort();
    v
}

#[test]
fn d39_a_shutdown_from_a_thread_ends_every_loop_and_runs_cleanup_in_each() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let (waiting_tx, waiting) = mpsc::channel::<()>();
    let waiting_tx = Mutex::new(waiting_tx);
    let (loops_tx, loops_rx) = mpsc::channel::<Loops>();
    let loops_tx = Mutex::new(loops_tx);
    // The controller: once a worker of each loop waits, it shuts them down.
    let controller = std::thread::spawn(move || {
        let loops = loops_rx.recv().unwrap();
        waiting.recv().unwrap();
        waiting.recv().unwrap();
        loops.shutdown("stop");
    });
    let l = log.clone();
    let ends = Builder::new()
        .threads(2)
        .run_per_core(move |id| {
            if id.index() == 0 {
                loops_tx
                    .lock()
                    .unwrap()
                    .send(Loops::current().unwrap())
                    .unwrap();
            }
            let (l1, l2) = (l.clone(), l.clone());
            let ready = waiting_tx.lock().unwrap().clone();
            let worker = spawn(move || {
                let _guard = Cleanup(l1.clone(), format!("{id} worker dropped its locals"));
                on_finally(move || l2.lock().unwrap().push(format!("{id} worker finally")));
                ready.send(()).unwrap();
                let c = delay(60_000).unwrap_err();
                let end = format!("{id} worker: {:?} {}", c.cause(), c.reason().unwrap());
                l1.lock().unwrap().push(end);
            });
            let main_end = delay(60_000).unwrap_err();
            assert!(worker.join().unwrap_err().is_cancelled());
            (main_end.cause(), main_end.reason().unwrap().to_owned())
        })
        .unwrap();
    controller.join().unwrap();
    let stop = (CancelCause::Shutdown, "stop".to_owned());
    assert_eq!(ends, [stop.clone(), stop]);
    assert_eq!(
        sorted(&log),
        [
            "loop 0 worker dropped its locals",
            "loop 0 worker finally",
            "loop 0 worker: Shutdown stop",
            "loop 1 worker dropped its locals",
            "loop 1 worker finally",
            "loop 1 worker: Shutdown stop",
        ]
    );
}

#[test]
fn d39_one_sigterm_shuts_every_loop_down_with_shutdown_on_signals() {
    let ends = Builder::new()
        .threads(2)
        .shutdown_on_signals(true)
        .run_per_core(|id| {
            if id.index() == 1 {
                // The watch is on loop 0; the signal is raised on this
                // thread: it is process-wide.
                // SAFETY: `raise` asks the kernel to deliver SIGTERM to this
                // thread; the runtime's handler is installed before any
                // loop runs its closure.
                let rc = unsafe { libc::raise(libc::SIGTERM) };
                assert_eq!(rc, 0);
            }
            delay(60_000).unwrap_err().reason().unwrap().to_owned()
        })
        .unwrap();
    assert_eq!(ends, ["signal 15", "signal 15"]);
}
