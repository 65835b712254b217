//! The iteration order of a CPython 3.11 `set` of `(int, int)` tuples. TraceDiff's
//! disambiguation emits its new matches by iterating such a set, so the merged tree's child
//! order (and with it every merged id) depends on it (spec appendix).

const P1: u64 = 11_400_714_785_074_694_791;
const P2: u64 = 14_029_467_366_897_019_727;
const P5: u64 = 2_870_177_450_012_600_261;
const LINEAR_PROBES: usize = 9;
const PERTURB_SHIFT: u32 = 5;

/// `hash((i, j))` for small non-negative ints (which hash to themselves).
fn tuple_hash(i: usize, j: usize) -> u64 {
    let mut acc = P5;
    for x in [i as u64, j as u64] {
        acc = acc
            .wrapping_add(x.wrapping_mul(P2))
            .rotate_left(31)
            .wrapping_mul(P1);
    }
    acc = acc.wrapping_add(2 ^ (P5 ^ 3_527_539));
    if acc == u64::MAX {
        1_546_275_796
    } else {
        acc
    }
}

fn insert(table: &mut [Option<(u64, (usize, usize))>], h: u64, key: (usize, usize)) {
    let mask = table.len() - 1;
    let mut i = (h as usize) & mask;
    let mut perturb = h;
    loop {
        let probes = if i + LINEAR_PROBES <= mask {
            LINEAR_PROBES
        } else {
            0
        };
        for k in 0..=probes {
            if table[i + k].is_none() {
                table[i + k] = Some((h, key));
                return;
            }
        }
        perturb >>= PERTURB_SHIFT;
        i = (i
            .wrapping_mul(5)
            .wrapping_add(1)
            .wrapping_add(perturb as usize))
            & mask;
    }
}

/// The order in which CPython iterates a set built by adding `items` in this order (distinct
/// items; TraceDiff never adds a pair twice).
pub(crate) fn iteration_order(items: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let mut table: Vec<Option<(u64, (usize, usize))>> = vec![None; 8];
    let mut used = 0usize;
    for &key in items {
        insert(&mut table, tuple_hash(key.0, key.1), key);
        used += 1;
        let mask = table.len() - 1;
        // `fill` equals `used`: nothing is ever deleted.
        if used * 5 >= mask * 3 {
            let min_used = if used > 50_000 { used * 2 } else { used * 4 };
            let mut size = 8;
            while size <= min_used {
                size <<= 1;
            }
            let old = std::mem::replace(&mut table, vec![None; size]);
            for (h, k) in old.into_iter().flatten() {
                insert(&mut table, h, k);
            }
        }
    }
    table.into_iter().flatten().map(|(_, k)| k).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values printed by CPython 3.11.7 on this machine: `hash((0, 0))`, `hash((1, 2))`, and
    /// `list(s)` after `s.add(p)` for each pair below, in order.
    #[test]
    fn matches_cpython() {
        assert_eq!(tuple_hash(0, 0) as i64, -8_458_139_203_682_520_985);
        assert_eq!(tuple_hash(1, 2) as i64, -3_550_055_125_485_641_917);
        let order = iteration_order(&[(3, 1), (0, 0), (2, 2), (1, 0), (0, 3)]);
        assert_eq!(order, [(1, 0), (2, 2), (0, 0), (3, 1), (0, 3)]);
        let order = iteration_order(&[
            (3, 1),
            (0, 0),
            (2, 2),
            (1, 0),
            (0, 3),
            (5, 7),
            (9, 2),
            (4, 4),
        ]);
        assert_eq!(
            order,
            [
                (4, 4),
                (0, 0),
                (3, 1),
                (0, 3),
                (9, 2),
                (5, 7),
                (2, 2),
                (1, 0)
            ]
        );
    }
}
