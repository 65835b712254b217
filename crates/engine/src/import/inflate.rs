//! Streaming gzip decoding (RFC 1952 framing around a raw DEFLATE stream, inflated with
//! miniz_oxide). Input arrives in chunks of any size; output is handed on in bounded slices, so
//! the whole decompressed document never exists in memory.

use miniz_oxide::inflate::stream::{inflate, InflateState};
use miniz_oxide::{DataFormat, MZError, MZFlush, MZStatus};

/// Gzip's magic bytes.
pub const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const OUT_CHUNK: usize = 1 << 18;

/// Corrupt or unsupported gzip data, at a byte offset of the compressed input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InflateError {
    pub offset: u64,
    pub message: String,
}

#[derive(Debug)]
enum Phase {
    Header(Vec<u8>),
    Body,
    Trailer(usize),
    /// Between gzip members (concatenated gzip files are one document).
    Between,
}

/// Incremental gzip decoder.
pub struct GzipDecoder {
    phase: Phase,
    state: Box<InflateState>,
    out: Vec<u8>,
    consumed: u64,
    members_done: u32,
}

impl Default for GzipDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl GzipDecoder {
    pub fn new() -> GzipDecoder {
        GzipDecoder {
            phase: Phase::Header(Vec::new()),
            state: InflateState::new_boxed(DataFormat::Raw),
            out: vec![0; OUT_CHUNK],
            consumed: 0,
            members_done: 0,
        }
    }

    /// Compressed bytes consumed so far.
    pub fn consumed(&self) -> u64 {
        self.consumed
    }

    /// Whether the input ended cleanly after a complete gzip member.
    pub fn is_complete(&self) -> bool {
        matches!(self.phase, Phase::Between) && self.members_done > 0
    }

    /// Decodes `input`, passing decompressed slices to `emit`. `emit` may stop the decoding by
    /// returning an error, which is passed through.
    pub fn feed<E>(
        &mut self,
        mut input: &[u8],
        emit: &mut impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), DecodeStop<E>> {
        while !input.is_empty() {
            match &mut self.phase {
                Phase::Between => {
                    // Trailing zero padding after the last member is common (tape-style writers).
                    if input.iter().all(|&b| b == 0) {
                        self.consumed += input.len() as u64;
                        return Ok(());
                    }
                    self.phase = Phase::Header(Vec::new());
                }
                Phase::Header(buf) => {
                    let need = header_len(buf, input);
                    match need {
                        HeaderProgress::NeedMore => {
                            buf.extend_from_slice(input);
                            self.consumed += input.len() as u64;
                            return Ok(());
                        }
                        HeaderProgress::Invalid(msg) => {
                            return Err(DecodeStop::Corrupt(InflateError {
                                offset: self.consumed,
                                message: msg.into(),
                            }));
                        }
                        HeaderProgress::Done(from_input) => {
                            input = &input[from_input..];
                            self.consumed += from_input as u64;
                            self.state = InflateState::new_boxed(DataFormat::Raw);
                            self.phase = Phase::Body;
                        }
                    }
                }
                Phase::Body => {
                    let res = inflate(&mut self.state, input, &mut self.out, MZFlush::None);
                    input = &input[res.bytes_consumed..];
                    self.consumed += res.bytes_consumed as u64;
                    if res.bytes_written > 0 {
                        emit(&self.out[..res.bytes_written]).map_err(DecodeStop::Sink)?;
                    }
                    match res.status {
                        Ok(MZStatus::StreamEnd) => self.phase = Phase::Trailer(8),
                        Ok(_) => {}
                        Err(MZError::Buf) => {
                            if res.bytes_consumed == 0 && res.bytes_written == 0 {
                                return Ok(());
                            }
                        }
                        Err(e) => {
                            return Err(DecodeStop::Corrupt(InflateError {
                                offset: self.consumed,
                                message: format!("corrupt gzip data ({e:?})"),
                            }));
                        }
                    }
                }
                Phase::Trailer(left) => {
                    let take = (*left).min(input.len());
                    *left -= take;
                    input = &input[take..];
                    self.consumed += take as u64;
                    if *left == 0 {
                        self.members_done += 1;
                        self.phase = Phase::Between;
                    }
                }
            }
        }
        // Drain output the inflater still holds (large expansions of a small input).
        if matches!(self.phase, Phase::Body) {
            loop {
                let res = inflate(&mut self.state, &[], &mut self.out, MZFlush::None);
                if res.bytes_written == 0 {
                    break;
                }
                emit(&self.out[..res.bytes_written]).map_err(DecodeStop::Sink)?;
                if let Ok(MZStatus::StreamEnd) = res.status {
                    self.phase = Phase::Trailer(8);
                    break;
                }
            }
        }
        Ok(())
    }
}

/// Why decoding stopped early.
#[derive(Debug)]
pub enum DecodeStop<E> {
    Corrupt(InflateError),
    Sink(E),
}

enum HeaderProgress {
    NeedMore,
    Invalid(&'static str),
    /// The header is complete after consuming this many bytes of the new input.
    Done(usize),
}

/// Parses a gzip member header from `buffered ++ input`.
fn header_len(buffered: &[u8], input: &[u8]) -> HeaderProgress {
    let at = |i: usize| -> Option<u8> {
        if i < buffered.len() {
            buffered.get(i).copied()
        } else {
            input.get(i - buffered.len()).copied()
        }
    };
    let total = buffered.len() + input.len();
    if total < 10 {
        // Validate what we have so a non-gzip input fails early.
        if at(0).is_some_and(|b| b != 0x1f) || at(1).is_some_and(|b| b != 0x8b) {
            return HeaderProgress::Invalid("not gzip data (bad magic bytes)");
        }
        return HeaderProgress::NeedMore;
    }
    if at(0) != Some(0x1f) || at(1) != Some(0x8b) {
        return HeaderProgress::Invalid("not gzip data (bad magic bytes)");
    }
    if at(2) != Some(8) {
        return HeaderProgress::Invalid("gzip member does not use DEFLATE compression");
    }
    let flags = at(3).unwrap_or(0);
    let mut pos = 10usize;
    if flags & 0x04 != 0 {
        let (Some(lo), Some(hi)) = (at(pos), at(pos + 1)) else {
            return HeaderProgress::NeedMore;
        };
        pos += 2 + usize::from(u16::from_le_bytes([lo, hi]));
    }
    for bit in [0x08u8, 0x10] {
        if flags & bit != 0 {
            loop {
                match at(pos) {
                    None => return HeaderProgress::NeedMore,
                    Some(0) => {
                        pos += 1;
                        break;
                    }
                    Some(_) => pos += 1,
                }
            }
        }
    }
    if flags & 0x02 != 0 {
        pos += 2;
    }
    if pos > total {
        return HeaderProgress::NeedMore;
    }
    HeaderProgress::Done(pos - buffered.len())
}
