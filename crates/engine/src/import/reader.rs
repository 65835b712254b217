//! The JSON side of an import: frames decompressed text into events and builds the model
//! tables, and decides at the end what the document's shape means (errors, truncation and repair
//! diagnostics). The serial importer runs one over the whole text; a parallel import runs one
//! per range and merges them (`merge`).

use super::framer::{FrameEnd, FrameError, Framer};
use super::kineto::TraceBuilder;
use crate::diagnostics::DiagnosticKind as K;
use crate::error::ImportError;
use crate::model::Trace;

/// Why reading stopped before the end of the input.
pub(crate) enum Stop {
    Frame(FrameError),
    Gzip(u64, String),
    /// The event limit was reached.
    Full,
}

pub(crate) struct Reader {
    pub framer: Framer,
    pub builder: TraceBuilder,
    /// A data-losing stop happened: the rest of the input is ignored.
    pub stopped: bool,
}

impl Reader {
    /// A reader of a whole document, keeping at most `max_events` events.
    pub fn new(max_events: u64) -> Reader {
        Reader::with(Framer::new(), TraceBuilder::default(), max_events)
    }

    pub fn with(framer: Framer, mut builder: TraceBuilder, max_events: u64) -> Reader {
        builder.max_events = Some(max_events);
        Reader {
            framer,
            builder,
            stopped: false,
        }
    }

    /// Frames and reads the next slice of JSON text.
    pub fn feed(&mut self, data: &[u8]) -> Result<(), Stop> {
        // Once the event limit is reached, the input stops (a gzip bomb is not expanded past it).
        if self.builder.full_at.is_some() {
            return Err(Stop::Full);
        }
        self.framer
            .feed(data, &mut self.builder)
            .map_err(Stop::Frame)?;
        if self.builder.full_at.is_some() {
            return Err(Stop::Full);
        }
        Ok(())
    }

    /// A fatal problem in the middle of the input: an error if nothing was read yet, otherwise
    /// a data-loss diagnostic and the rest of the input is ignored.
    pub fn stop(&mut self, stop: Stop) -> Result<(), ImportError> {
        let events = self.framer.events_seen();
        self.stopped = true;
        let (err, text) = match stop {
            Stop::Full => {
                let (index, offset) = self.builder.full_at.unwrap_or_default();
                let kept = self.builder.kept_events;
                self.builder.trace.diagnostics.add(
                    K::TooManyEvents,
                    1,
                    Some(format!(
                        "{kept} events kept; reading stopped at event {index} (byte {offset} of the JSON)"
                    )),
                );
                return Ok(());
            }
            Stop::Frame(FrameError { offset, message }) => (
                ImportError::InvalidJson { offset, message: message.clone() },
                format!("invalid JSON at byte {offset}: {message}; the rest of the file was not read"),
            ),
            Stop::Gzip(offset, message) => (
                ImportError::CorruptGzip { offset, message: message.clone() },
                format!("corrupt gzip data at compressed byte {offset}: {message}; the rest of the file was not read"),
            ),
        };
        if events == 0 {
            return Err(err);
        }
        self.builder
            .trace
            .diagnostics
            .add(K::TruncatedTrace, 1, Some(text));
        Ok(())
    }

    /// Ends the input and returns the imported trace (`gzip_incomplete`: the gzip stream had
    /// no trailer).
    pub fn finish(mut self, gzip_incomplete: bool) -> Result<Trace, ImportError> {
        let end = self.framer.finish();
        let events = self.framer.events_seen();
        let json_bytes = self.framer.offset();
        note_folded_lanes(&mut self.builder.trace, crate::model::MAX_LANES as usize);
        let diags = &mut self.builder.trace.diagnostics;
        if !self.stopped {
            match end {
                FrameEnd::Complete => {
                    if gzip_incomplete {
                        diags.add(
                            K::TruncatedTrace,
                            1,
                            Some("the gzip stream ends without its trailer; the JSON inside is complete".into()),
                        );
                    }
                }
                FrameEnd::Empty => return Err(ImportError::Empty),
                FrameEnd::TruncatedInEvents { partial_bytes } => {
                    if events == 0 {
                        return Err(ImportError::TruncatedBeforeEvents { offset: json_bytes });
                    }
                    diags.add(
                        K::TruncatedTrace,
                        1,
                        Some(format!(
                            "the file ends at byte {json_bytes} inside the events array after {events} complete events; {partial_bytes} bytes of a partial event were dropped{}",
                            if gzip_incomplete { " (the gzip stream is cut too)" } else { "" }
                        )),
                    );
                }
                FrameEnd::TruncatedOutsideEvents => {
                    if !self.framer.saw_events_array() {
                        return Err(ImportError::TruncatedBeforeEvents { offset: json_bytes });
                    }
                    diags.add(
                        K::TruncatedTrace,
                        1,
                        Some(format!("the file ends at byte {json_bytes} after the events array, before the document closes; no events were lost")),
                    );
                }
            }
        }
        if !self.framer.saw_events_array() {
            return Err(ImportError::NoEventsArray);
        }
        if events == 0 {
            return Err(ImportError::NoUsableEvents { total: 0 });
        }
        if self.framer.trailing_comma_in_events {
            diags.add(
                K::RepairedJson,
                1,
                Some("trailing comma before the end of traceEvents".into()),
            );
        }
        if self.framer.trailing_garbage_bytes > 0 {
            diags.add(
                K::TrailingData,
                self.framer.trailing_garbage_bytes,
                Some(format!(
                    "{} non-whitespace bytes after the document",
                    self.framer.trailing_garbage_bytes
                )),
            );
        }
        let mut trace = self.builder.trace;
        trace.meta.total_events = events;
        trace.meta.json_bytes = json_bytes;
        Ok(trace)
    }
}

/// Says so when the trace has more lanes than an event can name (`Event::set_lane` folds the
/// later ones into the last): checked once on the whole lane table, so a parallel import, whose
/// merged table is the same, says the same.
fn note_folded_lanes(trace: &mut crate::model::Trace, max: usize) {
    if trace.lanes.len() > max {
        let folded = trace.lanes.len() - max;
        trace.diagnostics.add(
            K::TooManyLanes,
            folded as u64,
            Some(format!(
                "{} lanes; the last {folded} share lane {}",
                trace.lanes.len(),
                max - 1
            )),
        );
    }
}

#[cfg(test)]
mod lane_tests {
    use super::*;
    use crate::model::{Lane, RawId, Trace};

    #[test]
    fn lanes_past_the_limit_are_reported_once_with_their_number() {
        let mut t = Trace::default();
        for i in 0..5 {
            t.lanes.push(Lane {
                pid: RawId::Int(0),
                tid: RawId::Int(i),
            });
        }
        note_folded_lanes(&mut t, 5);
        assert_eq!(t.diagnostics.count(K::TooManyLanes), 0);
        note_folded_lanes(&mut t, 3);
        assert_eq!(t.diagnostics.count(K::TooManyLanes), 2);
    }
}
