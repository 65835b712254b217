//! A CNN named by its convolutions where the trace records no `nn.Module` frames (PyTorch 1.x
//! traces, or `with_modules` off): torchvision's ResNets run a fixed number of convolutions per
//! forward pass from a 7×7, 64-channel, stride-2 stem, so the count per iteration names the
//! depth, and the weights the convolutions read give the parameter count (docs/analysis.md,
//! "Workload").

use crate::model::{EventKind, Trace};
use rustc_hash::FxHashMap as HashMap;

/// Convolutions per forward pass of torchvision's ResNets: the stem, two or three per residual
/// block (basic or bottleneck blocks: [2, 2, 2, 2], [3, 4, 6, 3], [3, 4, 23, 3], [3, 8, 36, 3]),
/// and one projection in each stage that changes the width (three with basic blocks, four with
/// bottlenecks). ResNeXt and Wide ResNet keep their ResNet's count.
pub const RESNET_CONVS: [(u64, &str); 5] = [
    (20, "ResNet-18"),
    (36, "ResNet-34"),
    (53, "ResNet-50"),
    (104, "ResNet-101"),
    (155, "ResNet-152"),
];

/// A convolution's input and weight dims.
type Stem = (Vec<u64>, Vec<u64>);

/// What the convolutions of one iteration show.
#[derive(Debug, Clone, PartialEq)]
pub struct ConvSignature {
    /// `aten::convolution` calls per iteration (forward passes).
    pub per_iteration: u64,
    pub iterations: u64,
    /// Weight elements the convolutions of one iteration read.
    pub params: u64,
    /// The first convolution's input `[N, C, H, W]` and weight `[O, I, kh, kw]`, where the
    /// trace records shapes.
    pub stem: Option<Stem>,
}

impl ConvSignature {
    /// The ResNet this matches: its convolution count, and a 7×7, 64-channel stem on a 3-channel
    /// image where the trace records shapes; whether the stem was checked.
    pub fn resnet(&self) -> Option<(&'static str, bool)> {
        let stem = match &self.stem {
            Some((_, w)) => {
                if !(w.len() == 4 && w[0] == 64 && w[1] == 3 && w[2] == 7 && w[3] == 7) {
                    return None;
                }
                true
            }
            None => false,
        };
        RESNET_CONVS
            .iter()
            .find(|&&(n, _)| n == self.per_iteration)
            .map(|&(_, name)| (name, stem))
    }

    /// The batch: the stem's input's first dimension.
    pub fn batch(&self) -> Option<u64> {
        self.stem.as_ref().and_then(|(x, _)| x.first().copied())
    }
}

/// The dims of the first two inputs of an `Input Dims` array (`[[32,3,224,224],[64,3,7,7],…]`).
fn two_inputs(dims: &str) -> Option<Stem> {
    let v: Vec<serde_json::Value> = serde_json::from_str(dims).ok()?;
    let dims_of = |i: usize| -> Option<Vec<u64>> {
        v.get(i)?
            .as_array()?
            .iter()
            .map(|x| x.as_u64())
            .collect::<Option<Vec<u64>>>()
    };
    Some((dims_of(0)?, dims_of(1)?))
}

/// Iterations the trace marks: the optimizer's steps (each name's count; the most), else the
/// profiler's steps.
fn iterations(trace: &Trace) -> u64 {
    let mut by_name: HashMap<crate::model::StrId, u64> = HashMap::default();
    let mut profiler_steps = 0;
    for e in trace.events.iter().filter(|e| e.kind().is_host_activity()) {
        let name = trace.name(e);
        if name.starts_with("Optimizer.step") {
            *by_name.entry(e.name).or_default() += 1;
        } else if name.starts_with("ProfilerStep#") {
            profiler_steps += 1;
        }
    }
    by_name.into_values().max().unwrap_or(profiler_steps)
}

