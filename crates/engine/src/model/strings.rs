//! String interning: every name, category and argument text is stored once and referred to by a
//! [`StrId`]. Traces repeat the same few thousand kernel and op names hundreds of thousands of
//! times, so this is most of the memory saving over a DOM.

use rustc_hash::FxHashMap;

/// Index of an interned string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct StrId(pub u32);

/// Owns the interned strings.
#[derive(Debug, Default)]
pub struct Interner {
    index: FxHashMap<Box<str>, StrId>,
    strings: Vec<Box<str>>,
}

impl Interner {
    pub fn intern(&mut self, s: &str) -> StrId {
        if let Some(&id) = self.index.get(s) {
            return id;
        }
        let id = StrId(self.strings.len() as u32);
        let boxed: Box<str> = s.into();
        self.strings.push(boxed.clone());
        self.index.insert(boxed, id);
        id
    }

    /// Looks a string up without interning it.
    pub fn find(&self, s: &str) -> Option<StrId> {
        self.index.get(s).copied()
    }

    pub fn get(&self, id: StrId) -> &str {
        self.strings.get(id.0 as usize).map_or("", |s| s)
    }

    /// Every string, in id order.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.strings.iter().map(|s| &**s)
    }

    pub fn len(&self) -> usize {
        self.strings.len()
    }

    pub fn is_empty(&self) -> bool {
        self.strings.is_empty()
    }

    /// Approximate heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.strings.iter().map(|s| 2 * s.len() + 48).sum()
    }
}
