//! The workload's identity (docs/analysis.md, "The workload"): model, architecture, scale,
//! precision and mode read by rules, checked against a generated trace whose model is known
//! and against real traces whose models are public (BERT-small, ResNet-18).

mod common;

use jarvis_engine::report::contract::standalone_files;
use jarvis_engine::standalone::workload::{Mode, Workload, UNKNOWN};
use jarvis_engine::synth::{trace_bytes, SynthPlatform, SynthSpec};
use jarvis_engine::{analyze_trace_with, import, Analysis, Options};

fn analyze(bytes: &[u8]) -> Analysis {
    let trace = import::import_bytes(bytes).expect("trace imports");
    analyze_trace_with(trace, &Options::default())
}

fn workload(a: &Analysis) -> &Workload {
    &a.standalone.as_ref().expect("standalone analysis").workload
}

fn shared_trace(name: &str) -> Option<Analysis> {
    let dir = common::shared_dir()?;
    Some(analyze(&common::read(
        &dir.join("traces/tracelens").join(name),
    )))
}

#[test]
fn generated_transformer_is_identified_with_its_exact_size() {
    let spec = SynthSpec {
        platform: SynthPlatform::H100,
        steps: 2,
        ..SynthSpec::default()
    };
    let (bytes, _) = trace_bytes(&spec);
    let a = analyze(&bytes);
    let w = workload(&a);
    let h = spec.hidden;
    // Per block: QKV h×3h, output h×h, MLP up h×4h and down 4h×h = 12h² weights.
    let params = 12 * h * h * u64::from(spec.layers);
    assert_eq!(params, 201_326_592);
    assert_eq!(w.model, "Transformer");
    assert!(
        w.architecture.starts_with("Transformer"),
        "{}",
        w.architecture
    );
    assert_eq!(
        w.scale,
        format!(
            "≈201.3M parameters in {} Linear layers, hidden size {h}, {} × Block, rank 0 of 8 (nccl)",
            4 * spec.layers,
            spec.layers
        )
    );
    assert_eq!(w.precision, "BF16");
    // The generated step runs a backward pass.
    assert_eq!(w.mode, Mode::Training);
    // Every field says where it came from.
    for field in ["model:", "architecture:", "scale:", "precision:", "mode:"] {
        assert!(w.evidence.iter().any(|e| e.starts_with(field)), "{field}");
    }
}

#[test]
fn a_trace_without_module_frames_does_not_name_a_model() {
    // The same generated trace with its nn.Module frames removed.
    let (bytes, _) = trace_bytes(&SynthSpec::default());
    let text = String::from_utf8(bytes).unwrap();
    let stripped = text.replace("\"nn.Module: ", "\"module_removed: ");
    let a = analyze(stripped.as_bytes());
    let w = workload(&a);
    assert_eq!(w.model, UNKNOWN);
    assert_eq!(w.title(), "Workload");
    // The op mix still tells the architecture and the dtypes the precision.
    assert!(
        w.architecture.starts_with("Transformer"),
        "{}",
        w.architecture
    );
    assert_eq!(w.precision, "BF16");
    assert!(!w.scale.contains("Linear layers"), "{}", w.scale);
}