/// The convolutions per iteration, where every iteration runs the same number and the calls
/// record their inputs' dims.
pub fn of(trace: &Trace) -> Option<ConvSignature> {
    let iterations = iterations(trace);
    if iterations == 0 {
        return None;
    }
    // Each call with its `Input Dims`, where recorded (`record_shapes`).
    let mut convs: Vec<(i64, Option<&str>)> = trace
        .events
        .iter()
        .filter(|e| e.kind() == EventKind::CpuOp && trace.name(e) == "aten::convolution")
        .map(|e| {
            let d = trace.op_args_of(e).and_then(|a| a.input_dims);
            (e.ts, d.map(|d| trace.strings.get(d)))
        })
        .collect();
    let n = convs.len() as u64;
    if n == 0 || !n.is_multiple_of(iterations) {
        return None;
    }
    convs.sort_unstable_by_key(|c| c.0);
    let mut parsed: HashMap<&str, Option<Stem>> = HashMap::default();
    let mut weights = 0u64;
    for d in convs.iter().filter_map(|c| c.1) {
        let p = parsed.entry(d).or_insert_with(|| two_inputs(d));
        if let Some((_, w)) = p {
            weights += w.iter().product::<u64>();
        }
    }
    Some(ConvSignature {
        per_iteration: n / iterations,
        iterations,
        params: weights / iterations,
        stem: convs[0].1.and_then(|d| parsed.get(d).cloned().flatten()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace_with(convs: &[&str], steps: usize) -> Trace {
        let mut events = Vec::new();
        let mut ts = 0;
        for _ in 0..steps {
            for d in convs {
                let args = if d.is_empty() {
                    String::new()
                } else {
                    format!(r#""Input Dims": {d}"#)
                };
                events.push(format!(
                    r#"{{"ph": "X", "cat": "cpu_op", "name": "aten::convolution", "pid": 1, "tid": 1, "ts": {ts}, "dur": 5, "args": {{{args}}}}}"#
                ));
                ts += 10;
            }
            events.push(format!(
                r#"{{"ph": "X", "cat": "user_annotation", "name": "Optimizer.step#SGD.step", "pid": 1, "tid": 1, "ts": {ts}, "dur": 5}}"#
            ));
            ts += 10;
        }
        let text = format!(r#"{{"traceEvents": [{}]}}"#, events.join(","));
        crate::import::import_bytes(text.as_bytes()).expect("imports")
    }

    /// Twenty convolutions per step from a 7×7 stem on 3 channels: ResNet-18, batch 8, the
    /// weights counted once per iteration; 19 per step is no ResNet, and a stem on 1 channel
    /// none either.
    #[test]
    fn the_convolution_count_names_the_resnet() {
        let stem = "[[8, 3, 224, 224], [64, 3, 7, 7], []]";
        let block = "[[8, 64, 56, 56], [64, 64, 3, 3], []]";
        let mut convs = vec![stem];
        convs.extend(std::iter::repeat_n(block, 19));
        let s = of(&trace_with(&convs, 3)).expect("a signature");
        assert_eq!((s.per_iteration, s.iterations), (20, 3));
        assert_eq!(s.params, 64 * 3 * 49 + 19 * 64 * 64 * 9);
        assert_eq!(s.resnet(), Some(("ResNet-18", true)));
        assert_eq!(s.batch(), Some(8));
        let s = of(&trace_with(&convs[..19], 2)).expect("a signature");
        assert_eq!(s.resnet(), None);
        // Without shapes the count alone, said unchecked.
        let bare = vec![""; 20];
        let s = of(&trace_with(&bare, 2)).expect("a signature");
        assert_eq!(
            (s.resnet(), s.params, s.batch()),
            (Some(("ResNet-18", false)), 0, None)
        );
        let mono = "[[8, 1, 224, 224], [64, 1, 7, 7], []]";
        let mut convs = vec![mono];
        convs.extend(std::iter::repeat_n(block, 19));
        assert_eq!(
            of(&trace_with(&convs, 1)).expect("a signature").resnet(),
            None
        );
    }
}
