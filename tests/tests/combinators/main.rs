//! The async combinators (R-CB1, D-7, D-24): all, any, any_of,
//! capture_errors, ignore_errors, over lists and concurrent iterators, on
//! handles, coroutines, timeouts, task groups and their triggers; the
//! RFC's examples as recorded events; `select`, which owns and cancels its
//! branches (D-44).

mod cb_basics;
mod cb_iter;
mod cb_select;
mod cb_until;
