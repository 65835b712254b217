//! Perf-model ground truth: FLOPs and bytes written down from the maths (and PyTorch's
//! flop-counter conventions: a multiply-add is 2 FLOPs), not from Jarvis's own output.

use jarvis_engine::perf::inputs::OpInputs;
use jarvis_engine::perf::{forward, Metrics};
use serde_json::{json, Value};

fn inputs(dims: Value, types: Value, strides: Value, concrete: Value) -> OpInputs {
    let list = |v: Value| v.as_array().cloned().unwrap_or_default();
    OpInputs {
        dims: list(dims),
        types: list(types),
        strides: list(strides),
        concrete: list(concrete),
        iteration: None,
        moe: None,
    }
}

/// Inputs of `aten::_scaled_dot_product_flash_attention(q, k, v, dropout, causal, ...)`, bf16.
fn flash_sdpa(q: Value, k: Value, v: Value, causal: &str) -> OpInputs {
    inputs(
        json!([q, k, v, [], [], [], []]),
        json!([
            "c10::BFloat16",
            "c10::BFloat16",
            "c10::BFloat16",
            "Scalar",
            "Scalar",
            "Scalar",
            "Scalar"
        ]),
        json!([[], [], [], [], [], [], []]),
        json!(["", "", "", "0.", causal, "False", ""]),
    )
}

/// A model parameter as TraceLens prints it.
fn param(r: &Metrics, name: &str) -> Option<String> {
    r.params
        .iter()
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.py())
}

fn model(class: &str, x: &OpInputs) -> Metrics {
    forward(class, "", x, &[]).unwrap_or_else(|| panic!("{class} did not model"))
}

#[test]
fn gemm_with_bias() {
    // addmm(bias[N], A[M,K], B[K,N]), bf16: 2MNK multiply-adds plus M*N bias adds;
    // reads A, B, bias and writes C.
    let (m, n, k) = (8944.0, 1024.0, 1024.0);
    let x = inputs(
        json!([[1024], [8944, 1024], [1024, 1024], [], []]),
        json!([
            "c10::BFloat16",
            "c10::BFloat16",
            "c10::BFloat16",
            "Scalar",
            "Scalar"
        ]),
        json!([[1], [1024, 1], [1, 1024], [], []]),
        json!(["", "", "", "1", "1"]),
    );
    let r = model("aten_addmm", &x);
    assert_eq!(r.flops, 2.0 * m * n * k + m * n);
    assert_eq!(r.bytes, Some(2.0 * (m * k + k * n + m * n + n)));
    assert_eq!(r.compute_spec, "matrix_bf16");
}

#[test]
fn batched_gemm() {
    // bmm([16, 5185, 5185], [16, 5185, 64]): per batch 2*M*N*K.
    let (b, m, n, k) = (16.0, 5185.0, 64.0, 5185.0);
    let x = inputs(
        json!([[16, 5185, 5185], [16, 5185, 64]]),
        json!(["c10::BFloat16", "c10::BFloat16"]),
        json!([[26884225, 5185, 1], [331840, 64, 1]]),
        json!(["", ""]),
    );
    let r = model("aten_bmm", &x);
    assert_eq!(r.flops, b * 2.0 * m * n * k);
    assert_eq!(r.bytes, Some(b * 2.0 * (m * k + k * n + m * n)));
    assert!(
        (r.gflops() - 55.0588928).abs() < 1e-9,
        "the spec's worked example"
    );
}

#[test]
fn causal_attention_forward() {
    // Flash SDPA, q/k/v [B=2, H=8, N=1024, d=128], causal: QK^T and PV are each 2*N*N*d per
    // head, and causal masking halves the work.
    let (b, h, n, d) = (2.0, 8.0, 1024.0, 128.0);
    let x = flash_sdpa(
        json!([2, 8, 1024, 128]),
        json!([2, 8, 1024, 128]),
        json!([2, 8, 1024, 128]),
        "True",
    );
    let r = model("aten__scaled_dot_product_flash_attention", &x);
    assert_eq!(r.flops, b * h * (2.0 * n * n * d + 2.0 * n * n * d) / 2.0);
    // Q, K, V read and O written, 2 bytes each.
    assert_eq!(r.bytes, Some(4.0 * b * h * n * d * 2.0));
}

#[test]
fn strided_convolution() {
    // conv2d x[10, 64, 56, 56], w[128, 64, 3, 3], stride 2, padding 1 → out [10, 128, 28, 28].
    let out = 10.0 * 128.0 * 28.0 * 28.0;
    let x = inputs(
        json!([
            [10, 64, 56, 56],
            [128, 64, 3, 3],
            [],
            [],
            [],
            [],
            [],
            [],
            []
        ]),
        json!([
            "c10::BFloat16",
            "c10::BFloat16",
            "",
            "ScalarList",
            "ScalarList",
            "ScalarList",
            "Scalar",
            "ScalarList",
            "Scalar"
        ]),
        json!([
            [200704, 3136, 56, 1],
            [576, 9, 3, 1],
            [],
            [],
            [],
            [],
            [],
            [],
            []
        ]),
        json!(["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"]),
    );
    let r = model("aten_conv", &x);
    assert_eq!(r.flops, 2.0 * (64.0 * 3.0 * 3.0) * out);
    assert_eq!(
        r.bytes,
        Some((10.0 * 64.0 * 56.0 * 56.0 + 128.0 * 64.0 * 9.0 + out) * 2.0)
    );
}

