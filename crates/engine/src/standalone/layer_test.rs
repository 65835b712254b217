//! A layer test: a root module whose children are single layers of one family, side by side
//! (TraceLens's normalization fixture: a `Net` of BatchNorm2d, LayerNorm, GroupNorm,
//! InstanceNorm2d and RMSNorm, two of each, and a loss). A model chains layers of several kinds
//! and repeats its blocks; a test runs each layer kind once or twice on a small input, so its
//! kernels are latency-bound and its idle is the harness's loop. Naming it keeps a reader from
//! taking the findings for a model's (review 16: "Net, architecture unknown" with a Critical
//! graph-capture recommendation for a 6 ms unit test).

use super::context::Modules;
use super::ops::OpRow;

/// At least this many distinct layer classes of one family under the root ...
const MIN_CLASSES: usize = 3;
/// ... none of them instantiated more than this many times per root (a model repeats its
/// blocks) ...
const MAX_INSTANCES: usize = 2;
/// ... and at least this share of the root's children in that family (losses left out).
const FAMILY_MIN_SHARE: f64 = 0.8;

/// Layer families, by a word of their class names.
const FAMILIES: [(&str, &str); 7] = [
    ("Norm", "normalization"),
    ("Conv", "convolution"),
    ("Linear", "linear"),
    ("Attention", "attention"),
    ("Pool", "pooling"),
    ("Embedding", "embedding"),
    ("Dropout", "dropout"),
];

/// The architecture line and the note for the summary of a layer test, or `None` for a model.
/// `ev` gets the evidence.
pub fn of(modules: &Modules, rows: &[OpRow], ev: &mut Vec<String>) -> Option<(String, String)> {
    let frames = &modules.frames;
    let root = frames.iter().position(|f| f.parent.is_none())?;
    let kids: Vec<usize> = (0..frames.len())
        .filter(|&i| frames[i].parent == Some(root as u32))
        .collect();
    // Leaves only: a child with children of its own is a block of a model.
    let parents: rustc_hash::FxHashSet<u32> = frames.iter().filter_map(|f| f.parent).collect();
    if kids.iter().any(|&k| parents.contains(&(k as u32))) {
        return None;
    }
    // Class names come from the trace: only an identifier's characters are kept, since the
    // note is written into markdown as it is.
    let ident = |c: &str| -> String {
        c.chars()
            .filter(|ch| ch.is_ascii_alphanumeric() || *ch == '_' || *ch == '.')
            .collect()
    };
    let mut classes: Vec<(String, usize)> = Vec::new();
    for &k in &kids {
        let c = ident(&frames[k].class);
        let c = c.as_str();
        if c.ends_with("Loss") {
            continue;
        }
        match classes.iter_mut().find(|x| x.0 == c) {
            Some(x) => x.1 += 1,
            None => classes.push((c.to_owned(), 1)),
        }
    }
    let layers: usize = classes.iter().map(|c| c.1).sum();
    if classes.len() < MIN_CLASSES || classes.iter().any(|c| c.1 > MAX_INSTANCES) {
        return None;
    }
    let (word, family) = FAMILIES.iter().find(|(w, _)| {
        let n: usize = classes
            .iter()
            .filter(|c| c.0.contains(w))
            .map(|c| c.1)
            .sum();
        n as f64 >= FAMILY_MIN_SHARE * layers as f64
            && classes.iter().filter(|c| c.0.contains(w)).count() >= MIN_CLASSES
    })?;
    let list = classes
        .iter()
        .map(|(c, n)| format!("{c} ×{n}"))
        .collect::<Vec<_>>()
        .join(", ");
    let longest_us = rows
        .iter()
        .filter_map(|r| r.kernel_us_max)
        .fold(0.0, f64::max);
    ev.push(format!(
        "architecture: the root module {}'s children are {layers} single {family} layers ({list}), each class at most {MAX_INSTANCES} times and none with children of its own: a layer test, not a model (classes with \"{word}\")",
        ident(&frames[root].class)
    ));
    Some((
        format!("Layer test: {layers} {family} layers side by side ({list}), not a model"),
        format!(
            "A layer test, not a model: {} runs {layers} single {family} layers ({list}) side by side, and its longest op call takes {longest_us:.1} µs of GPU time. Its findings describe these layers at this size; its idle and launch findings describe the test's loop, which matters only if a real workload runs them the same way.",
            ident(&frames[root].class)
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::EventId;
    use crate::standalone::context::ModuleFrame;

    /// A root and its children (class, parent index into the list), in order.
    fn modules(frames: &[(&str, Option<u32>)]) -> Modules {
        let mut m = Modules::default();
        for (i, (class, parent)) in frames.iter().enumerate() {
            m.frames.push(ModuleFrame {
                event: EventId(i as u32),
                parent: *parent,
                class: (*class).to_owned(),
            });
        }
        m
    }

    /// TraceLens's normalization fixture is a layer test; a small CNN (several kinds of layer
    /// chained) and a transformer (blocks with children) are models.
    #[test]
    fn single_layers_of_one_family_side_by_side_are_a_test() {
        let root = Some(0);
        let mut norm = vec![("Net", None)];
        for c in [
            "BatchNorm2d",
            "LayerNorm",
            "GroupNorm",
            "InstanceNorm2d",
            "RMSNorm",
        ] {
            norm.push((c, root));
            norm.push((c, root));
        }
        norm.push(("MSELoss", root));
        let mut ev = Vec::new();
        let (arch, note) = of(&modules(&norm), &[], &mut ev).expect("a layer test");
        assert!(
            arch.starts_with("Layer test: 10 normalization layers side by side (BatchNorm2d ×2")
                && note.starts_with("A layer test, not a model: Net runs 10 single")
                && !arch.contains("MSELoss"),
            "{arch} / {note}"
        );
        let cnn = [
            ("SmallNet", None),
            ("Conv2d", root),
            ("BatchNorm2d", root),
            ("ReLU", root),
            ("Conv2d", root),
            ("BatchNorm2d", root),
            ("ReLU", root),
            ("Linear", root),
        ];
        assert!(of(&modules(&cnn), &[], &mut ev).is_none());
        let transformer = [
            ("Model", None),
            ("LayerNorm", root),
            ("Block", root),
            ("RMSNorm", Some(2)),
            ("GroupNorm", root),
        ];
        assert!(of(&modules(&transformer), &[], &mut ev).is_none());
        // A model repeating one norm three times under its root is no test either.
        let repeated = [
            ("Model", None),
            ("LayerNorm", root),
            ("LayerNorm", root),
            ("LayerNorm", root),
            ("RMSNorm", root),
            ("GroupNorm", root),
        ];
        assert!(of(&modules(&repeated), &[], &mut ev).is_none());
    }

    /// Class names from the trace reach the note as identifiers only.
    #[test]
    fn class_names_are_reduced_to_identifiers() {
        let root = Some(0);
        let frames = [
            ("Net<script>", None),
            ("BatchNorm2d", root),
            ("Layer*Norm", root),
            ("Group`Norm", root),
        ];
        let mut ev = Vec::new();
        let (_, note) = of(&modules(&frames), &[], &mut ev).expect("a layer test");
        assert!(
            !note.contains('<') && !note.contains('*') && !note.contains('`'),
            "{note}"
        );
    }
}
