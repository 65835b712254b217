//! Reading a trace file into the engine: serially, or on several threads (the engine stays
//! thread-free; the threads live here). One thread reads the file (and inflates gzip) and cuts
//! the text into ranges (`import::split`); worker threads read ranges into partial tables
//! (`import::merge::read_range`); one thread merges them in order while the others still read.

use std::fs;
use std::io::Read;
use std::path::Path;
use std::sync::mpsc::{channel, sync_channel};
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{anyhow, Context, Result};
use jarvis_engine::import::merge::{read_range, Merger};
use jarvis_engine::import::split::Splitter;
use jarvis_engine::import::MAX_EVENTS;
use jarvis_engine::model::Trace;
use jarvis_engine::Importer;

/// Text per range (`split::block_size`).
fn block_size(path: &Path, threads: usize) -> usize {
    let bytes = fs::metadata(path).map_or(0, |m| m.len());
    let gzip = path.extension().is_some_and(|e| e == "gz");
    jarvis_engine::import::split::block_size(bytes, gzip, threads)
}

/// How an import went, for `--timings`.
pub struct ImportStats {
    pub threads: usize,
    pub ranges: u32,
    /// Ranges read again in order (a cut that was not an event boundary).
    pub reread: u32,
    pub seconds: f64,
}

/// The number of threads `--threads` means when not given: every core.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Imports `path` on `threads` threads (1: the serial importer).
pub fn import(path: &Path, threads: usize) -> Result<(Trace, ImportStats)> {
    let start = Instant::now();
    let what = || format!("{} is not a usable trace", path.display());
    let mut file =
        fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut read = |buf: &mut [u8]| {
        file.read(buf)
            .with_context(|| format!("cannot read {}", path.display()))
    };
    if threads <= 1 {
        let mut importer = Importer::new();
        let mut buf = vec![0u8; 16 << 20];
        loop {
            let n = read(&mut buf)?;
            if n == 0 {
                break;
            }
            importer.feed(&buf[..n]).with_context(what)?;
        }
        let trace = importer.finish().with_context(what)?;
        let stats = ImportStats {
            threads: 1,
            ranges: 1,
            reread: 0,
            seconds: start.elapsed().as_secs_f64(),
        };
        return Ok((trace, stats));
    }
    // At most this many ranges are cut and not yet merged (one per worker and two waiting):
    // what bounds the text in memory.
    let in_flight = threads + 2;
    let (range_tx, range_rx) = sync_channel(threads);
    let range_rx = Mutex::new(range_rx);
    let (part_tx, part_rx) = channel();
    let (token_tx, token_rx) = sync_channel::<()>(in_flight);
    for _ in 0..in_flight {
        let _ = token_tx.send(());
    }
    let (split, merged) = std::thread::scope(|s| {
        for _ in 0..threads {
            let part_tx = part_tx.clone();
            let range_rx = &range_rx;
            s.spawn(move || loop {
                let next = range_rx.lock().ok().and_then(|rx| rx.recv().ok());
                let Some(range) = next else { break };
                if part_tx.send(read_range(range, MAX_EVENTS)).is_err() {
                    break;
                }
            });
        }
        drop(part_tx);
        let merger = s.spawn(move || {
            let mut merger = Merger::new(MAX_EVENTS);
            for partial in part_rx {
                let before = merger.merged();
                merger.push(partial);
                for _ in before..merger.merged() {
                    let _ = token_tx.send(());
                }
            }
            merger
        });
        let block = block_size(path, threads);
        let mut splitter = Splitter::new(block);
        let mut send = |r| {
            // Wait until fewer than `in_flight` ranges are unmerged.
            let _ = token_rx.recv();
            let _ = range_tx.send(r);
        };
        // Reading in blocks lets the splitter cut each one once.
        let mut buf = vec![0u8; block];
        let split = (|| -> Result<_> {
            loop {
                let n = read(&mut buf)?;
                if n == 0 {
                    break;
                }
                splitter.feed(&buf[..n], &mut send).with_context(what)?;
            }
            splitter.finish(&mut send).with_context(what)
        })();
        drop(range_tx);
        let merged = merger.join().map_err(|_| anyhow!("a merge thread failed"));
        (split, merged)
    });
    let end = split?;
    let merger = merged?;
    let (ranges, reread) = (end.ranges, merger.reread);
    let trace = merger.finish(end).with_context(what)?;
    let stats = ImportStats {
        threads,
        ranges,
        reread,
        seconds: start.elapsed().as_secs_f64(),
    };
    Ok((trace, stats))
}
