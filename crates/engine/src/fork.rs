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

/// `f` of every item, the halves of the list split again and again across a [`Fork`]: for
/// pieces of similar cost that share nothing (each a few milliseconds: finer pieces cost more
/// to hand over than they save).
pub fn map<T: Sync, R: Send>(
    fork: &impl Fork,
    items: &[T],
    f: &(impl Fn(&T) -> R + Sync),
) -> Vec<R> {
    match items {
        [] => Vec::new(),
        [one] => vec![f(one)],
        _ => {
            let (a, b) = items.split_at(items.len() / 2);
            let (mut left, right) = fork.join(|| map(fork, a, f), || map(fork, b, f));
            left.extend(right);
            left
        }
    }
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
