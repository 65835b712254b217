//! The engine's [`Fork`] on native threads: the two sides of a join run at once while a thread
//! is free, so `--threads N` means at most N threads busy, however the joins nest.

use std::sync::atomic::{AtomicUsize, Ordering};

use jarvis_engine::fork::Fork;

/// At most `n` threads at once (the caller's included).
pub struct Threads {
    spare: AtomicUsize,
}

impl Threads {
    pub fn new(n: usize) -> Threads {
        Threads {
            spare: AtomicUsize::new(n.saturating_sub(1)),
        }
    }

    /// Takes a spare thread, if there is one.
    fn take(&self) -> bool {
        self.spare
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok()
    }
}

impl Fork for Threads {
    fn join<A: Send, B: Send>(
        &self,
        a: impl FnOnce() -> A + Send,
        b: impl FnOnce() -> B + Send,
    ) -> (A, B) {
        if !self.take() {
            return (a(), b());
        }
        let out = std::thread::scope(|s| {
            let other = s.spawn(b);
            let first = a();
            other.join().map(|second| (first, second))
        });
        self.spare.fetch_add(1, Ordering::AcqRel);
        match out {
            Ok(both) => both,
            // A panic on the other side is the same bug as one on this side: pass it on.
            Err(payload) => std::panic::resume_unwind(payload),
        }
    }
}
