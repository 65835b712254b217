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
//! and 394–401 → 330–333 MiB on two (docs/performance.md).
//!
//! The price is time: blocks of 128 KiB–1 MiB that the heap would have reused are mapped afresh
//! each time (page faults), and with threads every unmapping also flushes the other cores' TLBs.
//! On OWLv2 (56 MB) the analysis's two forked sides ran up to twice as long side by side with
//! the threshold pinned. So it is pinned only for inputs of [`PIN_FROM_BYTES`] or more, where
//! memory is what runs out first (and where the 0.3× memory target applies); a smaller trace
//! peaks at tens of MB either way.

use std::path::Path;

use jarvis_engine::import::split::GZIP_RATIO;

/// JSON this large or larger (all inputs together) has the threshold pinned.
pub const PIN_FROM_BYTES: u64 = 100_000_000;

/// The JSON bytes the files at `paths` hold, estimated from their sizes: a `.gz` file counts
/// [`GZIP_RATIO`] times its size, a folder the trace files in it (not below). Unreadable paths count nothing:
/// the import reports them.
pub fn json_bytes(paths: &[&Path]) -> u64 {
    let file = |p: &Path, size: u64| {
        let name = p.to_string_lossy();
        if name.ends_with(".gz") {
            size.saturating_mul(GZIP_RATIO)
        } else if name.ends_with(".json") {
            size
        } else {
            0
        }
    };
    let mut total = 0u64;
    for p in paths {
        let Ok(meta) = std::fs::metadata(p) else {
            continue;
        };
        if meta.is_dir() {
            let Ok(entries) = std::fs::read_dir(p) else {
                continue;
            };
            for e in entries.flatten() {
                if let Some(m) = e.metadata().ok().filter(|m| m.is_file()) {
                    total = total.saturating_add(file(&e.path(), m.len()));
                }
            }
        } else {
            // A named file is read whatever its name says.
            let size = file(p, meta.len()).max(meta.len());
            total = total.saturating_add(size);
        }
    }
    total
}

/// Pins glibc's mmap threshold at its initial 128 KiB when the inputs hold `json_bytes` of
/// [`PIN_FROM_BYTES`] or more. Call before any thread starts.
pub fn bound_heap_for(json_bytes: u64) {
    if json_bytes >= PIN_FROM_BYTES {
        return_large_blocks_to_the_system();
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn return_large_blocks_to_the_system() {
    // SAFETY: `mallopt` only sets an allocator tunable (it takes the arena lock itself); it reads
    // no pointer of ours. A failure (return 0) leaves glibc's default, which is only less lean.
    let _ = unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024) };
}

/// Other C libraries and systems keep their allocator's own policy.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn return_large_blocks_to_the_system() {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_weighed_as_json() {
        let dir = std::env::temp_dir().join(format!("jarvis-memory-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, len: usize| {
            let p = dir.join(name);
            std::fs::write(&p, vec![b' '; len]).unwrap();
            p
        };
        let plain = write("a.json", 1000);
        let gz = write("b.json.gz", 100);
        let other = write("notes.txt", 5000);
        assert_eq!(json_bytes(&[&plain]), 1000);
        assert_eq!(json_bytes(&[&gz]), 1500);
        // A file named on the command line counts whatever its name; in a folder only traces.
        assert_eq!(json_bytes(&[&other]), 5000);
        assert_eq!(json_bytes(&[&dir]), 2500);
        assert_eq!(json_bytes(&[&plain, &gz]), 2500);
        assert_eq!(json_bytes(&[&dir.join("missing.json")]), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
