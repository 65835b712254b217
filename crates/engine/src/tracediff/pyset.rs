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
        assert_eq!(order, [(0, 0), (3, 1), (0, 3), (2, 2), (1, 0)]);
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
        // 57 pairs: three resizes (Python: `random.seed(3)`, 60 draws of `randrange(40)` pairs,
        // duplicates dropped, then added in order).
        let items = [
            (15, 37),
            (34, 8),
            (23, 38),
            (30, 37),
            (4, 38),
            (0, 30),
            (16, 35),
            (14, 12),
            (30, 34),
            (35, 30),
            (25, 9),
            (14, 9),
            (33, 24),
            (0, 4),
            (10, 37),
            (2, 19),
            (1, 17),
            (30, 38),
            (24, 27),
            (25, 36),
            (28, 8),
            (23, 6),
            (2, 8),
            (31, 13),
            (16, 27),
            (19, 26),
            (32, 24),
            (36, 22),
            (34, 37),
            (26, 37),
            (14, 21),
            (38, 10),
            (20, 34),
            (36, 36),
            (6, 13),
            (36, 17),
            (18, 7),
            (4, 30),
            (30, 5),
            (22, 4),
            (26, 9),
            (1, 18),
            (27, 26),
            (7, 2),
            (38, 39),
            (2, 24),
            (37, 21),
            (35, 17),
            (32, 15),
            (6, 38),
            (34, 2),
            (12, 26),
            (18, 39),
            (16, 9),
            (2, 21),
            (20, 23),
            (8, 24),
        ];
        let want = [
            (35, 30),
            (0, 30),
            (10, 37),
            (24, 27),
            (16, 35),
            (20, 23),
            (37, 21),
            (36, 22),
            (34, 37),
            (4, 30),
            (2, 24),
            (2, 8),
            (8, 24),
            (32, 15),
            (1, 18),
            (38, 10),
            (32, 24),
            (18, 7),
            (35, 17),
            (31, 13),
            (22, 4),
            (2, 21),
            (23, 6),
            (14, 9),
            (14, 12),
            (28, 8),
            (14, 21),
            (30, 5),
            (6, 38),
            (20, 34),
            (0, 4),
            (25, 9),
            (4, 38),
            (19, 26),
            (36, 36),
            (16, 9),
            (2, 19),
            (1, 17),
            (6, 13),
            (30, 38),
            (34, 2),
            (25, 36),
            (16, 27),
            (34, 8),
            (15, 37),
            (26, 37),
            (38, 39),
            (12, 26),
            (36, 17),
            (18, 39),
            (23, 38),
            (27, 26),
            (7, 2),
            (26, 9),
            (33, 24),
            (30, 37),
            (30, 34),
        ];
        assert_eq!(iteration_order(&items), want);
    }
}
