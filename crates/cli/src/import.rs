//! Reading a trace file into the engine: serially, or on several threads (the engine stays
//! thread-free; the threads live here). A plain JSON file is cut where a plan from small
//! windows of it says (`split::plan_cuts`): each thread reads its next range straight from the
//! file into a buffer it keeps and parses it into partial tables (`merge::read_text`), and this
//! thread merges them in order while the others still read. A gzip file (or a plain one without
//! a layout to plan from) is inflated and cut by one thread (`split::Splitter`) while the others
//! parse what it has cut.

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, sync_channel};
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{anyhow, Context, Result};
use jarvis_engine::import::merge::{read_range, read_text, Merger};
use jarvis_engine::import::split::{plan_cuts, tail_size, Plan, SplitEnd, Splitter};
use jarvis_engine::import::{sniff, Sniffed, MAX_EVENTS};
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
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let read = |buf: &mut [u8]| {
        (&file)
            .read(buf)
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
    if let Some((trace, ranges)) = planned(&file, threads).with_context(what)? {
        let stats = ImportStats {
            threads,
            ranges: ranges.0,
            reread: ranges.1,
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

/// Reads a plain JSON file in the ranges `split::plan_cuts` plans from windows of it, each
/// thread reading its next range from the file itself; `None` for gzip, or a document without a
/// layout to plan from (the splitter's pipeline reads those). Returns the trace and (ranges,
/// ranges read again).
fn planned(file: &File, threads: usize) -> Result<Option<(Trace, (u32, u32))>> {
    let size = file.metadata()?.len();
    let mut head = vec![0u8; size.min(64) as usize];
    read_exact_at(file, &mut head, 0)?;
    if sniff(&head, head.len() as u64 >= size) != Some(Sniffed::Json) {
        return Ok(None);
    }
    let block = jarvis_engine::import::split::block_size(size, false, threads);
    let tail = tail_size(block, threads);
    let read = &mut |from, to| read_span(file, from, to);
    let Some(plan) = plan_cuts(size, block as u64, tail, read)? else {
        return Ok(None);
    };
    let plan = &plan;
    let Plan { starts, top } = plan;
    // Threads take ranges in order, so partials arrive about in order and few wait to merge.
    let next = AtomicUsize::new(0);
    let (part_tx, part_rx) = channel();
    let merged = std::thread::scope(|s| {
        for _ in 0..threads {
            let part_tx = part_tx.clone();
            let next = &next;
            s.spawn(move || {
                // One buffer per thread, reused: a fresh one per range costs its page faults.
                let mut buf = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((from, to)) = plan.span(i, size) else {
                        break;
                    };
                    let part = read_into(file, from, to, &mut buf)
                        .map(|()| read_text(i as u32, from, *top, &buf, MAX_EVENTS));
                    if part_tx.send(part).is_err() {
                        break;
                    }
                }
            });
        }
        drop(part_tx);
        let mut merger = Merger::new(MAX_EVENTS);
        let mut failed = None;
        for part in part_rx {
            // A range read again (its cut was not an event boundary) is read from the file.
            let mut text = |seq: u32| {
                let Some((from, to)) = plan.span(seq as usize, size) else {
                    return Vec::new();
                };
                read_span(file, from, to).unwrap_or_else(|e| {
                    failed = Some(e);
                    Vec::new()
                })
            };
            merger.push_fetching(part?, &mut text);
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(merger),
        }
    })?;
    let reread = merged.reread;
    let end = SplitEnd {
        ranges: starts.len() as u32,
        input_bytes: size,
        ..SplitEnd::default()
    };
    let trace = merged.finish(end)?;
    Ok(Some((trace, (starts.len() as u32, reread))))
}

/// Bytes `from..to` of `file`.
fn read_span(file: &File, from: u64, to: u64) -> io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    read_into(file, from, to, &mut buf)?;
    Ok(buf)
}

/// Bytes `from..to` of `file` into `buf` (resized to fit).
fn read_into(file: &File, from: u64, to: u64, buf: &mut Vec<u8>) -> io::Result<()> {
    buf.resize((to - from) as usize, 0);
    read_exact_at(file, buf, from)
}

/// Fills `buf` from byte `offset` of `file` without moving a shared cursor, so threads read
/// their own ranges of one handle.
fn read_exact_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
    while !buf.is_empty() {
        #[cfg(unix)]
        let n = std::os::unix::fs::FileExt::read_at(file, buf, offset)?;
        #[cfg(windows)]
        let n = std::os::windows::fs::FileExt::seek_read(file, buf, offset)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the file got shorter while it was read",
            ));
        }
        buf = &mut buf[n..];
        offset += n as u64;
    }
    Ok(())
}
