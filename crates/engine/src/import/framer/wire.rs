//! The framer's state in `import::codec`'s bytes (for `import::wire`): a range's framer travels with its tables,
//! because the merge continues from it (`Framer::follow`), mid-event or after the events array
//! included.

use super::{Capture, Framer, Mode, State, Target};
use crate::import::codec::{In, Out, WireError};

impl Framer {
    pub(crate) fn write(&self, o: &mut Out) {
        write_state(o, self.state);
        o.u64(self.offset);
        match &self.cap {
            None => o.u8(0),
            Some(c) => {
                o.u8(1);
                o.u8(match c.mode {
                    Mode::Str => 0,
                    Mode::Object => 1,
                    Mode::Array => 2,
                    Mode::Scalar => 3,
                });
                o.u32(c.depth);
                o.bool(c.in_string);
                o.bool(c.escape);
                o.bool(c.keep);
                o.bytes(&c.buf);
                o.u64(c.start_offset);
                match c.target {
                    Target::Key => o.u8(0),
                    Target::TopValue { keep } => {
                        o.u8(1);
                        o.bool(keep);
                    }
                    Target::Event { top } => {
                        o.u8(2);
                        o.bool(top);
                    }
                }
            }
        }
        o.str(&self.current_key);
        o.u64(self.events_seen);
        o.bool(self.saw_events_array);
        o.bool(self.trailing_comma_in_events);
        o.u64(self.trailing_garbage_bytes);
        o.bool(self.resumed);
    }

    pub(crate) fn read(i: &mut In<'_>) -> Result<Framer, WireError> {
        let state = read_state(i)?;
        let offset = i.u64()?;
        let cap = match i.u8()? {
            0 => None,
            _ => Some(Capture {
                mode: match i.u8()? {
                    0 => Mode::Str,
                    1 => Mode::Object,
                    2 => Mode::Array,
                    3 => Mode::Scalar,
                    _ => return Err(i.bad("capture mode")),
                },
                depth: i.u32()?,
                in_string: i.bool()?,
                escape: i.bool()?,
                keep: i.bool()?,
                buf: i.bytes()?.to_vec(),
                start_offset: i.u64()?,
                target: match i.u8()? {
                    0 => Target::Key,
                    1 => Target::TopValue { keep: i.bool()? },
                    2 => Target::Event { top: i.bool()? },
                    _ => return Err(i.bad("capture target")),
                },
            }),
        };
        Ok(Framer {
            state,
            offset,
            cap,
            current_key: i.string()?,
            events_seen: i.u64()?,
            saw_events_array: i.bool()?,
            trailing_comma_in_events: i.bool()?,
            trailing_garbage_bytes: i.u64()?,
            resumed: i.bool()?,
        })
    }
}

fn write_state(o: &mut Out, s: State) {
    let (tag, a, b) = match s {
        State::Start => (0, false, false),
        State::ObjKey { first } => (1, first, false),
        State::ObjColon => (2, false, false),
        State::ObjValue => (3, false, false),
        State::ObjAfterValue => (4, false, false),
        State::ArrElem { first, top } => (5, first, top),
        State::ArrAfterElem { top } => (6, top, false),
        State::Capturing => (7, false, false),
        State::Done => (8, false, false),
    };
    o.u8(tag);
    o.bool(a);
    o.bool(b);
}

fn read_state(i: &mut In<'_>) -> Result<State, WireError> {
    let (tag, a, b) = (i.u8()?, i.bool()?, i.bool()?);
    Ok(match tag {
        0 => State::Start,
        1 => State::ObjKey { first: a },
        2 => State::ObjColon,
        3 => State::ObjValue,
        4 => State::ObjAfterValue,
        5 => State::ArrElem { first: a, top: b },
        6 => State::ArrAfterElem { top: a },
        7 => State::Capturing,
        8 => State::Done,
        _ => return Err(i.bad("framer state")),
    })
}
