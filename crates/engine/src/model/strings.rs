//! String interning: every name, category and argument text is stored once and referred to by a
//! [`StrId`]. Traces repeat the same few thousand kernel and op names hundreds of thousands of
//! times, so this is most of the memory saving over a DOM.

use std::hash::BuildHasher;

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

/// Index of an interned string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct StrId(pub u32);

/// Owns the interned strings. The table holds ids only: each string is stored once, in
/// `strings`, and the table's equality reads it there.
#[derive(Debug, Default)]
pub struct Interner {
    table: HashTable<StrId>,
    strings: Vec<Box<str>>,
}

fn hash(s: &str) -> u64 {
    FxBuildHasher.hash_one(s)
}

/// Byte equality eight bytes at a time. In WebAssembly there is no libc: `==` on slices calls
/// compiler-builtins' `memcmp`, which compares a byte at a time, and every repeated name the
/// importer interns is compared in full with the one stored (about 7% of the worker's parse of
/// OWLv2; docs/performance.md).
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let (words_a, tail_a) = a.as_chunks::<8>();
    let (words_b, tail_b) = b.as_chunks::<8>();
    words_a
        .iter()
        .zip(words_b)
        .all(|(x, y)| u64::from_ne_bytes(*x) == u64::from_ne_bytes(*y))
        && tail_a.iter().zip(tail_b).all(|(x, y)| x == y)
}

impl Interner {
    pub fn intern(&mut self, s: &str) -> StrId {
        let h = hash(s);
        let strings = &self.strings;
        let eq = |id: &StrId| same_bytes(strings[id.0 as usize].as_bytes(), s.as_bytes());
        if let Some(&id) = self.table.find(h, eq) {
            return id;
        }
        let id = StrId(self.strings.len() as u32);
        self.strings.push(s.into());
        let strings = &self.strings;
        self.table
            .insert_unique(h, id, |id| hash(&strings[id.0 as usize]));
        id
    }

    /// Looks a string up without interning it.
    pub fn find(&self, s: &str) -> Option<StrId> {
        let eq = |id: &StrId| same_bytes(self.strings[id.0 as usize].as_bytes(), s.as_bytes());
        self.table.find(hash(s), eq).copied()
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
        self.strings.iter().map(|s| s.len() + 24).sum::<usize>()
            + self.table.capacity() * (std::mem::size_of::<StrId>() + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_bytes_is_slice_equality() {
        let texts: [&[u8]; 8] = [
            b"",
            b"a",
            b"abcdefg",
            b"abcdefgh",
            b"abcdefgh1",
            b"abcdefgh2",
            b"ampere_sgemm_128x64_tn",
            b"ampere_sgemm_128x64_nn",
        ];
        for a in texts {
            for b in texts {
                assert_eq!(same_bytes(a, b), a == b, "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn each_string_is_stored_once_and_found_again() {
        let mut i = Interner::default();
        let names = ["aten::mm", "aten::add", "", "aten::mm ", "aten::m"];
        let ids: Vec<StrId> = names.iter().map(|n| i.intern(n)).collect();
        assert_eq!(ids, (0..5).map(StrId).collect::<Vec<_>>());
        // 10,000 more, then the first ones again: the table grows and still finds them.
        for k in 0..10_000 {
            i.intern(&format!("kernel_{k}"));
        }
        for (n, id) in names.iter().zip(&ids) {
            assert_eq!(i.intern(n), *id);
            assert_eq!(i.find(n), Some(*id));
            assert_eq!(i.get(*id), *n);
        }
        assert_eq!(i.find("kernel_10000"), None);
        assert_eq!(i.len(), 10_005);
    }
}