#[test]
fn bert_small_is_a_28_5m_encoder() {
    let Some(a) = shared_trace("h100_gaunernst_bert-small-uncased__1016001.json.gz") else {
        return;
    };
    let w = workload(&a);
    assert_eq!(w.model, "BertLMHeadModel");
    assert_eq!(w.architecture, "Transformer (encoder)");
    // 4 layers × (4·512² + 2·512·2048) + head transform 512² + decoder 512·30522 = 28,472,320;
    // the embedding tables apart: words 30522 × 512, positions 512 × 512, token types 2 × 512
    // = 15,891,456.
    assert_eq!(
        w.scale,
        "≈28.5M parameters in 26 Linear layers, embeddings of 30522 × 512, 512 × 512 and 2 × 512 (15.9M), hidden size 512, 4 × BertLayer"
    );
    assert_eq!(w.precision, "BF16");
    assert_eq!(w.mode, Mode::Inference);
    // Its input, from the word embedding's token ids ([1, 141]); an encoder's attention is no
    // causal prefill.
    assert_eq!(w.input, "batch 1 × 141 tokens");
    assert_eq!(w.mode_text(), "inference (batch 1 × 141 tokens)");
    // The contract's model_info.json holds TraceLens's agent's four fields.
    let files = standalone_files(&a, "bert").unwrap();
    let (_, info) = files
        .iter()
        .find(|(p, _)| p == "metadata/model_info.json")
        .expect("model_info.json");
    let v: serde_json::Value = serde_json::from_slice(info).unwrap();
    assert_eq!(v["model"], "BertLMHeadModel");
    assert_eq!(v["precision"], "BF16");
    assert_eq!(v.as_object().unwrap().len(), 4);
    // The fair report is titled with the model and lists the identity in its appendix.
    let (_, fair) = files
        .iter()
        .find(|(p, _)| p == "standalone_analysis_fair.md")
        .unwrap();
    let fair = String::from_utf8_lossy(fair);
    assert!(fair.starts_with("# BertLMHeadModel - "), "{}", &fair[..80]);
    let appendix = &fair[fair.find("## Appendix").unwrap()..];
    for value in [&w.model, &w.architecture, &w.scale, &w.precision] {
        assert!(appendix.contains(value.as_str()), "{value}");
    }
}

/// HF Qwen1.5-0.5B's prefill: 16 sequences of 559 tokens in one causal forward, no KV cache.
#[test]
fn a_hugging_face_prefill_says_its_batch_and_mode() {
    let Some(a) = shared_trace("h100_Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz") else {
        return;
    };
    assert_eq!(
        workload(&a).input,
        "batch 16 × 559 tokens, prefill: causal attention over whole sequences, no KV cache read"
    );
}

#[test]
fn resnet18_training_is_a_11_7m_cnn() {
    let Some(a) = shared_trace("mi300x_ddp_resnet18_train.json.gz") else {
        return;
    };
    let w = workload(&a);
    assert_eq!(w.model, "ResNet");
    assert_eq!(w.architecture, "CNN");
    // ResNet-18's conv and fc weights: 11,679,912 (torchvision's 11,689,512 less BN and bias);
    // no embedding, no experts.
    assert_eq!(
        w.scale,
        "≈11.7M parameters in 1 Linear layer and 20 convolutions, 8 × BasicBlock"
    );
    assert_eq!(w.mode, Mode::Training);
    // The image batch from the first convolution's input.
    assert!(
        w.input.starts_with("512 images of 3 × ")
            && w.input.ends_with("into the first convolution"),
        "{}",
        w.input
    );
    // Activation checkpointing re-runs the forward: each module instance still counts once.
    let Some(b) = shared_trace("mi300x_resnet_act_checkpoint.json.gz") else {
        return;
    };
    // (Its trace records the job: rank 0 of 8.)
    assert_eq!(
        workload(&b).scale,
        format!("{}, rank 0 of 8 (nccl)", w.scale)
    );
    assert!(
        workload(&b).input.starts_with("10 images of 3 × "),
        "{}",
        workload(&b).input
    );
}

#[test]
fn graph_decode_without_a_model_frame_reads_precision_from_kernel_names() {
    let Some(a) = shared_trace("mi300x_sglang_Qwen3-8B_decode.json.gz") else {
        return;
    };
    let w = workload(&a);
    // Only the sampler is framed: too little of the time to be the model.
    assert_eq!(w.model, UNKNOWN);
    // `paged_attention…<…, __hip_bfloat16, …, Fp8KVCacheDataType)0, …>` is a bf16 kernel.
    assert_eq!(w.precision, "BF16");
}

