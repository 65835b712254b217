//! The byte encoding `import::wire` writes: little-endian integers, lengths as `u64`, strings as
//! UTF-8 with their length, and a decoder that checks every length against what is left. A leaf
//! (the framer writes its own state with it, and `wire` writes the framer).

use crate::model::{RawId, StrId};

/// An absent id.
pub(crate) const NONE: u32 = u32::MAX;

/// A message that does not decode (a worker sent something else, or it was cut).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError {
    pub offset: usize,
    pub what: &'static str,
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "a partial read from an import worker is damaged at byte {} ({})",
            self.offset, self.what
        )
    }
}

impl std::error::Error for WireError {}

/// The encoder's buffer.
pub(crate) struct Out(pub Vec<u8>);

impl Out {
    pub fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub fn bool(&mut self, v: bool) {
        self.0.push(u8::from(v));
    }
    pub fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub fn len(&mut self, n: usize) {
        self.u64(n as u64);
    }
    pub fn opt_u64(&mut self, v: Option<u64>) {
        match v {
            None => self.u8(0),
            Some(v) => {
                self.u8(1);
                self.u64(v);
            }
        }
    }
    pub fn bytes(&mut self, b: &[u8]) {
        self.len(b.len());
        self.0.extend_from_slice(b);
    }
    pub fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }
    pub fn opt_str(&mut self, s: Option<StrId>) {
        self.u32(s.map_or(NONE, |s| s.0));
    }
    pub fn raw_id(&mut self, id: &RawId) {
        match id {
            RawId::Int(v) => {
                self.u8(0);
                self.i64(*v);
            }
            RawId::Text(s) => {
                self.u8(1);
                self.u32(s.0);
            }
        }
    }
}

/// The decoder's cursor.
pub(crate) struct In<'a> {
    pub b: &'a [u8],
    pub at: usize,
}

impl<'a> In<'a> {
    pub fn bad(&self, what: &'static str) -> WireError {
        WireError {
            offset: self.at,
            what,
        }
    }
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|e| *e <= self.b.len())
            .ok_or_else(|| self.bad("cut short"))?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        let mut a = [0; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
    pub fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take(1)?[0])
    }
    pub fn bool(&mut self) -> Result<bool, WireError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(self.bad("flag")),
        }
    }
    pub fn u32(&mut self) -> Result<u32, WireError> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    pub fn u64(&mut self) -> Result<u64, WireError> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    pub fn i64(&mut self) -> Result<i64, WireError> {
        Ok(i64::from_le_bytes(self.array()?))
    }
    /// A count of items of at least `min_size` bytes each: larger than what is left cannot be
    /// true (and must not reserve memory).
    pub fn len(&mut self, min_size: usize) -> Result<usize, WireError> {
        let n = self.u64()?;
        let left = (self.b.len() - self.at) as u64;
        if n.saturating_mul(min_size.max(1) as u64) > left {
            return Err(self.bad("length"));
        }
        Ok(n as usize)
    }
    pub fn opt_u64(&mut self) -> Result<Option<u64>, WireError> {
        Ok(match self.u8()? {
            0 => None,
            _ => Some(self.u64()?),
        })
    }
    pub fn bytes(&mut self) -> Result<&'a [u8], WireError> {
        let n = self.len(1)?;
        self.take(n)
    }
    pub fn str(&mut self) -> Result<&'a str, WireError> {
        let b = self.bytes()?;
        std::str::from_utf8(b).map_err(|_| self.bad("text"))
    }
    pub fn string(&mut self) -> Result<String, WireError> {
        Ok(self.str()?.to_owned())
    }
    pub fn opt_str(&mut self) -> Result<Option<StrId>, WireError> {
        let v = self.u32()?;
        Ok((v != NONE).then_some(StrId(v)))
    }
    pub fn raw_id(&mut self) -> Result<RawId, WireError> {
        Ok(match self.u8()? {
            0 => RawId::Int(self.i64()?),
            1 => RawId::Text(StrId(self.u32()?)),
            _ => return Err(self.bad("id")),
        })
    }
}