/// Deviation D6 (docs/deviations.md): a convolution's bias tensor is counted: one add per
/// output element, and its C_out values read.
#[test]
fn deviation_d6_convolution_bias_is_counted() {
    let out = 4.0 * 768.0 * 14.0 * 14.0;
    let x = inputs(
        json!([
            [4, 3, 224, 224],
            [768, 3, 16, 16],
            [768],
            [],
            [],
            [],
            [],
            [],
            []
        ]),
        json!([
            "c10::BFloat16",
            "c10::BFloat16",
            "c10::BFloat16",
            "ScalarList",
            "ScalarList",
            "ScalarList",
            "Scalar",
            "ScalarList",
            "Scalar"
        ]),
        json!([
            [150528, 50176, 224, 1],
            [768, 256, 16, 1],
            [1],
            [],
            [],
            [],
            [],
            [],
            []
        ]),
        json!(["", "", "", "[16, 16]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "1"]),
    );
    let r = model("aten_conv", &x);
    // TraceLens reports 924844032 FLOPs and 3588096 bytes for this op (Falconsai reference).
    assert_eq!(r.flops, 2.0 * (3.0 * 16.0 * 16.0) * out + out);
    assert_eq!(r.flops, 924_844_032.0 + 602_112.0);
    assert_eq!(r.bytes, Some(3_588_096.0 + 768.0 * 2.0));
    assert_eq!(param(&r, "bias"), Some("True".into()));
}

fn batch_norm(training: &str) -> OpInputs {
    inputs(
        json!([[8, 16, 32, 32], [16], [16], [16], [16], [], [], [], []]),
        json!([
            "float", "float", "float", "float", "float", "Scalar", "Scalar", "Scalar", "Scalar"
        ]),
        json!([[16384, 1024, 32, 1], [1], [1], [1], [1], [], [], [], []]),
        json!(["", "", "", "", "", training, "0.1", "1e-05", "True"]),
    )
}

#[test]
fn training_batch_norm() {
    // N = 131072 elements over C = 16 channels, fp32. Training: mean and variance over the batch
    // (3 FLOPs/element), normalize and scale-shift (2 FLOPs/element), plus per-channel work
    // (3C + 3C). Bytes: read x, write y, and C-sized mean, var, weight, bias, running mean, var.
    let (n, c) = (131072.0, 16.0);
    let r = model("BatchNorm", &batch_norm("True"));
    assert_eq!(r.flops, 3.0 * c + 3.0 * n + 3.0 * c + 2.0 * n);
    assert_eq!(r.bytes, Some(2.0 * n * 4.0 + 6.0 * c * 4.0));
}

/// Deviation D5 (docs/deviations.md): `training="False"` means inference. TraceLens's
/// `bool("False")` is True, so it reports the training figures above for this op.
#[test]
fn deviation_d5_batch_norm_inference_flag_is_read() {
    let (n, c) = (131072.0, 16.0);
    let r = model("BatchNorm", &batch_norm("False"));
    assert_eq!(r.flops, 3.0 * c + 3.0 * c + 2.0 * n);
    assert_eq!(r.bytes, Some(2.0 * n * 4.0 + 4.0 * c * 4.0));
    assert_eq!(param(&r, "is_training"), Some("False".into()));
}

#[test]
fn rms_norm() {
    // RMSNorm over the last C = 32*32 = 1024 elements of x[8, 16, 32, 32] with a weight:
    // per row, C squares + C adds + 2 (mean, rsqrt); per element a scale and a weight multiply.
    let (n, c) = (131072.0, 1024.0);
    let x = inputs(
        json!([[8, 16, 32, 32], [], [32, 32], []]),
        json!(["float", "ScalarList", "float", ""]),
        json!([[16384, 1024, 32, 1], [], [32, 1], []]),
        json!(["", "[32, 32]", "", ""]),
    );
    let r = model("RMSNorm", &x);
    assert_eq!(r.flops, (n / c) * (2.0 * c + 2.0) + 2.0 * n);
    assert_eq!(r.bytes, Some(2.0 * n * 4.0 + c * 4.0));
}

fn gqa_attention() -> OpInputs {
    flash_sdpa(
        json!([2, 32, 1024, 128]),
        json!([2, 8, 1024, 128]),
        json!([2, 8, 1024, 128]),
        "True",
    )
}

#[test]
fn causal_gqa_attention_forward_and_backward() {
    // q [B=2, Hq=32, N=1024, d=128], k/v with Hkv=8 heads (4 query heads share each).
    let (b, hq, hkv, n, d) = (2.0, 32.0, 8.0, 1024.0, 128.0);
    let x = gqa_attention();
    let f = model("aten__scaled_dot_product_flash_attention", &x);
    // Forward: S = QK^T and O = PV, 2·N·N·d each per query head, causal halves.
    assert_eq!(f.flops, b * hq * 2.0 * (2.0 * n * n * d) / 2.0);
    assert_eq!(
        f.bytes,
        Some((2.0 * b * hq * n * d + 2.0 * b * hkv * n * d) * 2.0)
    );
    let bw = jarvis_engine::perf::backward("aten__scaled_dot_product_flash_attention", "", &x)
        .expect("bwd");
    // Backward (flash): recompute S, then dV = P^T dO, dP = dO V^T, dQ = dS K, dK = dS^T Q:
    // five 2·N·N·d matmuls per query head; plus summing dK and dV over the 4 query heads that
    // share each K/V head (3 adds per element of each K/V head); causal halves everything.
    let matmuls = 5.0 * b * hq * 2.0 * n * n * d;
    let gqa_sums = 2.0 * b * hkv * n * d * (hq / hkv - 1.0);
    assert_eq!(bw.flops, (matmuls + gqa_sums) / 2.0);
    // Reads Q, K, V, dO; writes dQ, dK, dV.
    assert_eq!(
        bw.bytes,
        Some((3.0 * b * hq * n * d + 4.0 * b * hkv * n * d) * 2.0)
    );
}

/// Deviation D7 (docs/deviations.md): `mean(x[16, 559, 1024], dim=[-1], keepdim=True)` writes
/// 16·559 values, not one (TraceLens's `num_output_elems` is 1 for every such reduction).
#[test]
fn deviation_d7_reduction_output_elements() {
    let x = inputs(
        json!([[16, 559, 1024], [], [], []]),
        json!(["float", "ScalarList", "Scalar", ""]),
        json!([[572416, 1024, 1], [], [], []]),
        json!(["", "[-1]", "True", ""]),
    );
    let r = forward("aten_reduce", "aten::mean", &x, &[]).expect("modelled");
    let (n_in, n_out) = (16.0 * 559.0 * 1024.0, 16.0 * 559.0);
    assert_eq!(r.flops, n_in);
    assert_eq!(r.bytes, Some((n_in + n_out) * 4.0));
    let out = r
        .params
        .iter()
        .find(|(k, _)| *k == "num_output_elems")
        .map(|(_, v)| v.py());
    assert_eq!(out, Some("8944".into()));
}

#[test]
fn flash_attn_layout_is_batch_seq_heads_dim() {
    // flash_attn::_flash_attn_forward(q, k, v, dropout_p, softmax_scale, causal, ...), tensors
    // in (B, N, H, d): B=4, N=512, H=16, d=64, not causal.
    let (b, n, h, d) = (4.0, 512.0, 16.0, 64.0);
    let x = inputs(
        json!([
            [4, 512, 16, 64],
            [4, 512, 16, 64],
            [4, 512, 16, 64],
            [],
            [],
            []
        ]),
        json!([
            "c10::BFloat16",
            "c10::BFloat16",
            "c10::BFloat16",
            "Scalar",
            "Scalar",
            "Scalar"
        ]),
        json!([[], [], [], [], [], []]),
        json!(["", "", "", "0.0", "0.125", "False"]),
    );
    let r = model("flash_attention", &x);
    assert_eq!(r.flops, b * h * 2.0 * (2.0 * n * n * d));
    assert_eq!(param(&r, "H_Q"), Some("16".into()));
}

#[test]
fn varlen_attention_sums_its_sequences() {
    // Two packed sequences of 300 and 200 tokens (cu_seqlens [0, 300, 500]), H=8, d=128, not
    // causal: attention work is per sequence, 2 matmuls of 2·n·n·d per head.
    let (h, d) = (8.0, 128.0);
    let x = inputs(
        json!([
            [500, 8, 128],
            [500, 8, 128],
            [500, 8, 128],
            [3],
            [3],
            [],
            [],
            [],
            [],
            []
        ]),
        json!([
            "c10::BFloat16",
            "c10::BFloat16",
            "c10::BFloat16",
            "int",
            "int",
            "Scalar",
            "Scalar",
            "Scalar",
            "Scalar",
            "Scalar"
        ]),
        json!([[], [], [], [1], [1], [], [], [], [], []]),
        json!(["", "", "", "", "", "300", "300", "0.0", "0.088", "False"]),
    );
    let r = model("flash_attention_varlen_forward", &x);
    let per_seq = |n: f64| h * 2.0 * (2.0 * n * n * d);
    assert_eq!(r.flops, per_seq(300.0) + per_seq(200.0));
}

fn strs(v: &[&str]) -> Value {
    json!(v)
}

#[test]
fn fp8_hipblaslt_gemm_reads_8_bit_operands_and_writes_16_bit() {
    // hipblaslt_gemm_fp8(A[4096, 8192], scaleA, B[8192, 1024], scaleB, out_dtype, tA, tB, tC),
    // no transposes: M=4096, K=8192, N=1024.
    let (m, n, k) = (4096.0, 1024.0, 8192.0);
    let e4m3 = "c10::Float8_e4m3fn";
    let x = inputs(
        json!([[4096, 8192], [], [8192, 1024], [], [], [], [], []]),
        strs(&[
            e4m3, "float", e4m3, "float", "", "Scalar", "Scalar", "Scalar",
        ]),
        json!([[8192, 1], [], [1024, 1], [], [], [], [], []]),
        strs(&["", "", "", "", "", "False", "False", "False"]),
    );
    let r = model("hipblaslt_gemm_fp8", &x);
    assert_eq!(r.flops, 2.0 * m * n * k);
    assert_eq!(r.bytes, Some(m * k + k * n + 2.0 * m * n));
    assert_eq!(r.compute_spec, "matrix_fp8");
    assert_eq!(param(&r, "M").as_deref(), Some("4096"));
}

#[test]
fn fp8_hipblaslt_gemm_with_transposed_output_swaps_the_operands() {
    // C^T = B·A^T: A[512, 256] (M=512, K=256), B[128, 256] given transposed (N=128), transC.
    // hipBLASLt then multiplies B (M'=128) by A^T (N'=512): the same 2·M·N·K.
    let e4m3 = "c10::Float8_e4m3fn";
    let x = inputs(
        json!([[512, 256], [], [128, 256], [], [], [], [], []]),
        strs(&[
            e4m3, "float", e4m3, "float", "", "Scalar", "Scalar", "Scalar",
        ]),
        json!([[256, 1], [], [256, 1], [], [], [], [], []]),
        strs(&["", "", "", "", "", "False", "True", "True"]),
    );
    let r = model("hipblaslt_gemm_fp8", &x);
    assert_eq!(r.flops, 2.0 * 128.0 * 512.0 * 256.0);
    assert_eq!(
        (param(&r, "M"), param(&r, "N"), param(&r, "K")),
        (Some("128".into()), Some("512".into()), Some("256".into()))
    );
    assert_eq!(
        r.bytes,
        Some(128.0 * 256.0 + 256.0 * 512.0 + 2.0 * 128.0 * 512.0)
    );
}

#[test]
fn fp4_gemm_counts_packed_operands_and_block_scales() {
    // FP4 A[256, 1024] and B[128, 1024] packed two per byte (K_packed 512), one 1-byte scale
    // per 32 values, bf16 output.
    let (m, n, k) = (256.0, 128.0, 1024.0);
    let fp4 = "c10::Float4_e2m1fn_x2";
    let e8m0 = "c10::Float8_e8m0fnu";
    let x = inputs(
        json!([[256, 512], [256, 32], [128, 512], [128, 32], [], [], [], []]),
        strs(&[fp4, e8m0, fp4, e8m0, "", "Scalar", "Scalar", "Scalar"]),
        json!([[512, 1], [32, 1], [512, 1], [32, 1], [], [], [], []]),
        strs(&["", "", "", "", "", "False", "True", "False"]),
    );
    let r = model("hipblaslt_gemm_fp4", &x);
    assert_eq!(r.flops, 2.0 * m * n * k);
    let scales = (m + n) * (k / 32.0);
    assert_eq!(
        r.bytes,
        Some(m * k / 2.0 + n * k / 2.0 + scales + 2.0 * m * n)
    );
    assert_eq!(r.compute_spec, "matrix_fp4");
    // aiter's a4w4 takes the same operands in NT layout.
    let a4w4 = inputs(
        json!([[256, 512], [128, 512], [256, 32], [128, 32]]),
        strs(&[fp4, fp4, e8m0, e8m0]),
        json!([[], [], [], []]),
        strs(&["", "", "", ""]),
    );
    assert_eq!(model("aiter_gemm_a4w4", &a4w4).bytes, r.bytes);
}

#[test]
fn aiter_and_vllm_gemms_take_n_major_weights() {
    // gemm_a8w8_blockscale(x[32, 7168], w[4096, 7168], ...): a decode-sized FP8 GEMM whose bytes
    // are dominated by the weight.
    let e4m3 = "c10::Float8_e4m3fnuz";
    let x = inputs(
        json!([[32, 7168], [4096, 7168], [32, 56], [32, 56]]),
        strs(&[e4m3, e4m3, "float", "float"]),
        json!([[], [], [], []]),
        strs(&["", "", "", ""]),
    );
    let r = model("gemm_a8w8_blockscale", &x);
    assert_eq!(r.flops, 2.0 * 32.0 * 4096.0 * 7168.0);
    assert_eq!(
        r.bytes,
        Some(32.0 * 7168.0 + 4096.0 * 7168.0 + 2.0 * 32.0 * 4096.0)
    );
    // rocm_unquantized_gemm(x[4, 16, 2048], w[512, 2048]): leading dims fold into M = 64.
    let v = inputs(
        json!([[4, 16, 2048], [512, 2048], []]),
        strs(&["c10::BFloat16", "c10::BFloat16", ""]),
        json!([[], [], []]),
        strs(&["", "", ""]),
    );
    let r = model("vllm_rocm_unquantized_gemm", &v);
    assert_eq!(r.flops, 2.0 * 64.0 * 512.0 * 2048.0);
    assert_eq!(
        r.bytes,
        Some(2.0 * (64.0 * 2048.0 + 512.0 * 2048.0 + 64.0 * 512.0))
    );
    // A weight whose K disagrees is not guessed at.
    let bad = inputs(
        json!([[64, 2048], [512, 1024]]),
        strs(&["c10::BFloat16", "c10::BFloat16"]),
        json!([[], []]),
        strs(&["", ""]),
    );
    assert!(forward("gemm_a16w16", "", &bad, &[]).is_none());
}

#[test]
fn grouped_gemm_reads_every_expert_weight_once() {
    // 8 experts, 4096 routed tokens of hidden 2048, expert width 1408, bf16:
    // 2·M·K·N FLOPs; reads X and all G·K·N weights, writes M·N.
    let (m, k, n, g) = (4096.0, 2048.0, 1408.0, 8.0);
    let bf = "c10::BFloat16";
    let want_bytes = (m * k + g * k * n) * 2.0 + m * n * 2.0;
    for w in [json!([8, 2048, 1408]), json!([8, 1408, 2048])] {
        let x = inputs(
            json!([[4096, 2048], w, [8]]),
            strs(&[bf, bf, "long int"]),
            json!([[], [], []]),
            strs(&["", "", ""]),
        );
        let r = model("primus_turbo_grouped_gemm", &x);
        assert_eq!(r.flops, 2.0 * m * k * n);
        assert_eq!(r.bytes, Some(want_bytes));
        assert_eq!(r.compute_spec, "matrix_bf16");
    }
}

#[test]
fn rope_cross_entropy_and_causal_conv1d() {
    // RoPE on x[2048, 4, 16, 128] bf16: 3 FLOPs per element, read + write.
    let n = 2048.0 * 4.0 * 16.0 * 128.0;
    let rope = inputs(
        json!([[2048, 4, 16, 128], [2048, 1, 1, 128]]),
        strs(&["c10::BFloat16", "float"]),
        json!([[], []]),
        strs(&["", ""]),
    );
    let r = model("fused_rope_fwd", &rope);
    assert_eq!((r.flops, r.bytes), (3.0 * n, Some(2.0 * n * 2.0)));
    // Cross entropy over logits[8, 1, 32000] fp32: 5 FLOPs per logit; logits + int64 targets
    // + fp32 losses.
    let ce = inputs(
        json!([[8, 1, 32000], [8]]),
        strs(&["float", "long int"]),
        json!([[], []]),
        strs(&["", ""]),
    );
    let r = model("cross_entropy_fwd", &ce);
    assert_eq!(r.flops, 5.0 * 8.0 * 32000.0);
    assert_eq!(r.bytes, Some(8.0 * 32000.0 * 4.0 + 8.0 * 8.0 + 4.0 * 8.0));
    assert_eq!(r.compute_spec, "vector_fp32");
    // Depthwise causal conv1d x[2, 1536, 4096] with w[1536, 4] and a bias: 2·k FLOPs per
    // output; reads x, w, bias, writes the output.
    let conv = inputs(
        json!([[2, 1536, 4096], [1536, 4], [1536]]),
        strs(&["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"]),
        json!([[], [], []]),
        strs(&["", "", ""]),
    );
    let r = model("causal_conv1d_fwd", &conv);
    let (b, c, l, k) = (2.0, 1536.0, 4096.0, 4.0);
    assert_eq!(r.flops, 2.0 * b * c * l * k);
    assert_eq!(r.bytes, Some((2.0 * b * c * l + c * k + c) * 2.0));
}

#[test]
fn a_grouped_gemm_in_a_trace_gets_its_sheet_and_unified_row() {
    let bf = "c10::BFloat16";
    let args = json!({"Input Dims": [[4096, 2048], [8, 2048, 1408], [8]],
        "Input type": [bf, bf, "long int"], "Input Strides": [[2048, 1], [2883584, 1408, 1], [1]],
        "Concrete Inputs": ["", "", ""], "External id": 7, "Sequence number": 3});
    let trace = json!({"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "primus_turbo::grouped_gemm", "pid": 1, "tid": 1, "ts": 0, "dur": 50, "args": args},
        {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 1, "tid": 1, "ts": 1, "dur": 2, "args": {"correlation": 5}},
        {"ph": "X", "cat": "kernel", "name": "ck_grouped_gemm_kernel", "pid": 0, "tid": 7, "ts": 4, "dur": 400,
         "args": {"correlation": 5, "stream": 7, "device": 0}},
    ]});
    let a = jarvis_engine::analyze(trace.to_string().as_bytes()).expect("analyzes");
    let sheet = a
        .report
        .sheet("GroupedGEMM_fwd")
        .expect("GroupedGEMM_fwd sheet");
    assert_eq!(sheet.rows.len(), 1);
    let gflops = 2.0 * 4096.0 * 2048.0 * 1408.0 / 1e9;
    let col = sheet.column("GFLOPS_first").expect("GFLOPS_first");
    assert!((sheet.rows[0][col].as_f64().expect("gflops") - gflops).abs() < 1e-9);
    let u = a.report.sheet("unified_perf_summary").expect("unified");
    let (name, g) = (u.column("name").expect("n"), u.column("GFLOPS").expect("g"));
    let row = u
        .rows
        .iter()
        .find(|r| r[name].as_str() == Some("primus_turbo::grouped_gemm"))
        .expect("row");
    assert!((row[g].as_f64().expect("gflops") - gflops).abs() < 1e-9);
    // 23.6 GFLOP in 400 µs.
    let t = u.column("TFLOPS/s_mean").expect("t");
    assert!((row[t].as_f64().expect("tflops") - gflops / 1e3 / 400e-6).abs() < 1e-6);
}

#[test]
fn fused_moe_reads_only_the_experts_tokens_route_to() {
    // fmoe_g1u1: 4 tokens of hidden 1024, 64 experts of width 512 (gated: w1 holds gate and
    // up, 1024 rows), top-2 routing, bf16.
    let (m, k, n, e, topk) = (4.0_f64, 1024.0, 512.0, 64.0, 2.0);
    let bf = "c10::BFloat16";
    let x = inputs(
        json!([
            [4, 1024],
            [4, 1024],
            [64, 1024, 1024],
            [64, 1024, 512],
            [],
            [],
            [],
            [],
            []
        ]),
        strs(&[bf, bf, bf, bf, "int", "float", "int", "int", "Scalar"]),
        json!([[], [], [], [], [], [], [], [], []]),
        strs(&["", "", "", "", "", "", "", "", "2"]),
    );
    let r = model("moe_aiter_fused_blockscale", &x);
    // Per token and expert: gate and up (2·2·K·N), down (2·K·N); then topk outputs summed.
    assert_eq!(
        r.flops,
        m * topk * (4.0 * k * n + 2.0 * k * n) + m * k * (2.0 * topk - 1.0)
    );
    // 4 tokens × 2 experts of 64: the expected number of distinct experts hit.
    let active = e * (1.0 - ((e - topk) / e).powi(4));
    assert!(active > 7.5 && active < 8.0, "{active}");
    let want = m * k * 2.0 + active * (2.0 * n * k + n * k) * 2.0 + m * k * 2.0;
    assert!((r.bytes.expect("bytes") - want).abs() < 1e-6 * want);
    assert_eq!(param(&r, "gated").as_deref(), Some("True"));
}

#[test]
fn deviation_d9_triton_kernels() {
    let bf = "c10::BFloat16";
    // triton_poi_fused__unsafe_view_mul_silu_2(x[8, 4096, 8192], y[32768, 8192], xnumel) from
    // the shared mi300x torch.compile trace: silu(x)·y is 4 + 1 FLOPs per element (the view is
    // free): 5 · 268435456 = 1.34217728 GFLOPs, TraceLens's figure.
    let poi = inputs(
        json!([[8, 4096, 8192], [32768, 8192], []]),
        strs(&[bf, bf, "Scalar"]),
        json!([[], [], []]),
        strs(&["", "", "268435456"]),
    );
    let r = forward(
        "TritonCompiledPerfModel",
        "triton_poi_fused__unsafe_view_mul_silu_2",
        &poi,
        &[],
    )
    .expect("modelled");
    assert_eq!(r.gflops(), 1.34217728);
    assert_eq!(
        param(&r, "fused_ops").as_deref(),
        Some("aten._unsafe_view, aten.mul, aten.silu")
    );
    // Bytes: each argument once, 2 × 512 MiB. TraceLens reads the kernel source from the
    // Inductor cache and counts the in-place argument twice (1536 MiB); the trace cannot say
    // which argument that is.
    assert_eq!(r.bytes, Some(2.0 * 8.0 * 4096.0 * 8192.0 * 2.0));
    assert_eq!(r.compute_spec, "vector_bf16");
    // The RMSNorm reduction: add 1 + mean 2 + mul 1 + pow 1 + rsqrt 2 = 7 FLOPs per element of
    // xnumel × rnumel = 32768 × 2048: 0.469762048 GFLOPs, and each argument once, as TraceLens
    // (256.00390625 MiB).
    let red = inputs(
        json!([[8, 4096, 2048], [2048], [8, 4096, 2048], [], []]),
        strs(&[bf, bf, bf, "Scalar", "Scalar"]),
        json!([[], [], [], [], []]),
        strs(&["", "", "", "32768", "2048"]),
    );
    let r = forward(
        "TritonCompiledPerfModel",
        "triton_red_fused_add_mean_mul_pow_rsqrt_0",
        &red,
        &[],
    )
    .expect("modelled");
    assert_eq!(r.gflops(), 0.469762048);
    assert_eq!(r.data_moved_mb(), 256.00390625);
    // A bool argument has no defined size: FLOPs still, bytes unknown rather than zero.
    let masks = inputs(
        json!([[888], [888], [888], [], []]),
        strs(&["int", "long int", "bool", "Scalar", "Scalar"]),
        json!([[], [], [], [], []]),
        strs(&["", "", "", "0", "888"]),
    );
    let r = forward(
        "TritonCompiledPerfModel",
        "triton_poi_fused_add_ge_lt_mul_sub_0",
        &masks,
        &[],
    )
    .expect("modelled");
    assert_eq!(r.flops, 5.0 * 888.0);
    assert_eq!(r.bytes, None);
}

/// SGLang decode attention over a paged KV cache (32 requests, 32785 keys each, GQA 32/8 heads,
/// d 128): QK^T and PV are 2·d FLOPs per (query, key) pair and head each; bytes are Q, K, V and
/// output of the 32 new tokens plus every cached key and value read once.
#[test]
fn paged_decode_attention_from_the_iteration_annotation() {
    let mut x = inputs(
        json!([
            [32, 32, 128],
            [10905190400i64],
            [32, 32, 128],
            [835874, 1, 8, 128],
            [835874, 1, 8, 128]
        ]),
        json!([
            "c10::BFloat16",
            "c10::BFloat16",
            "c10::BFloat16",
            "c10::BFloat16",
            "c10::BFloat16"
        ]),
        json!([]),
        json!([]),
    );
    x.iteration = jarvis_engine::perf::inference::Iteration::parse(
        "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk32785sqsq32sqsk32785)",
    );
    let m = forward(
        "aiter_paged_attention_ragged",
        "sglang_profiler::attention_paged_attention_ragged",
        &x,
        &[],
    )
    .expect("modelled");
    // 32 heads · (2·32785·128 + 2·32785·128) summed over the 32 queries' keys.
    assert_eq!(m.flops, 32.0 * (4.0 * 32785.0 * 128.0));
    // Q, K, V, O of 32 tokens: 32·(4096 + 4096 + 1024 + 1024); cached K and V: (32785 − 32)·8·256.
    let elems = 32.0 * 10240.0 + (32785.0 - 32.0) * 8.0 * 256.0;
    assert_eq!(m.bytes, Some(2.0 * elems));
    assert_eq!(m.compute_spec, "matrix_bf16");
    // Without the annotation there are no token counts: no model.
    x.iteration = None;
    assert!(forward("aiter_paged_attention_ragged", "x", &x, &[]).is_none());
}

/// aiter's fused residual add + RMSNorm over (32, 4096) bf16: the add (E FLOPs), the mean of
/// squares and scale per row ((2C + 2) per row) and the weight multiply (2E); it reads x and the
/// residual and writes both (4E elements) plus the weight (C).
#[test]
fn fused_add_rmsnorm() {
    let x = inputs(
        json!([[32, 4096], [32, 4096], [32, 4096], [32, 4096], [4096], []]),
        json!([
            "c10::BFloat16",
            "c10::BFloat16",
            "c10::BFloat16",
            "c10::BFloat16",
            "c10::BFloat16",
            "Scalar"
        ]),
        json!([[4096, 1], [4096, 1], [4096, 1], [4096, 1], [1], []]),
        json!(["", "", "", "", "", "1e-06"]),
    );
    let m = forward(
        "aiter_rmsnorm2d_fwd_with_add_ck",
        "aiter::add_rmsnorm",
        &x,
        &[],
    )
    .expect("modelled");
    let e = 32.0 * 4096.0;
    assert_eq!(m.flops, e + 32.0 * (2.0 * 4096.0 + 2.0) + 2.0 * e);
    assert_eq!(m.bytes, Some(4.0 * e * 2.0 + 4096.0 * 2.0));
    assert_eq!(m.compute_spec, "vector_bf16");
}

/// SGLang's rotary embedding on 32 tokens of 32 query and 8 key heads of 128: every element of
/// q and k rotated (3 FLOPs), read and written once.
#[test]
fn rotary_embedding_of_queries_and_keys() {
    let x = inputs(
        json!([[32], [32, 4096], [32, 1024], [], [41216, 128], []]),
        json!([
            "long int",
            "c10::BFloat16",
            "c10::BFloat16",
            "Scalar",
            "c10::BFloat16",
            "Scalar"
        ]),
        json!([]),
        json!(["", "", "", "128", "", "True"]),
    );
    let m = forward(
        "sgl_kernel_rotary_embedding",
        "sgl_kernel::rotary_embedding",
        &x,
        &[],
    )
    .expect("modelled");
    let n = 32.0 * (32.0 + 8.0) * 128.0;
    assert_eq!(m.flops, 3.0 * n);
    assert_eq!(m.bytes, Some(2.0 * n * 2.0));
}

/// An autograd node records no shapes, so TraceLens's sheet groups all its calls under one row
/// with the first call's model; Jarvis's rows split it by the forward each call was linked to
/// (suite 12 c06: 96 SDPA backward calls of eight shapes under one cross-attention shape).
#[test]
fn an_autograd_nodes_calls_are_split_by_their_forwards_signatures() {
    let bf = "c10::BFloat16";
    // Self-attention (4096 keys) and cross-attention (77 keys), both d = 40.
    let fwd = |kv: u32, seq: u32, ts: u32, corr: u32| {
        json!([
            {"ph": "X", "cat": "cpu_op", "name": "aten::_scaled_dot_product_flash_attention", "pid": 1, "tid": 1, "ts": ts, "dur": 20,
             "args": {"Input Dims": [[64, 8, 4096, 40], [64, 8, kv, 40], [64, 8, kv, 40], [], [], [], []],
                      "Input type": [bf, bf, bf, "Scalar", "Scalar", "Scalar", ""],
                      "Input Strides": [[], [], [], [], [], [], []],
                      "Concrete Inputs": ["", "", "", "0.", "False", "False", ""], "Sequence number": seq}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts + 1, "dur": 2, "args": {"correlation": corr}},
            {"ph": "X", "cat": "kernel", "name": "attn_fwd", "pid": 0, "tid": 7, "ts": ts + 5, "dur": 100, "args": {"correlation": corr, "stream": 7, "device": 0}},
        ])
    };
    let bwd = |seq: u32, ts: u32, dur: u32, corr: u32| {
        json!([
            {"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: ScaledDotProductFlashAttentionBackward0", "pid": 1, "tid": 2, "ts": ts, "dur": 30, "args": {"Sequence number": seq}},
            {"ph": "X", "cat": "cpu_op", "name": "ScaledDotProductFlashAttentionBackward0", "pid": 1, "tid": 2, "ts": ts + 1, "dur": 28, "args": {"Sequence number": seq}},
            {"ph": "X", "cat": "cpu_op", "name": "aten::_scaled_dot_product_flash_attention_backward", "pid": 1, "tid": 2, "ts": ts + 2, "dur": 26, "args": {}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": ts + 3, "dur": 2, "args": {"correlation": corr}},
            {"ph": "X", "cat": "kernel", "name": "bwd_kernel_dk_dv", "pid": 0, "tid": 7, "ts": ts + 10, "dur": dur, "args": {"correlation": corr, "stream": 7, "device": 0}},
        ])
    };
    let mut events = Vec::new();
    for part in [
        fwd(4096, 1, 0, 1),
        fwd(77, 2, 200, 2),
        fwd(4096, 3, 400, 3),
        bwd(3, 1000, 300, 4),
        bwd(2, 1400, 20, 5),
        bwd(1, 1800, 310, 6),
    ] {
        events.extend(part.as_array().expect("events").iter().cloned());
    }
    let trace = json!({"traceEvents": events});
    let a = jarvis_engine::analyze(trace.to_string().as_bytes()).expect("analyzes");
    const NODE: &str = "ScaledDotProductFlashAttentionBackward0";
    // TraceLens's sheet: one row of three calls.
    let u = a.report.sheet("unified_perf_summary").expect("unified");
    let (name, count) = (
        u.column("name").expect("n"),
        u.column("operation_count").expect("c"),
    );
    let sheet_rows: Vec<_> = u
        .rows
        .iter()
        .filter(|r| r[name].as_str() == Some(NODE))
        .collect();
    assert_eq!(sheet_rows.len(), 1);
    assert_eq!(sheet_rows[0][count].as_f64(), Some(3.0));
    // Jarvis's rows: one per forward signature, each with its own calls, time and model.
    let st = a.standalone.as_ref().expect("standalone");
    // The split row stays in its place (the rows are indexed as the sheet's) with no calls.
    let parent: Vec<_> = st.rows.iter().filter(|r| r.split_into > 0).collect();
    assert_eq!(parent.len(), 1);
    assert_eq!((parent[0].split_into, parent[0].count), (2, 0));
    let mut rows: Vec<_> = st
        .rows
        .iter()
        .filter(|r| r.name == NODE && r.split_into == 0)
        .collect();
    rows.sort_by_key(|r| r.param("N_KV"));
    let got: Vec<(Option<i64>, u64, f64)> = rows
        .iter()
        .map(|r| (r.param("N_KV"), r.count, r.kernel_us))
        .collect();
    assert_eq!(got, vec![(Some(77), 1, 20.0), (Some(4096), 2, 610.0)]);
    // Each part's FLOPs are its shape's: the self-attention part does 4096/77 times the
    // cross-attention part's work.
    let (cross, own) = (
        rows[0].gflops.expect("gflops"),
        rows[1].gflops.expect("gflops"),
    );
    assert!(
        (own / cross - 4096.0 / 77.0).abs() < 1e-6,
        "{own} / {cross}"
    );
    // Each part is numbered after the sheet's rows and exported with its own cells.
    assert!(rows.iter().all(|r| r.row >= u.rows.len()));
    assert!(st.rows.iter().enumerate().all(|(i, r)| r.row == i));
    assert_eq!(st.by_signature.len(), 2);
}
