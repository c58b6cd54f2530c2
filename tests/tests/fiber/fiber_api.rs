//! D-36: fibers.

use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;

use async_std_api::fiber::{Fiber, FiberErrorKind};
use async_std_api::sync::Deferred;
use async_std_api::{run, spawn};
use tests::support::yield_until;

#[test]
fn d36_values_go_in_and_out_and_the_return_value_is_kept() {
    let f: Fiber<i32, String> = Fiber::new(|first| {
        let second = Fiber::suspend(first + 1).unwrap();
        let third = Fiber::suspend(second * 10).unwrap();
        format!("got {first}, {second}, {third}")
    });
    assert!(!f.is_started());
    assert_eq!(f.start(1).unwrap(), Some(2));
    assert!(f.is_started() && f.is_suspended() && !f.is_running());
    assert_eq!(f.resume(5).unwrap(), Some(50));
    assert_eq!(f.resume(7).unwrap(), None);
    assert!(f.is_terminated());
    assert_eq!(f.get_return().unwrap(), "got 1, 5, 7");
    let e = f.get_return().unwrap_err();
    assert_eq!(e.kind(), FiberErrorKind::NotReturned);
}

#[test]
fn d36_each_misuse_is_a_fiber_error_naming_it() {
    let f: Fiber<u8, ()> = Fiber::new(|_| {
        Fiber::suspend(0u8).unwrap();
    });
    let e = f.resume(1).unwrap_err();
    assert_eq!(e.kind(), FiberErrorKind::NotSuspended);
    assert_eq!(
        e.to_string(),
        "cannot resume a fiber that is not suspended: it has not been started"
    );
    assert_eq!(
        f.get_return().unwrap_err().to_string(),
        "cannot get the fiber's return value: the fiber has not been started"
    );
    f.start(0).unwrap();
    let e = f.start(0).unwrap_err();
    assert_eq!(e.kind(), FiberErrorKind::AlreadyStarted);
    assert_eq!(
        e.to_string(),
        "cannot start a fiber that has already been started"
    );
    f.resume(0).unwrap();
    assert_eq!(
        f.resume(0).unwrap_err().to_string(),
        "cannot resume a fiber that is not suspended: it has terminated"
    );
    let e = Fiber::suspend(1u8).unwrap_err();
    assert_eq!(e.kind(), FiberErrorKind::OutsideFiber);
    assert_eq!(e.to_string(), "cannot suspend outside of a fiber");

    // The wrong type, and resuming itself from inside.
    let me: Rc<RefCell<Option<Fiber<u8, ()>>>> = Rc::default();
    let m = me.clone();
    let g: Fiber<u8, ()> = Fiber::new(move |_| {
        let e = Fiber::suspend("text").unwrap_err();
        assert_eq!(e.kind(), FiberErrorKind::WrongType);
        let this = m.borrow().clone().unwrap();
        let e = this.resume(1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "cannot resume a fiber that is not suspended: it is running"
        );
        assert!(this.is_running());
    });
    *me.borrow_mut() = Some(g.clone());
    assert_eq!(g.start(0).unwrap(), None);
    me.borrow_mut().take();
}

#[test]
fn d36_a_thrown_error_arrives_at_the_suspension_point() {
    let f: Fiber<u32, Result<u32, String>> = Fiber::new(|_| {
        let mut total = 0u32;
        loop {
            match Fiber::suspend(total) {
                Ok(v) => total += v,
                Err(e) if e.kind() == FiberErrorKind::Thrown => {
                    let why = std::error::Error::source(&e).unwrap().to_string();
                    return Err(format!("stopped at {total}: {why}"));
                }
                Err(e) => panic!("{e}"),
            }
        }
    });
    f.start(0).unwrap();
    f.resume(3).unwrap();
    f.resume(4).unwrap();
    assert_eq!(f.throw("enough").unwrap(), None);
    assert_eq!(f.get_return().unwrap(), Err("stopped at 7: enough".into()));
}

