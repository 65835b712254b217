//! How the process's heap gives memory back. The CLI's one `unsafe` call (the worker has the
//! other, for its allocator): a tunable of the C library's allocator.
//!
//! glibc's malloc serves a block of 128 KiB or more with its own `mmap`, returned to the system
//! when freed; but each time such a block is freed it raises that threshold to the block's size
//! (up to 32 MiB), after which blocks below it come from the heap arenas, where freed space stays
//! resident. An analysis frees and allocates many tables of 1–30 MB in turn (partial import
//! tables, per-sheet working sets), so under the raised threshold the process kept tens of MB it
//! no longer used (and more with threads: each has its own arena). Pinning the threshold keeps
//! large tables on `mmap`: on the 1 GB synthetic trace peak RSS fell 332 → 305 MiB on one thread
//! and 394–401 → 330–333 MiB on two (docs/performance.md). The price is page faults: blocks of
//! 128 KiB–1 MiB that the heap would have reused are mapped afresh each time (OWLv2 on two
//! threads: 7,035 faults against 5,632, a few percent of a 0.1 s run, within this machine's
//! noise per set but seen in every pair). A 1 MiB threshold faults less (6,170) and keeps
//! about 10 MB more on the 1 GB trace; 4 and 32 MiB keep 18 and 75 MB more.

/// Pins glibc's mmap threshold at its initial 128 KiB. Call before any thread starts.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn return_large_blocks_to_the_system() {
    // SAFETY: `mallopt` only sets an allocator tunable (it takes the arena lock itself); it reads
    // no pointer of ours. A failure (return 0) leaves glibc's default, which is only less lean.
    let _ = unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024) };
}

/// Other C libraries and systems keep their allocator's own policy.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn return_large_blocks_to_the_system() {}
