//! Small serving traces that replay CUDA/HIP graphs, with the capture traces that recorded the
//! graphs, whose merge is known by construction (which kernel belongs to which captured op):
//! the capture merge's tests (`tests/capture_merge.rs`) and the worker's protocol tests build
//! their cases from these pieces.

use serde_json::{json, Value};

/// A complete event on the host thread.
pub fn host(cat: &str, name: &str, ts: i64, dur: i64, args: Value) -> Value {
    json!({"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": args})
}

/// A CPU op with bf16 inputs of the given `Input Dims`.
pub fn op(name: &str, ts: i64, dims: Value) -> Value {
    host(
        "cpu_op",
        name,
        ts,
        50,
        json!({"Input Dims": dims, "Input type": ["c10::BFloat16"]}),
    )
}

/// A kernel launch naming its kernel (`args.kernel`, as HIP records it).
pub fn launch(ts: i64, corr: i64, kernel: &str) -> Value {
    host(
        "cuda_runtime",
        "hipLaunchKernel",
        ts,
        10,
        json!({"correlation": corr, "kernel": kernel}),
    )
}

/// A kernel on stream 7 of device 0.
pub fn kernel(name: &str, ts: i64, dur: i64, corr: i64) -> Value {
    json!({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
        "args": {"correlation": corr, "stream": 7, "device": 0}})
}

/// A graph launch; its kernels carry its correlation.
pub fn graph_launch(ts: i64, corr: i64) -> Value {
    host(
        "cuda_runtime",
        "hipGraphLaunch",
        ts,
        20,
        json!({"correlation": corr}),
    )
}

/// vLLM's detailed annotation of a decode iteration of `requests` requests, from 0 to `dur`.
pub fn decode_iteration(requests: u32, dur: i64) -> Value {
    host(
        "user_annotation",
        &format!(
            "execute_{requests}_context_0(sq0sk0sqsq0sqsk0)_generation_{requests}(sq{requests}sk100sqsq{requests}sqsk400)"
        ),
        0,
        dur,
        json!({}),
    )
}

/// A capture trace: vLLM's `_dummy_run` frame holding one capture window per list of
/// (op, kernel) launches; every op's leading dimension is 4 (the captured batch size).
pub fn capture(windows: &[&[(&str, &str)]]) -> Value {
    let mut ev = vec![host(
        "python_function",
        "vllm/v1/worker/gpu_model_runner.py(100): _dummy_run",
        0,
        10_000,
        json!({}),
    )];
    let (mut t, mut corr) = (10, 1);
    for w in windows {
        ev.push(host(
            "cuda_runtime",
            "hipStreamBeginCapture",
            t,
            5,
            json!({}),
        ));
        t += 20;
        for (name, k) in *w {
            ev.push(op(name, t, json!([[4, 64], [64, 64]])));
            ev.push(launch(t + 10, corr, k));
            corr += 1;
            t += 100;
        }
        ev.push(host("cuda_runtime", "hipStreamEndCapture", t, 5, json!({})));
        t += 100;
    }
    trace(ev)
}

/// A trace document of `events`.
pub fn trace(events: Vec<Value>) -> Value {
    json!({"traceEvents": events})
}

/// A PIECEWISE case: one decode iteration of 4 requests replays two graphs with an eager op
/// between them; the capture trace holds the two windows. Returns (serving trace, capture
/// trace, (kernel, the op it belongs to) in GPU order).
pub fn piecewise() -> (Value, Value, Vec<(&'static str, &'static str)>) {
    let capture = capture(&[
        &[("aten::mm", "gemm_A"), ("aten::add", "add_B")],
        &[("aten::silu", "silu_C")],
    ]);
    let exec = trace(vec![
        decode_iteration(4, 2000),
        graph_launch(100, 10),
        op("aten::mul", 300, json!([[4, 64], [4, 64]])),
        launch(310, 11, "mul_D"),
        graph_launch(500, 12),
        kernel("gemm_A", 130, 40, 10),
        kernel("add_B", 175, 20, 10),
        kernel("mul_D", 330, 10, 11),
        kernel("silu_C", 530, 15, 12),
    ]);
    let truth = vec![
        ("gemm_A", "aten::mm"),
        ("add_B", "aten::add"),
        ("mul_D", "aten::mul"),
        ("silu_C", "aten::silu"),
    ];
    (exec, capture, truth)
}
