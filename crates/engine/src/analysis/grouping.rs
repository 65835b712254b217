//! Grouping in two steps, as every TraceLens-style summary needs: rows are first grouped by a
//! cheap key (interned ids), then each group's printable key is rendered once and groups whose
//! rendered keys coincide are merged. Rendering per row instead would allocate millions of
//! strings on large traces.

use std::hash::Hash;

use rustc_hash::FxHashMap;

/// Groups `items` by `render` (the printed key), computing it once per distinct `cheap` key.
/// Groups come in first-appearance order; member indices in ascending (input) order.
pub fn group_by_key<T, C, K>(
    items: &[T],
    cheap: impl Fn(&T) -> C,
    render: impl Fn(&T) -> K,
) -> Vec<(K, Vec<usize>)>
where
    C: Hash + Eq,
    K: Hash + Eq + Clone,
{
    let mut by_cheap: FxHashMap<C, usize> = FxHashMap::default();
    let mut cheap_groups: Vec<Vec<usize>> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let g = *by_cheap.entry(cheap(item)).or_insert_with(|| {
            cheap_groups.push(Vec::new());
            cheap_groups.len() - 1
        });
        cheap_groups[g].push(i);
    }
    let mut index: FxHashMap<K, usize> = FxHashMap::default();
    let mut merged: Vec<(K, Vec<usize>)> = Vec::new();
    for members in cheap_groups {
        let key = render(&items[members[0]]);
        match index.get(&key) {
            Some(&g) => merged[g].1.extend(members),
            None => {
                index.insert(key.clone(), merged.len());
                merged.push((key, members));
            }
        }
    }
    for (_, m) in &mut merged {
        m.sort_unstable();
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_cheap_groups_with_equal_keys() {
        let items = [(1, "a"), (2, "b"), (1, "a"), (3, "a")];
        let g = group_by_key(&items, |x| x.0, |x| x.1.to_owned());
        assert_eq!(
            g,
            vec![("a".to_owned(), vec![0, 2, 3]), ("b".to_owned(), vec![1])]
        );
    }
}