/// A Mixture-of-Experts model is never described by its attention layers alone: where the
/// fused MoE op records its stacked expert weights they are counted per layer (planted
/// `moe_few_tokens`: `vllm::rocm_aiter_fused_moe` with w1 [128, 3072, 4096] and w2 [128, 4096,
/// 1536]: 128 · (3072·4096 + 4096·1536) = 2,415,919,104), and where it records none (vLLM's
/// `moe_forward` on the B200 gpt-oss trace: hidden states and router logits only) the scale says
/// the expert weights are not counted, beside the embedding table (25136 × 2880, a
/// tensor-parallel shard of gpt-oss's 201,088-token vocabulary).
#[test]
fn moe_expert_weights_are_counted_or_said_not_to_be() {
    let c = jarvis_engine::synth::planted::case("moe_few_tokens").expect("case");
    let a =
        jarvis_engine::analyze(&jarvis_engine::synth::planted::case_bytes(&c)).expect("analysis");
    let w = workload(&a);
    assert!(
        w.scale.contains(
            "128 experts with 2.4B parameters per MoE layer (vllm::rocm_aiter_fused_moe)"
        ),
        "{}",
        w.scale
    );
    let Some(b) = shared_trace("b200_eager_trace.json.gz") else {
        return;
    };
    let w = workload(&b);
    assert!(
        w.scale.contains(
            "expert weights not counted (the fused MoE op records none of them among its inputs)"
        ),
        "{}",
        w.scale
    );
    assert!(
        w.scale.contains("an embedding of 25136 × 2880 (72.4M)"),
        "{}",
        w.scale
    );
    // A serving rank of eight records its shard: the count says so (issue #49 review: "132.7M
    // parameters" for gpt-oss-120b at TP 8).
    assert!(
        w.scale.contains("counted on rank 0 of 8 (one shard"),
        "{}",
        w.scale
    );
}