#[test]
fn d36_fibers_nest_and_each_suspension_returns_to_its_resumer() {
    let log = Rc::new(RefCell::new(Vec::new()));
    let l = log.clone();
    let outer: Fiber<u8, ()> = Fiber::new(move |_| {
        let l2 = l.clone();
        let inner: Fiber<u8, ()> = Fiber::new(move |_| {
            l2.borrow_mut().push("inner runs");
            Fiber::suspend(0u8).unwrap();
            l2.borrow_mut().push("inner resumed");
        });
        assert_ne!(Fiber::current(), Some(inner.id()));
        inner.start(0).unwrap(); // returns here, not to the top
        l.borrow_mut().push("outer after inner's suspend");
        assert!(inner.is_suspended());
        Fiber::suspend(0u8).unwrap(); // returns to the top
        inner.resume(0).unwrap();
        l.borrow_mut().push("outer ends");
    });
    outer.start(0).unwrap();
    log.borrow_mut().push("top after outer's suspend");
    outer.resume(0).unwrap();
    assert!(outer.is_terminated());
    assert_eq!(
        *log.borrow(),
        [
            "inner runs",
            "outer after inner's suspend",
            "top after outer's suspend",
            "inner resumed",
            "outer ends"
        ]
    );
    assert_eq!(Fiber::current(), None);
}

#[test]
fn d36_a_panic_ends_the_fiber_and_continues_in_its_resumer() {
    let f: Fiber<(), ()> = Fiber::new(|_| panic!("fiber exploded"));
    let p = catch_unwind(AssertUnwindSafe(|| f.start(()))).unwrap_err();
    assert_eq!(p.downcast_ref::<&str>(), Some(&"fiber exploded"));
    assert!(f.is_terminated());
    assert_eq!(
        f.get_return().unwrap_err().to_string(),
        "cannot get the fiber's return value: the fiber panicked"
    );
}

struct Counted(Rc<Cell<u32>>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.set(self.0.get() + 1);
    }
}

#[test]
fn d36_dropping_a_suspended_fiber_unwinds_its_stack() {
    let dropped = Rc::new(Cell::new(0));
    let d = dropped.clone();
    let f: Fiber<(), ()> = Fiber::new(move |_| {
        let _guard = Counted(d);
        Fiber::suspend(()).unwrap();
        unreachable!("never resumed");
    });
    f.start(()).unwrap();
    assert_eq!(dropped.get(), 0);
    drop(f);
    assert_eq!(
        dropped.get(),
        1,
        "the suspended fiber's locals were dropped"
    );
}

#[test]
fn d36_a_fiber_in_a_coroutine_suspends_the_coroutine_on_blocking_calls() {
    run(|| {
        let log = Rc::new(RefCell::new(Vec::new()));
        let (l1, l2) = (log.clone(), log.clone());
        let (deferred, resolver) = Deferred::<u8>::new();
        let a = spawn(move || {
            let f: Fiber<u8, u8> = Fiber::new(move |x| {
                l1.borrow_mut().push("fiber waits");
                // A blocking call: suspends coroutine A, fiber stack and all.
                let y = deferred.wait().unwrap();
                l1.borrow_mut().push("fiber resumed by the scheduler");
                x + y
            });
            assert_eq!(f.start(40).unwrap(), None);
            f.get_return().unwrap()
        });
        let ac = a.coroutine();
        let b = spawn(move || {
            yield_until(|| ac.is_suspended());
            // B is not inside A's fiber: suspending here is a misuse.
            let e = Fiber::suspend(0u8).unwrap_err();
            l2.borrow_mut().push("b runs while a's fiber waits");
            resolver.resolve(2).unwrap();
            e.kind()
        });
        assert_eq!(b.join().unwrap(), FiberErrorKind::OutsideFiber);
        assert_eq!(a.join().unwrap(), 42);
        assert_eq!(
            *log.borrow(),
            [
                "fiber waits",
                "b runs while a's fiber waits",
                "fiber resumed by the scheduler"
            ]
        );
    })
    .unwrap();
}
