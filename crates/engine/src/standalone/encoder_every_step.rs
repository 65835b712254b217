//! A text encoder run in every denoising step (docs/analysis.md, "Patterns"): a diffusion
//! pipeline encodes its prompt once, before the loop, and every denoising step reuses the
//! embeddings. A text encoder's module (`T5EncoderModel`, `CLIPTextModel`, …) entered in every
//! marked step that also runs the denoiser (a `…Transformer2DModel`, `UNet2DConditionModel`)
//! re-encodes a prompt that does not change between steps (held-out suite 9: a prompt-weighting
//! callback calling `encode_prompt` at every step, the T5-XXL encoder 29 % of each step, whose
//! layers had been told to fuse).

use serde::Serialize;

use super::context::Modules;
use super::op_shares::OpShare;
use crate::model::host_calls;
use crate::model::tree::CallTree;
use crate::model::Trace;

/// Text encoders' module classes.
const TEXT_ENCODERS: [&str; 6] = [
    "T5EncoderModel",
    "UMT5EncoderModel",
    "CLIPTextModel",
    "CLIPTextModelWithProjection",
    "ChatGLMModel",
    "BertModel",
];

/// A denoiser's module class: the network a diffusion pipeline runs once per step.
fn is_denoiser(class: &str) -> bool {
    [
        "Transformer2DModel",
        "Transformer3DModel",
        "UNet2DConditionModel",
        "UNet3DConditionModel",
    ]
    .iter()
    .any(|d| class.ends_with(d))
}

/// The encoder's calls in the steps and their work.
#[derive(Debug, Clone, Serialize)]
pub struct EncoderEveryStep {
    pub class: String,
    pub denoiser: String,
    /// Marked steps that run the denoiser, each of which runs the encoder too.
    pub steps: usize,
    pub calls: u64,
    /// The innermost function outside PyTorch and the library around the first call, where
    /// recorded (`prompt_weighting.py(57): dynamic_prompt_callback`).
    pub frame: String,
    pub ops: Vec<OpShare>,
    pub ms: f64,
    /// The encoder's GPU events and its host work (its frames and the CPU ops inside them):
    /// what the fix's replay removes.
    #[serde(skip)]
    pub events: Vec<u32>,
    #[serde(skip)]
    pub host: Vec<u32>,
    /// Module classes that run only inside the encoder's calls (`T5LayerNorm`, `T5Attention`):
    /// findings about them tune work the fix removes.
    pub inner: Vec<String>,
}

pub fn find(trace: &Trace, tree: &CallTree, modules: &Modules) -> Option<EncoderEveryStep> {
    // Outermost encoder frames, and denoiser frames; the steps are read (a pass over every
    // event) only where both kinds of module run.
    let encoder_of = |f: u32| TEXT_ENCODERS.contains(&modules.frames[f as usize].class.as_str());
    if !(modules.frames.iter()).any(|f| TEXT_ENCODERS.contains(&f.class.as_str()))
        || !(modules.frames.iter()).any(|f| is_denoiser(&f.class))
    {
        return None;
    }
    let steps = crate::memory::steps::step_spans(trace);
    if steps.len() < 2 {
        return None;
    }
    let outermost = |f: u32| {
        let mut p = modules.frames[f as usize].parent;
        while let Some(q) = p {
            if encoder_of(q) {
                return false;
            }
            p = modules.frames[q as usize].parent;
        }
        true
    };
    let encoders: Vec<u32> = (0..modules.frames.len() as u32)
        .filter(|&f| encoder_of(f) && outermost(f))
        .collect();
    let first = *encoders.first()?;
    let denoisers: Vec<u32> = (0..modules.frames.len() as u32)
        .filter(|&f| is_denoiser(&modules.frames[f as usize].class))
        .collect();
    let in_step = |f: u32, s: &(String, i64, i64)| {
        let ts = trace.event(modules.frames[f as usize].event).ts;
        s.1 <= ts && ts < s.2
    };
    let denoising: Vec<&(String, i64, i64)> = (steps.iter())
        .filter(|s| denoisers.iter().any(|&d| in_step(d, s)))
        .collect();
    if denoising.len() < 2
        || !denoising
            .iter()
            .all(|s| encoders.iter().any(|&e| in_step(e, s)))
    {
        return None;
    }
    // The encoder's work: every top-level op whose frames pass through one of its calls.
    let inside = |mut f: u32| loop {
        if encoders.binary_search(&f).is_ok() {
            return true;
        }
        match modules.frames[f as usize].parent {
            Some(p) => f = p,
            None => return false,
        }
    };
    let mut inner: Vec<String> = Vec::new();
    let mut outside: rustc_hash::FxHashSet<&str> = Default::default();
    for (f, fr) in modules.frames.iter().enumerate() {
        if encoders.binary_search(&(f as u32)).is_ok() {
            continue;
        }
        if fr.parent.is_some_and(inside) {
            if !inner.contains(&fr.class) {
                inner.push(fr.class.clone());
            }
        } else {
            outside.insert(fr.class.as_str());
        }
    }
    inner.retain(|c| !outside.contains(c.as_str()));
    let (mut events, mut host) = (Vec::new(), Vec::new());
    for (root, f) in modules.framed_roots() {
        if inside(f) {
            host.push(root.0);
            events.extend(tree.gpu_under(root).map(|g| g.0));
        }
    }
    if events.is_empty() {
        return None;
    }
    host.extend(encoders.iter().map(|&f| modules.frames[f as usize].event.0));
    host.sort_unstable();
    events.sort_unstable();
    events.dedup();
    let ops = super::op_shares::by_launching_op(trace, tree, &events);
    let ms = ops.iter().map(|o| o.ms).sum();
    let denoiser = denoisers
        .first()
        .map(|&d| modules.frames[d as usize].class.clone())
        .unwrap_or_default();
    Some(EncoderEveryStep {
        class: modules.frames[first as usize].class.clone(),
        denoiser,
        steps: denoising.len(),
        calls: encoders.len() as u64,
        frame: host_calls::innermost_frame_of(
            trace,
            modules.frames[first as usize].event,
            host_calls::is_user_function,
        ),
        ops,
        ms,
        events,
        host,
        inner,
    })
}