/// `calls` forward calls of each `(op, input dims, kernel µs)`, without module frames.
fn forward_calls(ops: &[(&str, &str, u32)], calls: usize) -> Vec<u8> {
    let mut ev = Vec::new();
    let (mut t, mut corr) = (0u32, 0u32);
    for _ in 0..calls {
        for (op, dims, us) in ops {
            corr += 1;
            ev.push(format!(r#"{{"ph": "X", "cat": "cpu_op", "name": "{op}", "pid": 1, "tid": 1, "ts": {t}, "dur": 10, "args": {{"Input Dims": {dims}, "Input type": ["c10::BFloat16", "c10::BFloat16"]}}}}"#));
            ev.push(format!(r#"{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": {}, "dur": 5, "args": {{"correlation": {corr}}}}}"#, t + 2));
            ev.push(format!(r#"{{"ph": "X", "cat": "kernel", "name": "kernel_of_{}", "pid": 0, "tid": 7, "ts": {}, "dur": {us}, "args": {{"correlation": {corr}, "stream": 7}}}}"#, op.replace(':', "_"), t + 10));
            t += us + 20;
        }
    }
    format!(r#"{{"traceEvents": [{}]}}"#, ev.join(",\n")).into_bytes()
}

/// A forward-only trace that times one op in a loop is a micro-benchmark of that op, not a
/// model's inference; a forward pass of several ops is not one.
#[test]
fn one_op_timed_in_a_loop_is_a_micro_benchmark() {
    let a = analyze(&forward_calls(
        &[("aten::mm", "[[256, 131072], [131072, 512]]", 1000)],
        10,
    ));
    let w = workload(&a);
    assert_eq!(w.architecture, "Micro-benchmark of aten::mm");
    assert!(w.is_micro_benchmark());
    assert_eq!(
        w.mode_text(),
        "forward only (10 calls of one shape: ((256, 131072), (131072, 512)))"
    );
    let a = analyze(&forward_calls(
        &[
            ("aten::mm", "[[256, 1024], [1024, 1024]]", 100),
            ("aten::add", "[[256, 1024], [256, 1024]]", 20),
            ("aten::gelu", "[[256, 1024]]", 20),
            ("aten::softmax", "[[256, 1024]]", 20),
        ],
        10,
    ));
    let w = workload(&a);
    assert!(!w.is_micro_benchmark(), "{}", w.architecture);
    assert!(w.mode_text().starts_with("inference"), "{}", w.mode_text());
}

/// Without module frames the scale is read off the ops: a compiled Llama-style block's hidden
/// size (the most frequent K of its weight GEMMs) and attention shape (it had read "cannot be
/// inferred"). With module frames, nothing is guessed this way (the unfused-attention agent
/// snapshot's `SelfAttention`, whose only products are attention's, stays unknown).
#[test]
fn the_scale_without_module_frames_comes_from_the_ops() {
    if let Some(a) = shared_trace("mi300x_torch_compile_triton_trace.json.gz") {
        let w = workload(&a);
        assert!(
            w.scale.contains("hidden size 2048")
                && w.scale
                    .contains("attention over batch 8 × 4,096 tokens, 16 heads × 128"),
            "{}",
            w.scale
        );
    }
}

/// A video model's input is its clips, not the frames its first convolution sees folded into
/// one batch (TimeSformer: one clip of 128 frames had read "128 images"); where the longest
/// attention spans several frames' patches (S = k · P + 1), the clip has more frames than the
/// model groups its tokens by, which is said with the factor. Images stay images, and an
/// attention over one frame's patches says nothing.
#[test]
fn a_video_clip_is_read_as_frames_and_frames_merged_into_attention_are_named() {
    // One clip of 8 frames of 3 × 32 × 32, 8 × 8 patches: 16 per frame.
    let run = |clip: bool, tokens: u32| {
        let mut ops = Vec::new();
        if clip {
            ops.push(("aten::view", "[[1, 8, 3, 32, 32], []]", 5));
        }
        let softmax = format!("[[2, 3, {tokens}, {tokens}], [], []]");
        ops.push(("aten::conv2d", "[[8, 3, 32, 32], [16, 3, 8, 8]]", 50));
        ops.push(("aten::_softmax", softmax.as_str(), 20));
        let a = analyze(&forward_calls(&ops, 2));
        workload(&a).input.clone()
    };
    let note = |tokens: u32| {
        let ops = [
            ("aten::view", "[[1, 8, 3, 32, 32], []]", 5),
            ("aten::conv2d", "[[8, 3, 32, 32], [16, 3, 8, 8]]", 50),
            (
                "aten::_softmax",
                if tokens == 33 {
                    "[[2, 3, 33, 33], [], []]"
                } else {
                    "[[2, 3, 17, 17], [], []]"
                },
                20,
            ),
        ];
        workload(&analyze(&forward_calls(&ops, 2)))
            .input_note
            .clone()
    };
    // The excess is said before every kernel finding (review 14), and only where it is.
    assert!(
        note(33).starts_with(
            "The input first: the clip has 8 frames, and its attention spans 33 tokens"
        ),
        "{}",
        note(33)
    );
    assert_eq!(note(17), "");
    // 33 tokens = 2 frames × 16 patches + 1: the model groups tokens by 4 frames.
    let input = run(true, 33);
    assert!(
        input.starts_with("1 video clip of 8 frames of 3 × 32 × 32 (folded into 8 images for the first convolution), its attention spans 33 tokens = 2 frames × 16 patches + 1: the model splits a clip's tokens by its configured frame count, 4, so 8 frames make 4 groups of 2 frames"),
        "{input}"
    );
    // One frame's patches per attention: no note.
    let input = run(true, 17);
    assert!(
        input.starts_with("1 video clip of 8 frames") && !input.contains("attention spans"),
        "{input}"
    );
    // No clip tensor: images.
    assert!(
        run(false, 33).starts_with("8 images of 3 × 32 × 32 into the first convolution"),
        "{}",
        run(false, 33)
    );
}

/// TraceLens's normalization fixture is named a layer test (ten single norm layers under one
/// `Net`), said first in the summary, and a ResNet (blocks with children) is not (review 16:
/// "Net, architecture unknown").
#[test]
fn a_suite_of_single_norm_layers_is_a_layer_test() {
    let Some(a) = shared_trace("mi300x_normalization_layer_test.json.gz") else {
        return;
    };
    let w = workload(&a);
    assert!(
        w.architecture
            .starts_with("Layer test: 10 normalization layers side by side")
            && w.input_note
                .starts_with("A layer test, not a model: Net runs 10"),
        "{} / {}",
        w.architecture,
        w.input_note
    );
    // Its idle is the test loop's: Low, and said so (review 25, R8).
    let st = a.standalone.as_ref().expect("standalone");
    let idle = (st.categories.iter())
        .flat_map(|c| &c.bottlenecks)
        .find(|b| b.title == "GPU idle time")
        .expect("idle finding");
    assert_eq!(
        idle.priority,
        jarvis_engine::standalone::rules::Priority::Low
    );
    assert!(
        idle.issue
            .contains("This trace is a layer test: the idle is its loop's"),
        "{}",
        idle.issue
    );
    let Some(r) = shared_trace("mi300x_ddp_resnet18_train.json.gz") else {
        return;
    };
    assert!(!workload(&r).architecture.contains("Layer test"));
    let st = r.standalone.as_ref().expect("standalone");
    assert!((st.categories.iter())
        .flat_map(|c| &c.bottlenecks)
        .all(|b| !b.issue.contains("This trace is a layer test")));
}

/// An output head no Linear module runs (SGLang's Qwen3-8B: `aten::mm` 4096 → 151936 as a bare
/// GEMM) is named in the scale beside the embedding; a Hugging Face model's `lm_head` Linear is
/// in the Linear count and not named twice (review 16: "≈6.9B" for an 8.2B model).
#[test]
fn an_output_head_outside_every_linear_is_counted() {
    let Some(dir) = common::shared_dir() else {
        return;
    };
    let a = analyze(&common::read(&dir.join(
        "traces/tracelens_inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz",
    )));
    let scale = &workload(&a).scale;
    assert!(
        scale.contains("an output head of 151936 × 4096 (622.3M) run as a bare GEMM"),
        "{scale}"
    );
    let Some(hf) = shared_trace("h100_Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz") else {
        return;
    };
    assert!(
        !workload(&hf).scale.contains("output head"),
        "{}",
        workload(&hf).scale
    );
}

/// Inference read from the absence of a backward pass over a handful of recorded op calls is
/// said to be a guess (review 20: HTA's trimmed DDP step, two recorded calls beside a gradient
/// bucket's all-reduce, had read plain "inference"); a model's forward is not hedged.
#[test]
fn inference_from_a_few_calls_is_a_guess() {
    let Some(dir) = common::shared_dir() else {
        return;
    };
    let a = analyze(&common::read(
        &dir.join("traces/hta/trace_compare_base.json.gz"),
    ));
    let w = workload(&a);
    assert_eq!(w.mode, Mode::Inference);
    assert_eq!(
        w.mode_text(),
        "inference (a guess: no backward op among the 2 op calls the trace records)"
    );
    let Some(bert) = shared_trace("h100_gaunernst_bert-small-uncased__1016001.json.gz") else {
        return;
    };
    assert!(!workload(&bert).mode_text().contains("a guess"));
}

/// Hugging Face's `Conv1D` (GPT-2's attention and MLP projections) is a Linear layer whose
/// `addmm(bias, x, weight)` holds its weight third: one Linear layer of 768 × 2304, not a
/// convolution of the activation's size.
#[test]
fn a_transposed_linear_named_conv1d_is_a_linear_layer() {
    use jarvis_engine::synth::planted::{case_bytes, cases, Group, PlantedCase};
    let mut op = cases()[0].ops[0].clone();
    op.name = "aten::addmm".into();
    op.dims = "[[2304], [1024, 768], [768, 2304], [], []]".into();
    op.types =
        "[\"c10::BFloat16\", \"c10::BFloat16\", \"c10::BFloat16\", \"Scalar\", \"Scalar\"]".into();
    op.strides = String::new();
    op.concrete = String::new();
    op.calls = 4;
    let c = PlantedCase {
        name: "conv1d",
        device: "NVIDIA H100 80GB HBM3",
        ops: vec![op],
        planted: None,
        key_numbers: Vec::new(),
        group: Some(Group::Module("Conv1D")),
    };
    let a = analyze(&case_bytes(&c));
    let w = workload(&a);
    assert!(
        w.scale.starts_with("≈1.8M parameters in 1 Linear layer"),
        "{}",
        w.scale
    );
    assert!(!w.scale.contains("convolution"), "{}", w.scale);
}

/// Parameters counted per module instance: two weights of different sizes under one frame name
/// are two layers (a generated trace reused `Linear_3` across layers, held-out suite 6: 104 of
/// 129 Linear layers counted), and tables of one shape as many as the `EmbeddingBag` instances
/// that look one up (a DLRM's twenty 200000 × 128 tables had been counted once).
#[test]
fn parameters_count_every_instance() {
    use jarvis_engine::synth::planted::{case_bytes, cases, Group, PlantedCase};
    let mut first = cases()[0].ops[0].clone();
    first.name = "aten::linear".into();
    first.dims = "[[1024, 768], [2304, 768], [2304]]".into();
    first.types = "[\"c10::BFloat16\", \"c10::BFloat16\", \"c10::BFloat16\"]".into();
    first.strides = String::new();
    first.concrete = String::new();
    first.calls = 2;
    let mut second = first.clone();
    second.dims = "[[1024, 768], [768, 768], [768]]".into();
    let c = PlantedCase {
        name: "instances",
        device: "NVIDIA H100 80GB HBM3",
        ops: vec![first, second],
        planted: None,
        key_numbers: Vec::new(),
        group: Some(Group::Module("Linear")),
    };
    let bytes = String::from_utf8(case_bytes(&c)).expect("utf8");
    // Three EmbeddingBag instances of one table shape, after the GEMMs.
    let bags: Vec<String> = (0..3)
        .map(|i| {
            let ts = 10_000_000 + i * 1000;
            format!(
                r#"{{"ph":"X","cat":"python_function","name":"nn.Module: EmbeddingBag_{i}","pid":1,"tid":1,"ts":{ts},"dur":100,"args":{{"Python id":{},"Python parent id":0,"Python thread":0}}}},
{{"ph":"X","cat":"cpu_op","name":"aten::embedding_bag","pid":1,"tid":1,"ts":{},"dur":50,"args":{{"External id":{},"Input Dims":[[200000,128],[4096],[512]],"Input type":["float","long int","long int"]}}}}"#,
                100 + i,
                ts + 10,
                90_000 + i
            )
        })
        .collect();
    let bytes = bytes.replacen(
        "\"traceEvents\": [",
        &format!("\"traceEvents\": [{},", bags.join(",")),
        1,
    );
    let a = analyze(bytes.as_bytes());
    let w = workload(&a);
    assert!(
        w.scale.starts_with("≈2.4M parameters in 2 Linear layers"),
        "{}",
        w.scale
    );
    assert!(
        w.scale
            .contains("embeddings of 3 tables of 200000 × 128 (76.8M)"),
        "{}",
        w.scale
    );
}

/// Child modules numbered per parent (each expert's `Linear_0`) are distinct layers: two
/// experts with a [1024, 512] weight each are 2 Linear layers and 1.0M parameters (held-out
/// suite 12's c07: 5,184 expert Linears had read as 389, a 16B model as 1.8B).
#[test]
fn children_numbered_per_parent_are_distinct_layers() {
    let mut ev = Vec::new();
    for k in 0..2u32 {
        let t = 100 + k * 1000;
        ev.push(format!(r#"{{"ph":"X","cat":"python_function","name":"nn.Module: Expert_{k}","pid":1,"tid":1,"ts":{t},"dur":500}}"#));
        ev.push(format!(r#"{{"ph":"X","cat":"python_function","name":"nn.Module: Linear_0","pid":1,"tid":1,"ts":{},"dur":400}}"#, t + 10));
        ev.push(format!(r#"{{"ph":"X","cat":"cpu_op","name":"aten::linear","pid":1,"tid":1,"ts":{},"dur":100,"args":{{"External id":{k},"Input Dims":[[64, 512], [1024, 512], []],"Input type":["c10::BFloat16","c10::BFloat16",""]}}}}"#, t + 20));
        ev.push(format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{},"dur":5,"args":{{"correlation":{}}}}}"#, t + 30, 10 + k));
        ev.push(format!(r#"{{"ph":"X","cat":"kernel","name":"nvjet_tst_64x8_64x16_4x1_v_bz_TNT","pid":0,"tid":7,"ts":{},"dur":20,"args":{{"correlation":{},"device":0,"stream":7}}}}"#, t + 40, 10 + k));
    }
    let doc = format!(
        r#"{{"deviceProperties":[{{"id":0,"name":"NVIDIA H100 80GB HBM3","totalGlobalMem":85899345920,"numSms":132}}],"traceEvents":[{}]}}"#,
        ev.join(",")
    );
    let a = analyze(doc.as_bytes());
    let w = workload(&a);
    assert!(
        w.scale.starts_with("≈1.0M parameters in 2 Linear layers"),
        "{}",
        w.scale
    );
}
