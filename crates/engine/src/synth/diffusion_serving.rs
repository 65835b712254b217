//! A diffusion server's serving trace whose only iteration annotation is the second-tier
//! `execute_diffusion_<bs>_<W>x<H>` (spec §7.2), replaying one FULL graph per denoising step,
//! with the capture trace that recorded the graph and TraceLens's `execution_details.json`.
//! The truth is known by construction: every graph launch merges, and every replayed kernel
//! belongs to one captured op and one `nn.Module` (`jarvis synth --serving diffusion`,
//! `tests/capture_merge.rs`).

use serde_json::{json, Value};

use super::graph_capture::{graph_launch, host, kernel, launch, trace};

/// The captured transformer block: (module frame, op, kernel), inside `nn.Module: DiTBlock_0`.
const BLOCK: &[(&str, &str, &str)] = &[
    (
        "nn.Module: LayerNorm_0",
        "aten::native_layer_norm",
        "layer_norm_fwd",
    ),
    ("nn.Module: Linear_0", "aten::mm", "gemm_qkv"),
    ("nn.Module: Attention_0", "aten::mul", "attn_scale"),
    ("nn.Module: Linear_1", "aten::mm", "gemm_out"),
];

/// The op the capture records after the block, outside any module frame: its parent module is
/// the one around the graph launch on the replay side (spec §7.6).
const OUTSIDE: (&str, &str) = ("aten::add", "residual_add");

/// The module that encloses each graph replay in the serving process.
pub const REPLAY_MODULE: &str = "nn.Module: DenoisingStage_0";

/// The file name of the capture trace (as `execution_details.json` lists it).
pub const CAPTURE_FILE: &str = "capture_1_FULL.json";

/// One generated case.
pub struct DiffusionCase {
    pub serving: Value,
    pub capture: Value,
    /// TraceLens's `execution_details.json`: the capture is FULL, batch size 1.
    pub details: Value,
    /// Graph launches in the serving trace (one per denoising step).
    pub launches: usize,
    /// Every kernel of the serving trace in GPU order, with its op and the op's parent module
    /// (instance numbers stripped, as TraceLens prints it).
    pub truth: Vec<(String, String, String)>,
}

impl DiffusionCase {
    /// The files as `jarvis synth --serving diffusion` writes them: (path under the output
    /// folder, contents).
    pub fn files(&self) -> Vec<(String, String)> {
        vec![
            ("serving.json".to_owned(), self.serving.to_string()),
            (
                format!("capture_traces/{CAPTURE_FILE}"),
                self.capture.to_string(),
            ),
            (
                "capture_traces/execution_details.json".to_owned(),
                self.details.to_string(),
            ),
        ]
    }
}

/// A CPU op with bf16 inputs whose leading dimension is the captured batch size, 1.
fn op(name: &str, ts: i64, dur: i64) -> Value {
    host(
        "cpu_op",
        name,
        ts,
        dur,
        json!({"Input Dims": [[1, 4096, 64], [1, 64, 64]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}),
    )
}

fn python(name: &str, ts: i64, dur: i64) -> Value {
    host("python_function", name, ts, dur, json!({}))
}

/// `nn.Module: X_0` → `nn.Module: X` (TraceLens's parent module).
fn module_name(frame: &str) -> String {
    crate::analysis::module_path::strip_instance_numbers(frame)
}

/// The capture trace: the server's graph capture routine holding one stream capture of the
/// block, each op inside its module frame and launching its kernel.
fn capture() -> Value {
    // No event at time 0: a profiler writes that only when it fails (`zero_timestamp`).
    let mut ev = vec![python(
        "sglang/multimodal_gen/runtime/cuda_graph.py(80): capture",
        1,
        10_000,
    )];
    ev.push(host(
        "cuda_runtime",
        "hipStreamBeginCapture",
        10,
        5,
        json!({}),
    ));
    let mut t = 100;
    ev.push(python("nn.Module: DiTBlock_0", t, 100 * BLOCK.len() as i64));
    for (i, (module, name, k)) in BLOCK.iter().enumerate() {
        let at = t + 10;
        if !module.is_empty() {
            ev.push(python(module, at, 80));
        }
        ev.push(op(name, at + 5, 60));
        ev.push(launch(at + 20, i as i64 + 1, k));
        t += 100;
    }
    ev.push(op(OUTSIDE.0, t + 20, 60));
    ev.push(launch(t + 35, 99, OUTSIDE.1));
    t += 200;
    ev.push(host("cuda_runtime", "hipStreamEndCapture", t, 5, json!({})));
    trace(ev)
}

/// The case: `steps` denoising steps of one request (batch size 1) at 1024x1024, each a replay
/// of the captured graph under [`REPLAY_MODULE`], with the scheduler's eager step in between.
pub fn diffusion_full(steps: u32) -> DiffusionCase {
    let step_len = 2_000;
    let total = step_len * i64::from(steps) + 100;
    let mut ev = vec![host(
        "user_annotation",
        "execute_diffusion_1_1024x1024",
        10,
        total,
        json!({}),
    )];
    let mut truth = Vec::new();
    let mut kernels = Vec::new();
    for s in 0..i64::from(steps) {
        let base = 50 + s * step_len;
        let corr = 1_000 + s * 10;
        ev.push(python(REPLAY_MODULE, base, 1_000));
        ev.push(python("torch/cuda/graphs.py(120): replay", base + 10, 100));
        ev.push(graph_launch(base + 20, corr));
        let mut t = base + 60;
        let captured = BLOCK
            .iter()
            .map(|(m, o, k)| (*m, *o, *k))
            .chain([("", OUTSIDE.0, OUTSIDE.1)]);
        for (module, name, k) in captured {
            kernels.push(kernel(k, t, 40, corr));
            let module = if module.is_empty() {
                REPLAY_MODULE
            } else {
                module
            };
            truth.push((k.to_owned(), name.to_owned(), module_name(module)));
            t += 50;
        }
        // The scheduler's eager update between steps, outside the module.
        let eager = base + 1_200;
        ev.push(op("aten::sub", eager, 50));
        ev.push(launch(eager + 10, corr + 1, "scheduler_step"));
        kernels.push(kernel("scheduler_step", eager + 100, 10, corr + 1));
        truth.push(("scheduler_step".into(), "aten::sub".into(), "NA".into()));
    }
    ev.extend(kernels);
    DiffusionCase {
        serving: trace(ev),
        capture: capture(),
        details: json!([{"file": CAPTURE_FILE, "batch_size": 1, "mode": "FULL"}]),
        launches: steps as usize,
        truth,
    }
}
