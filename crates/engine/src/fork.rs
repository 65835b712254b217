//! Independent pieces of an analysis, run however the host can: the engine never starts a
//! thread (it serves the browser, where a Web Worker cannot share its tables), it only says which
//! work does not depend on which. The native CLI runs the two sides of a [`Fork::join`] on two
//! threads; [`Serial`] runs them one after the other, with the same result.

/// Runs two closures that share nothing mutable and returns both results.
pub trait Fork: Sync {
    fn join<A: Send, B: Send>(
        &self,
        a: impl FnOnce() -> A + Send,
        b: impl FnOnce() -> B + Send,
    ) -> (A, B);
}

/// One after the other, on the calling thread.
#[derive(Debug, Clone, Copy, Default)]
pub struct Serial;

impl Fork for Serial {
    fn join<A: Send, B: Send>(
        &self,
        a: impl FnOnce() -> A + Send,
        b: impl FnOnce() -> B + Send,
    ) -> (A, B) {
        (a(), b())
    }
}
