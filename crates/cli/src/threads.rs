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
