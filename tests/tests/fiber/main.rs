//! The Fiber API (D-36, FB1-FB4 in `fiber`): generator-like control flow
//! on its own stack, inside and outside coroutines.

mod fiber_api;
