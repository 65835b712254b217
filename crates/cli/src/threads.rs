//! The engine's [`Fork`] on native threads: a work-stealing pool of `--threads N` threads
//! (rayon), so every join the analysis nests can run beside the others whenever a thread is
//! free, not only when one was free at the moment the join began. The engine stays thread-free:
//! it only says which work is independent of which.

use jarvis_engine::fork::Fork;

/// At most `n` threads at once: a join from outside the pool waits for the pool, and the joins
/// nested in it run on the pool's threads.
pub struct Threads {
    /// `None` for one thread: the caller's, as in the serial build (a pool thread would
    /// allocate from its own heap arena, beside the one the import filled).
    pool: Option<rayon::ThreadPool>,
}

impl Threads {
    pub fn new(n: usize) -> Threads {
        let pool = (n > 1)
            .then(|| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(n)
                    .thread_name(|i| format!("jarvis-analysis-{i}"))
                    .build()
                    // A system that cannot start the threads gets the serial analysis, the same
                    // result, rather than an abort.
                    .ok()
            })
            .flatten();
        Threads { pool }
    }
}

impl Threads {
    /// Runs `work` on one of the pool's threads (on the caller's with one thread), so the joins
    /// it makes start from inside the pool: a join from outside it hands both sides to the pool
    /// and waits for a sleeping thread to wake, and an analysis makes several in turn.
    pub fn run<R: Send>(&self, work: impl FnOnce() -> R + Send) -> R {
        match &self.pool {
            Some(pool) => pool.install(work),
            None => work(),
        }
    }
}

impl Fork for Threads {
    fn join<A: Send, B: Send>(
        &self,
        a: impl FnOnce() -> A + Send,
        b: impl FnOnce() -> B + Send,
    ) -> (A, B) {
        match &self.pool {
            // A panic on either side is passed on.
            Some(pool) => pool.join(a, b),
            None => (a(), b()),
        }
    }
}
