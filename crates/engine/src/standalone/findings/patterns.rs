//! Pattern findings: fusion candidates, unfused attention, layout transposes, layout copies
//! feeding GEMMs and short kernels
//! found in the call tree, filed under their seed category; collectives' notes.

use super::links::{bus_factor, spans_nodes, NIC_GBPS, NODE_GPUS};
use super::timeline::timeline_bottleneck;
use super::*;
use crate::standalone::collective_roles::CollectiveRole;

/// Layout copies inside GEMM callers become a finding at this share of those GEMMs' time.
pub const GEMM_COPY_MIN_PCT: f64 = 5.0;

#[allow(clippy::too_many_arguments)]
pub(super) fn pattern_bottleneck(
    category: SeedCategory,
    ops: &[&str],
    title: String,
    time_ms: f64,
    issue: String,
    path_a: &str,
    path_b: &str,
    kind: ProjectionKind,
    projection: Vec<Projection>,
    inp: &Inputs<'_>,
) -> Bottleneck {
    let share = inp.share(time_ms);
    // The seeds cross-reference bottlenecks with the top operations; a pattern counts as in
    // them when one of its ops is.
    let in_top = inp.top_op_names.iter().any(|t| {
        ops.iter()
            .any(|o| o == t || (*o == "conv" && t.contains("conv")))
    });
    Bottleneck {
        category,
        title,
        op_name: String::new(),
        row: None,
        time_ms,
        share_pct: share,
        share_of: "compute",
        steps_ms: None,
        efficiency_pct: None,
        efficiency_basis: String::new(),
        issue,
        path_a: path_a.to_owned(),
        path_b: path_b.to_owned(),
        pattern: true,
        in_top_ops: in_top,
        category_priority: rules::category_priority(share, None, true),
        priority: rules::overall_priority(in_top, share, None, true),
        projection_kind: kind,
        projection,
        replay: false,
        causes: Vec::new(),
        impact: Impact::default(),
        scope: None,
        absorbed: Vec::new(),
        fix: Vec::new(),
        merged_host: Vec::new(),
        also_cuts: Vec::new(),
        in_fragment: false,
        optional: false,
        guess: false,
        inherent_gaps: false,
        above_floor: 1.0,
        tuned_library_kernel: false,
        reach_share: None,
    }
}

/// "`aten::pow` ×24, `aten::mean` ×24" and the op names, for a pattern's text and its
/// cross-reference with the top operations.
pub(super) fn op_list(ops: &[crate::standalone::patterns::OpShare]) -> (String, Vec<&str>) {
    let text: Vec<String> = ops
        .iter()
        .map(|o| format!("{} ×{}", code(&o.name), o.kernels))
        .collect();
    (
        text.join(", "),
        ops.iter().map(|o| o.name.as_str()).collect(),
    )
}

pub(super) fn scope_of(
    class: Option<&str>,
    instances: u64,
    ops: &[crate::standalone::patterns::OpShare],
    unfused_attention: bool,
) -> super::merge::Scope {
    super::merge::Scope {
        class: class.map(str::to_owned),
        ops: ops.iter().map(|o| (o.name.clone(), o.ms)).collect(),
        instances,
        unfused_attention,
        sdpa_math: false,
        mha: false,
        subtracts: false,
    }
}

/// A second function of a per-item loop already found: its kernels, and the host time of the
/// ops that go with them, join the loop's finding and its replayed fix.
fn fold_into_loop(
    first: &mut Bottleneck,
    b: Bottleneck,
    c: &crate::standalone::patterns::FusionCandidate,
) {
    first.issue.push_str(&format!(
        " Each item also calls {} ({} kernels over {} calls, {:.3} ms), part of the same loop.",
        code(&c.class),
        c.kernels,
        c.instances,
        c.all_ms()
    ));
    for (verb, sel) in b.fix {
        let Some((kind, rest)) = sel.split_once(':') else {
            continue;
        };
        let (ids, factor) = rest
            .split_once('=')
            .map_or((rest, None), |(i, f)| (i, Some(f)));
        match first.fix.iter_mut().find(|(v, s)| {
            *v == verb
                && s.split_once(':')
                    .is_some_and(|(k, r)| k == kind && r.split_once('=').map(|x| x.1) == factor)
        }) {
            Some((_, s)) => {
                let (head, tail) = match s.split_once('=') {
                    Some((h, t)) => (h.to_owned(), format!("={t}")),
                    None => (s.clone(), String::new()),
                };
                *s = format!("{head},{ids}{tail}");
            }
            None => first.fix.push((verb, sel)),
        }
    }
    first.time_ms += b.time_ms;
}

/// An unfused function called once per item from a Python loop (`standalone::item_loops`):
/// the loop is the mechanism, vectorising it the fix (held-out suite 12's c05: a per-request
/// penalty, 96 calls a step, had been told to fuse each call).
fn per_item_loop(
    b: &mut Bottleneck,
    c: &crate::standalone::patterns::FusionCandidate,
    l: &crate::standalone::item_loops::ItemLoop,
) {
    // The per-item function's short name (`penalty` of `serve.py(41): penalty`).
    let item = l.item.rsplit_once("): ").map_or(l.item.as_str(), |x| x.1);
    let item = code(item);
    b.title = format!(
        "Python loop over {:.0} items: {item} called once per item",
        l.items
    );
    b.issue = format!(
        "{} calls {item} {:.0} times a call ({} calls), once per item of a batch, each item launching at least {:.0} small kernels of its own data: the loop, not the kernels' work, sets the time (every item pays its Python iteration, its launches and each kernel's fixed cost on the GPU, one item after another). {}",
        code(&short(&l.frame, 90)),
        l.items,
        l.calls,
        c.kernels as f64 / (l.items * l.calls as f64).max(1.0),
        b.issue
    );
    b.path_a = format!(
        "Vectorise the loop over its items: apply {item} to the whole batch at once (the rows as one [N, …] tensor, per-item scalars as an [N, 1] tensor, per-item index lists flattened with offsets or padded, masks instead of branches), so each op launches once per call of the loop instead of once per item. Fusing one item's kernels (`torch.compile` of the function, a Triton kernel) still leaves N launches and N Python iterations."
    );
    b.path_b = "Not a kernel issue: each kernel works on one item's data, too little to fill the GPU; batching the items gives each kernel the whole batch.".into();
    b.causes.push(pattern_parts::named(
        "per_item_python_loop",
        format!("{item} called once per item from a Python loop"),
        format!(
            "{} calls it {:.0} times a call ({} calls)",
            code(&short(&l.frame, 90)),
            l.items,
            l.calls
        ),
        &b.path_a.clone(),
        Confidence::High,
    ));
}

pub(super) fn add_patterns(f: &mut CategoryFindings, inp: &Inputs<'_>) {
    let compute = inp.compute_ms();
    let p = inp.patterns;
    // Recomputation spans categories: it is stated once, under its largest op's.
    if let Some(r) = p.recompute.as_ref() {
        // The launching op is a leaf (`aten::miopen_convolution`), seldom a row of its own.
        let home = r.ops.first().map_or(SeedCategory::Other, |o| {
            inp.rows.iter().find(|x| x.name == o.name).map_or_else(
                || crate::standalone::ops::seed_category(&o.name, ""),
                |x| x.category,
            )
        });
        if home == f.category {
            add_recompute(f, r, inp);
        }
    }
    match f.category {
        SeedCategory::Elementwise => {
            // A chain found from the ops that is the per-tensor optimizer's update (its ops
            // the optimizer's single-tensor ops, its time inside the optimizer's) is that
            // finding's cost, stated once there (held-out: a for-loop AdamW read as a 16.3 %
            // "unfused elementwise chain" beside a 3.7 % optimizer finding).
            let optimizer = p.optimizer_step.as_ref();
            let optimizer_chain = optimizer.and_then(|o| {
                p.fusion.iter().find(|c| {
                    c.from_ops
                        && c.total_ms <= o.gpu_ms * 1.05
                        && c.ops.iter().all(|x| o.ops.iter().any(|y| y.name == x.name))
                })
            });
            let optimizer_fires =
                optimizer.is_some_and(|o| add_per_tensor_optimizer(f, o, optimizer_chain, inp));
            // The Python frames, sorted once for the functions' loop lookups.
            let frames = std::cell::OnceCell::new();
            for c in p
                .fusion
                .iter()
                .filter(|c| inp.share(c.savings_ms()) >= rules::MIN_SHARE_PCT)
                .filter(|c| {
                    !(optimizer_fires && optimizer_chain.is_some_and(|o| std::ptr::eq(*c, o)))
                })
            {
                let (ops, names) = op_list(&c.ops);
                let (title, who) = match &c.function {
                    Some(frame) => (
                        format!("Unfused function {}", code(&c.class)),
                        format!(
                            "{} call (`{}`)",
                            code(&c.class),
                            frame
                                .split_once("): ")
                                .map_or(frame.as_str(), |(l, _)| l)
                                .to_owned()
                                + ")"
                        ),
                    ),
                    None if c.from_ops => (
                        format!(
                            "Unfused elementwise chain: {} ops in a row",
                            c.kernels_per_instance().round()
                        ),
                        format!(
                            "run of `{}` (found from the op sequence: the trace records no `nn.Module: …` frame to group it; `with_modules=True` records them)",
                            c.class
                        ),
                    ),
                    None => (
                        format!("Unfused module {}", code(&c.class)),
                        format!("{} call", code(&c.class)),
                    ),
                };
                let mut issue = format!(
                    "Each {who} runs {:.0} separate kernels ({}): {} kernels over {} calls take {:.3} ms; one fused kernel per call would take about {:.3} ms.",
                    c.kernels_per_instance(), ops, c.kernels, c.instances, c.total_ms, c.fused_ms
                );
                // A fused module replaces its backward kernels too (a fused norm's backward is
                // one kernel): counted where autograd links them to the module's ops.
                if let Some(bw) = &c.backward {
                    issue.push_str(&format!(
                        " Its backward runs {} more kernels ({:.3} ms) that a fused backward replaces (about {:.3} ms): {:.3} ms in all, about {:.3} ms fused.",
                        bw.kernels, bw.total_ms, bw.fused_ms, c.all_ms(), c.all_fused_ms()
                    ));
                }
                let mut b = pattern_bottleneck(
                    f.category,
                    &names,
                    title,
                    c.all_ms(),
                    issue,
                    fusion_action(&c.class),
                    "Each kernel is memory-bound and makes its own pass over the data; tuning them one by one cannot remove the extra passes. Fusion is the lever.",
                    ProjectionKind::Saving,
                    rules::saving_projection(c.all_ms(), c.all_fused_ms(), compute),
                    inp,
                );
                if c.from_ops {
                    b.path_a = b
                        .path_a
                        .replace(
                            "the module's elementwise sequence",
                            "this elementwise sequence",
                        )
                        .replace("the module", "the code that runs it");
                    let title = format!(
                        "{:.0} elementwise kernels in a row over the same data, {} times",
                        c.kernels_per_instance(),
                        c.instances
                    );
                    b.causes.push(own_cause(&b, "unfused_op_chain", title));
                }
                let item_loop = c
                    .function
                    .as_deref()
                    .and_then(|f| {
                        use crate::standalone::item_loops::{around, inside, Frames};
                        let frames = frames.get_or_init(|| Frames::of(inp.trace));
                        around(inp.trace, frames, f).or_else(|| inside(inp.trace, frames, f))
                    })
                    .filter(|l| l.items >= crate::standalone::item_loops::MIN_ITEMS);
                if let Some(l) = item_loop.as_ref() {
                    per_item_loop(&mut b, c, l);
                } else if c.function.is_some() {
                    // The action is the function's to take; the cause is named so the chain reads
                    // as one (its op findings fold in below).
                    b.path_a = b.path_a.replace("the module", "the function");
                    let title = format!(
                        "{:.0} elementwise kernels per call of {}",
                        c.kernels_per_instance(),
                        code(&c.class)
                    );
                    b.causes
                        .push(own_cause(&b, "unfused_function_chain", title));
                }
                b.scope = Some(match c.function {
                    // A function is not on the ops' module paths: its ops' time inside it says
                    // which op findings it covers; nor is a chain found from the ops.
                    None if c.from_ops => super::merge::Scope {
                        subtracts: true,
                        ..scope_of(None, c.instances, &c.ops, false)
                    },
                    Some(_) => super::merge::Scope {
                        subtracts: true,
                        ..scope_of(None, c.instances, &c.ops, false)
                    },
                    None => scope_of(Some(&c.class), c.instances, &c.ops, false),
                });
                // Replayed as stated: a module's calls each become one kernel of the call's
                // fused time (`nn.Module: Class_`, their own ops only, as the candidate counts
                // them: the Linear and attention child modules inside are not fused).
                let target = format!("own:nn.Module: {}_", c.class);
                b.fix = if c.from_ops || c.function.is_some() {
                    // Each instance keeps its longest kernel, the rest go: a chain found from
                    // the ops has no frame to select, and a function's frame also encloses
                    // the child modules' work it does not count.
                    let ids: Vec<String> = c.removed.iter().map(u32::to_string).collect();
                    let mut fix = vec![("remove", format!("events:{}", ids.join(",")))];
                    // One fused kernel is one dispatch: the ops whose kernels all go take no
                    // host time (suite 6: an eager decode's RoPE chain replayed ~0 where its
                    // module-fused RMSNorm saved its dispatches).
                    if !c.removed_ops.is_empty() {
                        let ops: Vec<String> = c.removed_ops.iter().map(u32::to_string).collect();
                        fix.push(("scale", format!("hostevents:{}=0", ops.join(","))));
                    }
                    fix
                } else {
                    let mut fix = vec![(
                        "fuse",
                        format!(
                            "{target}={:.3}",
                            c.fused_ms * 1e3 / c.instances.max(1) as f64
                        ),
                    )];
                    // The backward: each instance keeps its longest kernel.
                    if let Some(bw) = &c.backward {
                        let ids: Vec<String> = bw.removed.iter().map(u32::to_string).collect();
                        fix.push(("remove", format!("events:{}", ids.join(","))));
                    }
                    fix
                };
                // Two functions of one per-item loop are one finding: the loop's (held-out
                // suite 12's c09: `_box_loss` and `build_targets_single`, both per image).
                if let Some(first) = item_loop
                    .as_ref()
                    .and_then(|_| f.bottlenecks.iter_mut().find(|x| x.title == b.title))
                {
                    fold_into_loop(first, b, c);
                    continue;
                }
                f.bottlenecks.push(b);
            }
            if let Some(z) = p.zero_grad.as_ref() {
                add_zero_grad(f, z, p.accumulate.as_ref(), inp);
            }
        }
        SeedCategory::SdpaFwd => {
            for a in p
                .unfused_attention
                .iter()
                .filter(|a| inp.share(a.core_ms) >= rules::MIN_SHARE_PCT)
            {
                let (ops, names) = op_list(&a.ops);
                let math = a.from_ops && a.class.contains("_math");
                let (title, issue) = match (a.from_ops, math) {
                    (false, _) => (
                        format!("Unfused attention in {}", code(&a.class)),
                        format!(
                            "{} computes attention op by op ({}) over {} calls: {:.3} ms of kernels that a fused attention kernel replaces.",
                            code(&a.class), ops, a.instances, a.core_ms
                        ),
                    ),
                    (true, true) => (
                        format!("Unfused attention: SDPA runs its math backend ({})", code(&a.class)),
                        format!(
                            "`scaled_dot_product_attention` ran its math backend ({}) in {} calls: {:.3} ms of kernels, attention computed op by op behind one call, that its flash or memory-efficient kernel replaces.",
                            ops, a.instances, a.core_ms
                        ),
                    ),
                    (true, false) if a.mha_instances * 2 >= a.instances => (
                        format!("Unfused attention in `nn.MultiheadAttention` ({})", code(&a.class)),
                        format!(
                            "`nn.MultiheadAttention` computes attention step by step {} times ({} of them under `F.multi_head_attention_forward`, its op-by-op path): a batched matmul writing a score matrix, a softmax over it and a matmul reading it ({}): {:.3} ms of kernels that a fused attention kernel replaces. The module takes that path when it must return the attention weights (`need_weights=True`, the default), which materializes them.",
                            a.instances, a.mha_instances, ops, a.core_ms
                        ),
                    ),
                    (true, false) => (
                        format!("Unfused attention: a softmax between batched matmuls ({})", code(&a.class)),
                        format!(
                            "The trace records no module frames, but its ops compute attention step by step {} times: a batched matmul writing a score matrix, a softmax over it and a matmul reading it ({}): {:.3} ms of kernels that a fused attention kernel replaces.",
                            a.instances, ops, a.core_ms
                        ),
                    ),
                };
                let mha = a.mha_instances * 2 >= a.instances && a.mha_instances > 0;
                let action = if mha {
                    "Call the module with `need_weights=False` (and drop the returned weights where they are unused): `F.multi_head_attention_forward` then runs `scaled_dot_product_attention`, whose flash / memory-efficient kernels never write the score matrix (typically 3-10x on attention). In inference, `model.eval()` under `torch.inference_mode()` also enables the module's fused fast path where its conditions hold."
                } else if math {
                    "Find why SDPA fell back to its math backend, then let it run its fused kernels: the flash and memory-efficient kernels need fp16/bf16 inputs (fp32 runs the math path), a head dimension they support, and no explicit mask where `is_causal=True` says the same; check that `torch.backends.cuda.enable_flash_sdp` / `enable_mem_efficient_sdp` are not off (or an `sdpa_kernel(SDPBackend.MATH)` context is not around the call). Typically 3-10x on attention."
                } else {
                    "Replace the softmax + bmm sequence with `torch.nn.functional.scaled_dot_product_attention` (Flash / memory-efficient backends; typically 3-10x on attention)."
                };
                let mut b = pattern_bottleneck(
                    f.category,
                    &names,
                    title,
                    a.core_ms,
                    issue,
                    action,
                    &unfused_attention_path_b(&a.ops, inp),
                    ProjectionKind::Speedup,
                    rules::speedup_projection(a.core_ms, &[3.0, 10.0], compute),
                    inp,
                );
                // Found from ops, it has no module class to hold its op findings: the ops'
                // time inside it is known, and their findings keep the rest.
                let mut scope = scope_of(
                    (!a.from_ops).then_some(a.class.as_str()),
                    a.instances,
                    &a.ops,
                    true,
                );
                scope.subtracts = a.from_ops;
                scope.sdpa_math = math;
                scope.mha = mha;
                b.scope = Some(scope);
                f.bottlenecks.push(b);
            }
        }
        SeedCategory::Gemm => {
            if let Some(g) = p.gemm_copies.as_ref() {
                let share_of_gemm = g.copy_ms / g.gemm_ms * 100.0;
                if share_of_gemm >= GEMM_COPY_MIN_PCT
                    && inp.share(g.copy_ms) >= rules::MIN_SHARE_PCT
                {
                    let callers = g
                        .callers
                        .iter()
                        .map(|c| format!("{} ({:.3} ms)", code(&c.name), c.ms))
                        .collect::<Vec<_>>()
                        .join(", ");
                    let top = g
                        .kernels
                        .first()
                        .map(|k| code(&short(&k.name, 70)))
                        .unwrap_or_default();
                    let calls: u64 = g.kernels.iter().map(|k| k.kernels).sum();
                    let evidence = format!(
                        "{:.3} ms of copy kernels ({calls} calls, e.g. {top}) run inside {callers} before their GEMMs: {share_of_gemm:.1}% of the {:.3} ms those GEMMs take. The operand reaches the GEMM as a view (transposed, permuted or sliced) that the GEMM cannot read in place, so it is materialized every call.",
                        g.copy_ms, g.gemm_ms
                    );
                    let action = "Produce the operand in the layout the GEMM reads: keep activations contiguous in [tokens, features] (avoid `.transpose()`/`.permute()` right before a matmul, or fold it into the previous op's output layout), store a weight that is used transposed in that orientation once, and prefer `torch.bmm`/`linear` on tensors whose last dimension is contiguous (the libraries take transposed operands by flag, not by copy).";
                    let mut b = pattern_bottleneck(
                        f.category,
                        &g.callers.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
                        format!("Layout copies feeding GEMMs ({share_of_gemm:.1}% on top of the GEMMs)"),
                        g.copy_ms,
                        evidence.clone(),
                        action,
                        "The copies are not the GEMM kernel's; tuning the GEMM does not remove them.",
                        ProjectionKind::Saving,
                        rules::saving_projection(g.copy_ms, 0.0, compute),
                        inp,
                    );
                    b.scope = Some(scope_of(None, 0, &g.copy_ops, false));
                    b.causes.push(Cause {
                        key: "gemm_layout_copies",
                        title: format!(
                            "operands copied into layout: {share_of_gemm:.1}% on top of the GEMMs"
                        ),
                        evidence,
                        action: action.into(),
                        waste: None,
                        confidence: Confidence::High,
                        bounds_all: false,
                        scope: None,
                    });
                    f.bottlenecks.push(b);
                }
            }
        }
        SeedCategory::Convolution => {
            // Transposes inside a cold first pass are its autotuner's trials (cuDNN's benchmark
            // search runs each candidate algorithm once, transposes included): not the steady
            // state's (docs/analysis.md, "Cold first passes").
            let cold_ms = |t: &crate::standalone::patterns::ConvTransposes| {
                inp.idle
                    .context
                    .cold
                    .as_ref()
                    .and_then(|c| c.first_pass.as_ref())
                    .map_or((0.0, 0), |p| t.in_window(p.window))
            };
            if let Some(t) = p
                .conv_transposes
                .as_ref()
                .filter(|t| t.transpose_ms - cold_ms(t).0 > 0.0)
            {
                let (cold, cold_n) = cold_ms(t);
                let transpose_ms = t.transpose_ms - cold;
                let share_of_conv = transpose_ms / t.conv_ms * 100.0;
                let left_out = if cold > 0.0 {
                    format!(" (another {cold:.3} ms ran in the cold first pass and is left out)")
                } else {
                    String::new()
                };
                // From 1 % of compute: a large share of a tiny convolution (a ViT's patch
                // embedding) is noise, not a recommendation.
                if inp.share(transpose_ms) >= rules::MIN_SHARE_PCT {
                    let top = t
                        .kernels
                        .first()
                        .map(|k| code(&short(&k.name, 70)))
                        .unwrap_or_default();
                    // MIOpen's workspace passes around the same convolutions are named beside
                    // the transposes (MI210 GPU-only: 0.49 ms of zero-fills and casts, left as
                    // unexplained elementwise rows): the solver's, not the layout's.
                    let workspace = if t.workspace_ms > 0.0 {
                        format!(
                                " Beside them, {:.3} ms ({} kernels) of MIOpen's own tensor passes run around the same convolutions ({}): a `SubTensorOpWithScalar1d` sets a buffer to a scalar (zero) before a solver accumulates into it, a `SubTensorOpWithCastTensor1d` casts an fp32 result to the output type after (split-K solvers, `gkgs` in their kernel's name, accumulate in fp32). They go with the solvers MIOpen picked for these shapes, not with the layout, so channels_last does not remove them.",
                                t.workspace_ms,
                                t.workspace.iter().map(|k| k.kernels).sum::<u64>(),
                                t.workspace
                                    .iter()
                                    .map(|k| format!("{} ×{}", code(&short(&k.name, 40)), k.kernels))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            )
                    } else {
                        String::new()
                    };
                    let mut b = pattern_bottleneck(
                        f.category,
                        &["conv"],
                        "Layout transposes around convolutions".into(),
                        transpose_ms,
                        format!(
                            "{transpose_ms:.3} ms of layout-transpose kernels ({} kernels, e.g. {top}) run as part of convolutions (inside the convolution ops, or back to back with the convolution kernels in a trace without ops){left_out}: {share_of_conv:.1}% of convolution time. The library converts NCHW tensors to the NHWC layout its kernels prefer.{workspace}",
                            t.kernels.iter().map(|k| k.kernels).sum::<u64>() - cold_n as u64
                        ),
                        &format!("Convert model and inputs to channels_last (`model.to(memory_format=torch.channels_last)`, `x.to(memory_format=torch.channels_last)`) so the transposes disappear.{}", super::super::diagnosis::rocm_nhwc_note(inp.platform)),
                        "The transposes come from the layout, not from a slow kernel; tuning them gains little. Report the NCHW path to the library team if channels_last is not an option.",
                        ProjectionKind::Saving,
                        rules::saving_projection(transpose_ms, 0.0, compute),
                        inp,
                    );
                    // In a GPU-only trace the transposes are kernel-level rows of their own
                    // (named by kernel family): the same cause, folded in here. The workspace
                    // passes named beside them are another cause (the solver's), and keep
                    // their own findings (review 8).
                    let mut by_family: Vec<(String, f64)> = Vec::new();
                    for k in &t.kernels {
                        let fam = crate::analysis::kernel_kinds::kernel_family(&k.name);
                        match by_family.iter_mut().find(|(n, _)| *n == fam) {
                            Some((_, ms)) => *ms += k.ms,
                            None => by_family.push((fam, k.ms)),
                        }
                    }
                    b.scope = Some(super::merge::Scope {
                        class: None,
                        ops: by_family,
                        instances: t.kernels.iter().map(|k| k.kernels).sum(),
                        unfused_attention: false,
                        sdpa_math: false,
                        mha: false,
                        subtracts: false,
                    });
                    // channels_last removes the transposes: replayed as stated, so the finding
                    // ranks by the same replayed saving as the op findings beside it.
                    b.fix = t
                        .kernels
                        .iter()
                        .map(|k| ("remove", format!("kernel:{}", k.name)))
                        .collect();
                    // The cause the pattern establishes, under the key the op findings it
                    // folds in name it by (`conv_layout_transposes`).
                    let title =
                        format!("layout transposes take {share_of_conv:.1}% of convolution time");
                    b.causes
                        .push(own_cause(&b, "conv_layout_transposes", title));
                    f.bottlenecks.push(b);
                }
            }
        }
        SeedCategory::Communication => {
            let tl = inp.timeline;
            // TraceLens's timeline counts NCCL/RCCL kernels only; Jarvis's own union counts
            // every communication family (symmetric memory, custom all-reduce, DeepEP).
            let all = inp.comm_all;
            let counts_more = all.beyond_tracelens_ns > 0;
            let pick = |tracelens: i64, jarvis: i64| {
                if counts_more {
                    tracelens.max(jarvis)
                } else {
                    tracelens
                }
            };
            let exposed = pick(tl.exposed_comm, all.exposed_ns) as f64 / 1e6;
            let total_comm = pick(tl.total_comm, all.total_ns) as f64 / 1e6;
            let beyond = if counts_more && all.exposed_ns > tl.exposed_comm {
                format!(
                    " (with the communication kernels TraceLens's timeline files as computation; kernels: {})",
                    all.families
                        .iter()
                        .take(3)
                        .map(|(f, n, ns)| format!("{} ×{n}, {:.3} ms", code(&short(f, 60)), *ns as f64 / 1e6))
                        .collect::<Vec<_>>()
                        .join("; ")
                )
            } else {
                String::new()
            };
            // A sampled trace's gaps held compute it did not keep: nothing is "exposed".
            if exposed > 0.0
                && inp.sampled.is_none()
                && inp.trace_share(exposed) >= rules::TIMELINE_FINDING_PCT
            {
                // One pass over the trace's communication kernels, for the text and the action.
                let back_to_back = back_to_back_share(inp.trace);
                let mut b = timeline_bottleneck(
                    f.category,
                    super::EXPOSED_COMMUNICATION,
                    exposed,
                    format!(
                        "{exposed:.3} ms of communication ({:.1}% {}) is not overlapped with compute, of {total_comm:.3} ms in total{beyond}.{}{}",
                        inp.trace_share(exposed),
                        inp.share_of(),
                        collectives_text(inp.coll, inp, back_to_back),
                        small_batch_text(inp)
                    ),
                    &communication_action(inp, back_to_back),
                    "One rank cannot tell slow transfers from waiting on a straggler: trace all ranks, and check the interconnect topology and NCCL / RCCL settings for these message sizes.",
                    inp,
                );
                super::comm_causes::sharpen(&mut b, inp);
                f.bottlenecks.push(b);
            } else if let Some(sample) = inp.sampled.filter(|_| total_comm > 0.0) {
                // A sampled trace's kernel durations stand, its gaps do not: the communication
                // kernels' own time is stated, how much of it is exposed is not judged.
                let kept = inp.compute_ms() + total_comm;
                let pct = total_comm / kept * 100.0;
                if pct >= rules::MIN_SHARE_PCT {
                    let mut b = timeline_bottleneck(
                        f.category,
                        "Communication kernels (sampled trace: overlap not judged)",
                        total_comm,
                        format!(
                            "Communication kernels take {total_comm:.3} ms, {pct:.1}% of the kernel time the trace kept{beyond}.{} The trace keeps about one runtime call in {:.0}: how much of this time compute hides, and how much of it is waiting for other ranks, cannot be told from it.",
                            collectives_text(inp.coll, inp, None),
                            sample.one_in()
                        ),
                        "Record every rank of one step with the profiler's default settings and compare them: a collective that takes milliseconds per call on one rank is usually waiting for a slower rank (uneven all-to-all splits, a straggler), which only the other ranks' traces show.",
                        "One rank cannot tell slow transfers from waiting on a straggler: trace all ranks, and check the interconnect topology and NCCL / RCCL settings for these message sizes.",
                        inp,
                    );
                    // No saving is claimed: the collectives' work stays, and their overlap is
                    // unknown.
                    b.projection = Vec::new();
                    b.causes.push(Cause {
                        key: "communication_sampled",
                        title: "communication time in a sampled trace".into(),
                        evidence: format!(
                            "{total_comm:.3} ms of communication kernels, {pct:.1}% of the kept kernel time; their overlap with compute is not in a sampled trace"
                        ),
                        action: b.path_a.clone(),
                        waste: Some(0.0),
                        confidence: Confidence::Low,
                        bounds_all: false,
                        scope: None,
                    });
                    f.bottlenecks.push(b);
                }
            }
        }
        _ => {}
    }
}

/// The host time of the zero_grad calls that makes the finding worth stating on its own, as a
/// share of the steady state (the trace's span where nothing is left out), % (the fills' GPU time is judged against compute as usual).
pub const ZERO_GRAD_HOST_MIN_PCT: f64 = 1.0;

/// Gradients zeroed by fill kernels (`zero_grad(set_to_none=False)`): the fills and their launch
/// time disappear with `set_to_none=True`.
fn add_zero_grad(
    f: &mut CategoryFindings,
    z: &crate::standalone::patterns::FramedWork,
    acc: Option<&crate::standalone::patterns::FramedWork>,
    inp: &Inputs<'_>,
) {
    // The backward pass then adds into those zeros: one `add_` per zeroed gradient per call is
    // what `set_to_none=True` removes too (the first gradient is stored, not added); more adds
    // than that are gradient accumulation over micro-batches, which stays.
    let (adds, adds_ms) = acc.map_or((0, 0.0), |a| {
        let n = a.kernels.min(z.kernels);
        (n, a.gpu_ms * n as f64 / a.kernels.max(1) as f64)
    });
    let gpu_ms = z.gpu_ms + adds_ms;
    let host_pct = if inp.total_ms() > 0.0 {
        z.host_ms / inp.total_ms() * 100.0
    } else {
        0.0
    };
    // `total_ms` is the steady state where one is left out: said as such.
    let share_of = inp.share_of();
    if inp.share(gpu_ms) < rules::MIN_SHARE_PCT && host_pct < ZERO_GRAD_HOST_MIN_PCT {
        return;
    }
    let (ops, names) = op_list(&z.ops);
    let per_call = z.kernels as f64 / z.calls.max(1) as f64;
    let accumulation = if adds > 0 {
        format!(
            " The backward pass then adds each new gradient into those zeros: {adds} accumulation kernels under `AccumulateGrad` ({adds_ms:.3} ms of GPU time), which `set_to_none=True` removes too (the gradient is then stored, not added)."
        )
    } else {
        String::new()
    };
    let evidence = format!(
        "`Optimizer.zero_grad` launches {per_call:.0} GPU kernels per call ({}) over {} calls: {} kernels, {:.3} ms of GPU time, and {:.3} ms of host time in the calls ({host_pct:.1}% {share_of}) to launch them. Every gradient is written with zeros before the backward pass adds into it.{accumulation}{}",
        ops,
        z.calls,
        z.kernels,
        z.gpu_ms,
        z.host_ms,
        profiled_host(z.host_ms, z.kernels)
    );
    let action = "Zero gradients by dropping them: `optimizer.zero_grad(set_to_none=True)` (the default since PyTorch 2.0; also `model.zero_grad(set_to_none=True)`). The next backward then writes each gradient instead of adding it to a tensor of zeros: no fill kernels, no launches, and one read of each gradient less. (Only code that reads `.grad` between `zero_grad` and `backward` needs the zeros.)";
    let mut b = pattern_bottleneck(
        f.category,
        &names,
        format!(
            "Gradients zeroed by kernels (`zero_grad(set_to_none=False)`, {} kernels per call)",
            per_call.round()
        ),
        gpu_ms,
        evidence.clone(),
        action,
        "Not a kernel issue: the fills run at memory speed, and removing them is the fix.",
        ProjectionKind::Saving,
        rules::saving_projection(gpu_ms, 0.0, inp.compute_ms()),
        inp,
    );
    b.impact.profiled_host = host_inflated(z.host_ms, z.kernels);
    b.impact.host_us_per_kernel = per_kernel_us(z.host_ms, z.kernels);
    // The fills' ops and the accumulation's adds are this cause seen op by op.
    let mut scope_ops = z.ops.clone();
    if let Some(a) = acc.filter(|_| adds > 0) {
        let keep = adds as f64 / a.kernels.max(1) as f64;
        scope_ops.extend(a.ops.iter().map(|o| crate::standalone::patterns::OpShare {
            ms: o.ms * keep,
            ..o.clone()
        }));
    }
    // Not a module's: the fills' and adds' time inside the calls is known, and op findings
    // keep only their time outside them (a `fill_` that also zeroes other tensors).
    b.scope = Some(super::merge::Scope {
        subtracts: true,
        ..scope_of(None, 0, &scope_ops, false)
    });
    // `set_to_none=True`: no GPU work inside the calls, none of their host time, and the
    // accumulation adds gone (all of them, or the share one per zeroed gradient is).
    // By the ranges' exact names, whatever kind the profiler recorded them as (a
    // `user_annotation`, or an `Operator` in 2021 traces, which `module:` would not select).
    b.fix = z
        .names
        .iter()
        .map(|n| ("remove", format!("op:{n}")))
        .chain(z.names.iter().map(|n| ("scale", format!("cpu:{n}=0"))))
        .collect();
    if let Some(a) = acc.filter(|_| adds > 0) {
        let op = crate::standalone::patterns::ACCUMULATE_GRAD;
        if adds >= a.kernels {
            b.fix.push(("remove", format!("op:{op}")));
        } else {
            let left = 1.0 - adds as f64 / a.kernels as f64;
            b.fix.push(("scale", format!("op:{op}={left:.4}")));
        }
    }
    b.causes.push(wasted_work(
        "zero_grad_fills",
        format!(
            "gradients zeroed by {} fill kernels per call",
            per_call.round()
        ),
        evidence,
        action,
    ));
    f.bottlenecks.push(b);
}

/// Kernels per `Optimizer.step` call from single-tensor ops at or above which the step is a
/// per-parameter loop worth a finding (a handful of parameters updates in a handful of launches
/// either way).
pub const OPTIMIZER_LOOP_KERNELS: f64 = 20.0;

/// Whether an op is a multi-tensor (`_foreach_*`) or fused (`_fused_adam_`, …) optimizer op,
/// which updates many parameters per launch.
fn is_multi_tensor_op(name: &str) -> bool {
    let n = name.trim_start_matches("aten::");
    n.starts_with("_foreach_") || n.starts_with("_fused_") || n.contains("multi_tensor")
}

/// An optimizer that updates its parameters one tensor at a time: most of the kernels inside
/// `Optimizer.step` come from single-tensor ops (`aten::add_`, `aten::mul_`, `aten::addcmul_`),
/// at least [`OPTIMIZER_LOOP_KERNELS`] per call. The multi-tensor path (`foreach=True`) or the
/// fused kernels (`fused=True`) launch a few kernels for all of them; each launch removed saves
/// at least the fixed cost of a kernel (the trace's kernel floor) and its host launch time.
/// `chain`: the update's ops found as a chain (`elementwise_chains`): a fused optimizer runs
/// each tensor's update as one pass, which the chain's fused time measures; the finding's saving
/// and replay are the chain's then. Whether the finding was made.
fn add_per_tensor_optimizer(
    f: &mut CategoryFindings,
    o: &crate::standalone::patterns::FramedWork,
    chain: Option<&crate::standalone::patterns::FusionCandidate>,
    inp: &Inputs<'_>,
) -> bool {
    let single: Vec<&crate::standalone::patterns::OpShare> = o
        .ops
        .iter()
        .filter(|op| !is_multi_tensor_op(&op.name))
        .collect();
    let single_ms: f64 = single.iter().map(|op| op.ms).sum();
    let multi = o.ops.iter().any(|op| is_multi_tensor_op(&op.name));
    // Kernels from single-tensor ops, by their share of the ranges' GPU time (ops carry time,
    // not counts; the per-tensor kernels are alike in size).
    let share = if o.gpu_ms > 0.0 {
        single_ms / o.gpu_ms
    } else {
        0.0
    };
    let kernels = (o.kernels as f64 * share).round();
    let per_call = kernels / o.calls.max(1) as f64;
    if multi || share < 0.5 || per_call < OPTIMIZER_LOOP_KERNELS {
        return false;
    }
    let floor_ms = inp.kernel_floor_us.unwrap_or(0.0) / 1e3;
    let saving_ms = (kernels * floor_ms).min(single_ms);
    let host_pct = if inp.total_ms() > 0.0 {
        o.host_ms / inp.total_ms() * 100.0
    } else {
        0.0
    };
    let share_of = inp.share_of();
    if inp.share(saving_ms) < rules::MIN_SHARE_PCT && host_pct < ZERO_GRAD_HOST_MIN_PCT {
        return false;
    }
    let ops: Vec<crate::standalone::patterns::OpShare> = single.into_iter().cloned().collect();
    let (list, names) = op_list(&ops);
    let evidence = format!(
        "`Optimizer.step` launches {per_call:.0} kernels per call from single-tensor ops ({list}) over {} calls: {kernels:.0} kernels, {single_ms:.3} ms of GPU time, and {:.3} ms of host time in the calls ({host_pct:.1}% {share_of}). The optimizer updates its parameters one tensor at a time (its `foreach` path is off: `foreach=False`, a PyTorch before 2.0 where it was not the default, or parameters not all on the GPU). Each launch the multi-tensor path removes saves at least a kernel's fixed cost (the trace's kernel floor, {:.1} µs): {saving_ms:.3} ms of GPU time.",
        o.calls,
        o.host_ms,
        floor_ms * 1e3
    ) + &profiled_host(o.host_ms, o.kernels);
    let action = "Update all parameters in a few launches: construct the optimizer with `foreach=True` (the multi-tensor path, the default on CUDA/ROCm since PyTorch 2.0 when every parameter is on the GPU; a PyTorch 1.x without that argument has the same path as `torch.optim._multi_tensor`'s optimizers) or, where the installed PyTorch offers it, `fused=True` (one fused kernel per group: Adam, AdamW, SGD). The kernel count per step drops from one per parameter and operation to a few, and so does the step's host launch time.";
    let mut b = pattern_bottleneck(
        f.category,
        &names,
        format!("Optimizer updates one tensor at a time ({per_call:.0} kernels per step)"),
        // With the chain, the finding's time is the update's kernels, its share of compute
        // theirs (a held-out re-grade read "46 ms, 3.8 % of compute" when only the time moved).
        chain.map_or(saving_ms, |c| c.total_ms),
        evidence.clone(),
        action,
        "Not a kernel issue: each update kernel is tiny; fewer, larger launches are the fix.",
        ProjectionKind::Saving,
        match chain {
            Some(c) => rules::saving_projection(c.total_ms, c.fused_ms, inp.compute_ms()),
            None => rules::saving_projection(saving_ms, 0.0, inp.compute_ms()),
        },
        inp,
    );
    if let Some(c) = chain {
        b.issue.push_str(&format!(
            " Its update runs {:.0} kernels per tensor, each a pass over the same parameter-sized tensors ({}): a fused update (`fused=True`) makes one pass, about {:.3} ms of the {:.3} ms.",
            c.kernels_per_instance(),
            c.ops
                .iter()
                .map(|x| code(&x.name))
                .collect::<Vec<_>>()
                .join(" → "),
            c.fused_ms,
            c.total_ms
        ));
    }
    b.impact.profiled_host = host_inflated(o.host_ms, o.kernels);
    b.impact.host_us_per_kernel = per_kernel_us(o.host_ms, o.kernels);
    b.scope = Some(super::merge::Scope {
        subtracts: true,
        ..scope_of(None, 0, &ops, false)
    });
    // `foreach=True`, replayed: each call's kernels one kernel of their time less the fixed
    // costs removed, and its host time that of one dispatch per distinct op (a `_foreach_`
    // op per single-tensor op kind) instead of one per tensor: an upper bound on the host
    // saving, as a `_foreach_` op's list handling costs a little per tensor.
    let fused_us = (o.gpu_ms - saving_ms).max(0.0) * 1e3 / o.calls.max(1) as f64;
    let host_factor = (ops.len() as f64 / per_call.max(1.0)).min(1.0);
    // With the chain, `fused=True`: one pass over every tensor, the chain's fused time, in a
    // few launches, replayed as one kernel of that time per call and one dispatch (each
    // tensor's longest kernel kept with its launch and queue gap had replayed 6.75 ms a step
    // of suite 6's BERT AdamW, 10.70 measured).
    if let Some(c) = chain {
        let us = c.fused_ms * 1e3 / o.calls.max(1) as f64;
        b.fix = o
            .names
            .iter()
            .map(|n| ("fuse", format!("module:{n}={us:.3}")))
            .collect();
    } else {
        b.fix = o
            .names
            .iter()
            .map(|n| ("fuse", format!("op:{n}={fused_us:.3}")))
            .chain(
                o.names
                    .iter()
                    .map(|n| ("scale", format!("cpu:{n}={host_factor:.4}"))),
            )
            .collect();
    }
    let mut cause = wasted_work(
        "optimizer_per_tensor",
        format!("per-tensor optimizer: {per_call:.0} kernels per step"),
        evidence,
        action,
    );
    // The finding's time is the update's kernels where the chain is its cost: what the fused
    // update removes is all but its one pass per tensor, not all of it (the planted AdamW had
    // read "may save 98.0 %" beside a replayed 85.8 %).
    if let Some(c) = chain.filter(|c| c.total_ms > 0.0) {
        cause.waste = Some(((c.total_ms - c.fused_ms) / c.total_ms).clamp(0.0, 1.0));
    }
    b.causes.push(cause);
    f.bottlenecks.push(b);
    true
}

/// Host time per launched kernel above which a finding says the profiler inflates it, µs:
/// eager PyTorch dispatches and launches a small op in well under this (a few µs to about
/// 10); an older PyTorch's autograd profiler or Python stacks (`with_stack=True`) add tens of
/// µs per op (V100 ResNet-50, PyTorch 1.8: 48 µs per optimizer kernel).
pub const PROFILED_HOST_US_PER_KERNEL: f64 = 20.0;

/// The note a host-side finding adds when its calls spend more host time per kernel than
/// eager dispatch takes: the replayed host saving is then an upper bound.
fn profiled_host(host_ms: f64, kernels: u64) -> String {
    if !host_inflated(host_ms, kernels) {
        return String::new();
    }
    let per = host_ms * 1e3 / kernels.max(1) as f64;
    format!(
        " That is {per:.0} µs of host time per kernel, several times what eager PyTorch takes to dispatch and launch a small op: the profiler's own overhead (an older PyTorch's autograd profiler, or Python stacks) is part of it, so the host time the fix removes, and its replayed saving, are upper bounds for an unprofiled run."
    )
}

/// Whether calls spend at least [`PROFILED_HOST_US_PER_KERNEL`] of host time per kernel.
fn host_inflated(host_ms: f64, kernels: u64) -> bool {
    per_kernel_us(host_ms, kernels) >= PROFILED_HOST_US_PER_KERNEL
}

/// Host time per launched kernel, in µs.
fn per_kernel_us(host_ms: f64, kernels: u64) -> f64 {
    host_ms * 1e3 / kernels.max(1) as f64
}

/// The cause a pattern finding establishes itself, read off the trace: its issue is the
/// evidence and its Path A the action; high confidence, no waste share of its own (the
/// pattern's projection carries the saving).
fn own_cause(b: &Bottleneck, key: &'static str, title: String) -> Cause {
    Cause {
        key,
        title,
        evidence: b.issue.clone(),
        action: b.path_a.clone(),
        waste: None,
        confidence: Confidence::High,
        bounds_all: false,
        scope: None,
    }
}

/// Path B of unfused attention: its kernels' own findings name what holds each; the padding
/// clause only where the trace's softmax is CUDA's general two-pass kernel
/// (`cunn_SoftMaxForward<…>`), which a row length that is a multiple of its vector width leaves
/// for the shared-memory one. ROCm's `cunn_SoftMaxForwardReg` is one pass already, and padding
/// does not change it (review 19: the CUDA clause printed on MI300X TimeSformer).
fn unfused_attention_path_b(
    ops: &[crate::standalone::patterns::OpShare],
    inp: &Inputs<'_>,
) -> String {
    let generic_softmax = ops.iter().any(|o| {
        inp.rows
            .iter()
            .filter(|r| r.name == o.name)
            .flat_map(|r| &r.kernel_names)
            .any(|(k, _)| k.contains("cunn_SoftMaxForward<"))
    });
    let pad = if generic_softmax {
        " (an odd sequence length that forces narrow-aligned kernels and the general softmax can be padded to a multiple of 8, which can be worth several times)"
    } else {
        ""
    };
    format!(
        "Without model changes, the softmax and bmm kernels are what can be tuned: their own findings, folded in here, name what holds each{pad}; generate replay artifacts for them."
    )
}

/// A cause whose work the fix removes entirely, seen directly in the trace.
fn wasted_work(key: &'static str, title: String, evidence: String, action: &str) -> Cause {
    Cause {
        key,
        title,
        evidence,
        action: action.to_owned(),
        waste: Some(1.0),
        confidence: Confidence::High,
        bounds_all: false,
        scope: None,
    }
}

/// Activation checkpointing's recomputation: the forward work the backward pass reruns inside
/// `torch.utils.checkpoint`'s unpack hook, the price of not keeping those regions'
/// activations. Training only; from `MIN_SHARE_PCT` of compute. The op findings of the
/// recomputed ops stay: their forward instances are theirs.
fn add_recompute(
    f: &mut CategoryFindings,
    r: &crate::standalone::patterns::FramedWork,
    inp: &Inputs<'_>,
) {
    if !inp.trains || inp.share(r.gpu_ms) < rules::MIN_SHARE_PCT {
        return;
    }
    const LISTED: usize = 5;
    let (ops, names) = op_list(&r.ops[..r.ops.len().min(LISTED)]);
    let more = if r.ops.len() > LISTED {
        format!(" and {} more ops", r.ops.len() - LISTED)
    } else {
        String::new()
    };
    // Reentrant checkpointing's frame also runs the backward of what it recomputed (left out
    // of the kernels counted), so its host time is not the recomputation's alone.
    let reentrant = r
        .names
        .iter()
        .any(|n| n == "CheckpointFunctionBackward" || n.ends_with("): backward"));
    let (variant, host) = if reentrant {
        (
            "reentrant: `CheckpointFunctionBackward` reruns each region's forward, then the backward of what it recomputed; only the forward's kernels are counted here",
            String::new(),
        )
    } else {
        (
            "non-reentrant: inside its unpack hook, when it first needs an activation the region did not keep",
            format!(", and the recomputation {:.3} ms of host time", r.host_ms),
        )
    };
    let evidence = format!(
        "The backward pass reruns the forward of {} checkpointed regions (`torch.utils.checkpoint`, {variant}): {} kernels ({ops}{more}) take {:.3} ms of GPU time ({:.1}% of compute){host}. This is memory traded for compute: those activations were not kept.{}",
        r.calls,
        r.kernels,
        r.gpu_ms,
        inp.share(r.gpu_ms),
        memory_headroom(inp.trace)
    );
    // BatchNorm in training mode updates its running statistics on every forward, the
    // recomputed one too (review 4: MI300X ResNet-18's 20 BN layers updated 39 times a step;
    // a frozen BN, in eval mode, would not: said conditionally).
    let bn = r
        .ops
        .iter()
        .filter(|o| o.name.contains("batch_norm"))
        .map(|o| o.kernels)
        .sum::<u64>();
    let evidence = if bn > 0 {
        format!(
            "{evidence} The recomputed forward runs BatchNorm ({bn} kernels): in training mode each recomputation updates its running statistics (and `num_batches_tracked`) a second time, so the checkpointed layers' statistics move twice a step."
        )
    } else {
        evidence
    };
    let bn_action = if bn > 0 {
        " Keep BatchNorm layers out of the checkpointed regions (or checkpoint only the convolutions between them), or the running statistics are updated twice a step."
    } else {
        ""
    };
    // The expensive outputs to keep are the ones the regions compute (review 7: "matmuls,
    // attention" in a ResNet's checkpoint advice).
    let heavy: Vec<&str> = [
        ("conv", "convolutions"),
        ("mm", "matmuls"),
        ("linear", "matmuls"),
        ("attention", "attention"),
    ]
    .iter()
    .filter(|(k, _)| r.ops.iter().any(|o| o.name.contains(k)))
    .map(|(_, w)| *w)
    .fold(Vec::new(), |mut v, w| {
        if !v.contains(&w) {
            v.push(w);
        }
        v
    });
    let heavy = if heavy.is_empty() {
        "matmuls, convolutions, attention".to_owned()
    } else {
        heavy.join(", ")
    };
    let action = format!("Where memory allows, recompute less: checkpoint fewer regions (every other block, or only the largest), or checkpoint selectively, keeping the expensive outputs ({heavy}) and recomputing only cheap ops (`torch.utils.checkpoint` with a `context_fn` from `torch.utils.checkpoint.create_selective_checkpoint_contexts`, or `torch.compile`'s activation memory budget). Check the memory view first: without checkpointing the activations must fit beside the peak.{bn_action}");
    let mut b = pattern_bottleneck(
        f.category,
        &names,
        format!(
            "Activations recomputed by checkpointing ({} regions, {:.1}% of compute)",
            r.calls,
            inp.share(r.gpu_ms)
        ),
        r.gpu_ms,
        evidence.clone(),
        &action,
        "Not a kernel issue: the recomputed kernels are the forward's own; recomputing fewer regions is the lever.",
        ProjectionKind::Saving,
        rules::saving_projection(r.gpu_ms, 0.0, inp.compute_ms()),
        inp,
    );
    // Without the recomputation: none of the recomputed kernels, and (non-reentrant) none of
    // the hooks' host time; a reentrant frame's host time also launches its backward, kept.
    let ids: Vec<String> = r.launches.iter().map(|l| l.3.to_string()).collect();
    b.fix = vec![("remove", format!("events:{}", ids.join(",")))];
    if !reentrant {
        b.fix
            .extend(r.names.iter().map(|n| ("scale", format!("cpu:{n}=0"))));
    }
    b.causes.push(wasted_work(
        "activation_recompute",
        format!(
            "{} checkpointed regions recomputed in the backward pass",
            r.calls
        ),
        evidence,
        &action,
    ));
    f.bottlenecks.push(b);
}

/// The peak of memory allocated on a GPU against its capacity, where the trace records memory
/// (`profile_memory=True`) and `deviceProperties` gives the capacity: whether the activations
/// checkpointing drops could be kept. Empty otherwise.
fn memory_headroom(trace: &crate::model::Trace) -> String {
    use crate::model::memory::MemoryDevice;
    let capacities = crate::memory::capacities(trace);
    let mut peak: Option<(i64, i64)> = None;
    for r in &trace.memory {
        let (Some(MemoryDevice::Gpu(id)), Some(total)) = (MemoryDevice::of(r), r.total_allocated)
        else {
            continue;
        };
        if peak.is_none_or(|p| total > p.1) {
            peak = Some((id, total));
        }
    }
    let Some((id, total)) = peak else {
        return " The trace has no memory records (`profile_memory=True` records them), so it cannot tell whether the activations would fit if kept.".into();
    };
    let gib = |b: i64| b as f64 / (1u64 << 30) as f64;
    match capacities.iter().find(|c| c.0 == id) {
        Some(&(_, cap)) if cap > 0 => format!(
            " Memory allocated peaks at {:.1} GiB of the GPU's {:.1} GiB ({:.0}%): {:.1} GiB is free for activations kept instead of recomputed.",
            gib(total),
            gib(cap),
            total as f64 * 100.0 / cap as f64,
            gib(cap - total)
        ),
        _ => format!(" Memory allocated peaks at {:.1} GiB.", gib(total)),
    }
}

/// The fusion action written for the module's kind, read from its class name
/// (docs/analysis.md, "Patterns"): a norm, a rotary embedding, an activation / MLP, else the
/// general one.
pub(super) fn fusion_action(class: &str) -> &'static str {
    let c = class.to_ascii_lowercase();
    if c.contains("norm") {
        "Fuse the norm: use a fused implementation (`torch.nn.LayerNorm`; `torch.nn.RMSNorm`, one fused kernel in eager mode from PyTorch 2.8 and composite before it; a serving framework's fused add + norm kernel; Liger-Kernel's RMSNorm), or `torch.compile` the module."
    } else if c.contains("rotary") || c.contains("rope") {
        "Fuse the rotary embedding: one fused RoPE kernel for Q and K (a Triton kernel such as Liger-Kernel's or flash-attn's `apply_rotary_emb`; a serving engine's own `rotary_embedding` op), ideally fused with the Q/K projection's epilogue so Q and K are written once, in the layout attention reads; or `torch.compile` the module."
    } else if ["mlp", "act", "gelu", "silu", "swiglu", "glu"]
        .iter()
        .any(|k| c.contains(k))
    {
        "Fuse the activation and its elementwise neighbours: a fused gated activation (e.g. `SiluAndMul`), or the GEMM epilogue (bias + activation); or `torch.compile` the module."
    } else {
        "Fuse the module's elementwise sequence: `torch.compile` it, or write one kernel for the sequence (Triton) so the data makes one pass through memory."
    }
}

/// Bus bandwidth under this share of the platform's link means the kernel mostly waited for
/// the other ranks (docs/analysis.md, "Patterns").
pub const WAITING_BELOW_LINK: f64 = 0.25;
/// Messages below this many MiB are latency-bound: their bandwidth is not judged.
pub const LATENCY_BOUND_MIB: f64 = 1.0;

/// Each collective of `coll_analysis`, and each one its op sizes where no NCCL/RCCL metadata
/// covers it (`collective_sizes`: symmetric-memory and custom all-reduces), largest total time
/// first, at most 5: size, calls, mean time, algorithm and bus bandwidth against the
/// platform's link.
pub(super) fn collectives_text(
    coll: Option<&Sheet>,
    inp: &Inputs<'_>,
    back_to_back: Option<f64>,
) -> String {
    let mut all = coll.map(sheet_collectives).unwrap_or_default();
    all.extend(super::collective_sizes::op_collectives(inp.rows, inp.trace));
    all.sort_by(|a, b| b.sum_us.total_cmp(&a.sum_us));
    let items = &all;
    let link = inp
        .platform
        .and_then(|p| p.link_gbps.as_ref().map(|l| (p.label().to_owned(), l.0)));
    let items: Vec<String> = items
        .iter()
        .take(5)
        .map(|c| {
            // An all-gather's output is the ranks' inputs together: its bandwidth is of the
            // output (NCCL's convention), so both sizes are said (review 10: "49.1 KB" beside a
            // bandwidth of 402 KB).
            let size = if c.size_mib > c.in_mib * 1.01 {
                format!("{} in ({} out)", size_text(c.in_mib), size_text(c.size_mib))
            } else {
                size_text(c.in_mib)
            };
            let mut text = format!("{} of {size} ×{}", code(&c.name), c.calls);
            if let Some(us) = c.mean_us {
                let algbw = c.size_mib * 1_048_576.0 / (us * 1e-6) / 1e9;
                let busbw = algbw * bus_factor(&c.name, c.group);
                text.push_str(&format!(
                    " ({us:.1} µs each: algbw {algbw:.1} GB/s, busbw {busbw:.1} GB/s"
                ));
                let network = spans_nodes(inp, c.group);
                match (&link, network) {
                    (_, Some(ranks)) if c.size_mib >= LATENCY_BOUND_MIB => {
                        let pct = busbw / NIC_GBPS * 100.0;
                        let spans = format!("the {ranks}-rank group spans nodes of at most {NODE_GPUS} GPUs, so the ring crosses the network, not NVLink / Infinity Fabric");
                        if busbw >= NIC_GBPS {
                            // Faster than one NIC a GPU: the nodes have more, or part of the
                            // ring stays in the node; the network is not slow either way.
                            text.push_str(&format!(
                                ", above the ~{NIC_GBPS:.0} GB/s of one 400 Gb/s NIC a GPU ({spans}): the nodes have more network a GPU than that, or part of the ring stays inside a node, so the network is not what slows it"
                            ));
                        } else {
                            text.push_str(&format!(
                                ", {pct:.0}% of the ~{NIC_GBPS:.0} GB/s of one 400 Gb/s NIC a GPU ({spans})"
                            ));
                        }
                        if busbw < WAITING_BELOW_LINK * NIC_GBPS {
                            text.push_str(": far below even the network; the kernel mostly waits on other ranks (skew or a slow rank)");
                        }
                    }
                    (Some((pname, peak)), None) if c.size_mib >= LATENCY_BOUND_MIB => {
                        let pct = busbw / peak * 100.0;
                        text.push_str(&format!(", {pct:.0}% of {pname}'s {peak:.0} GB/s link"));
                        if busbw < WAITING_BELOW_LINK * peak {
                            text.push_str(&slow_link_reason(back_to_back));
                        }
                    }
                    _ if c.size_mib < LATENCY_BOUND_MIB => {
                        text.push_str(", under 1 MB: latency-bound")
                    }
                    _ => text.push_str(", no link peak known for this platform"),
                }
                text.push(')');
            }
            text
        })
        .collect();
    if items.is_empty() {
        String::new()
    } else {
        format!(
            " Collectives: {}.{}",
            items.join("; "),
            // The fit judges the rate against the node's link: a group across nodes was
            // judged against the network above instead.
            if all.iter().any(|c| spans_nodes(inp, c.group).is_some()) {
                String::new()
            } else {
                size_fit(&all, link.as_ref())
            }
        )
    }
}

/// A collective of several sizes, each far below the link, fitted by least squares (weighted by
/// calls) as `time = fixed + size / rate`: the fixed part is what every call pays whatever it
/// moves (waiting for the last rank to arrive, a fixed per-call cost), the rate what its bytes
/// move at. Two sizes of one all-reduce tell the wait and the transfer apart where one rank's
/// trace otherwise cannot (review 15: 6.8 ms for 5.5 MB and 8.9 ms for 16.8 MB are about 5.7
/// ms fixed plus 5 GB/s). Empty where no collective has two such sizes.
fn size_fit(
    items: &[super::collective_sizes::SizedCollective],
    link: Option<&(String, f64)>,
) -> String {
    let Some((pname, peak)) = link else {
        return String::new();
    };
    let mut names: Vec<&str> = items.iter().map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    let mut out = String::new();
    for name in names {
        // (MiB, µs, calls) of its sizes above the latency-bound ones, each far below the link.
        let pts: Vec<(f64, f64, f64)> = items
            .iter()
            .filter(|c| c.name == name && c.size_mib >= LATENCY_BOUND_MIB)
            .filter_map(|c| {
                let us = c.mean_us?;
                let busbw =
                    c.size_mib * 1_048_576.0 / (us * 1e-6) / 1e9 * bus_factor(&c.name, c.group);
                (busbw < WAITING_BELOW_LINK * peak).then_some((c.size_mib, us, c.calls.max(1.0)))
            })
            .collect();
        let (lo, hi) = pts
            .iter()
            .fold((f64::MAX, 0.0f64), |(l, h), p| (l.min(p.0), h.max(p.0)));
        if pts.len() < 2 || hi < 1.5 * lo {
            continue;
        }
        let w: f64 = pts.iter().map(|p| p.2).sum();
        let mx = pts.iter().map(|p| p.2 * p.0).sum::<f64>() / w;
        let my = pts.iter().map(|p| p.2 * p.1).sum::<f64>() / w;
        let sxx: f64 = pts.iter().map(|p| p.2 * (p.0 - mx).powi(2)).sum();
        let sxy: f64 = pts.iter().map(|p| p.2 * (p.0 - mx) * (p.1 - my)).sum();
        if sxx <= 0.0 {
            continue;
        }
        let slope = sxy / sxx; // µs per MiB
        let fixed = my - slope * mx; // µs
        if slope <= 0.0 || fixed < 0.0 {
            continue;
        }
        let algbw = 1_048_576.0 / (slope * 1e-6) / 1e9;
        let group = items
            .iter()
            .find(|c| c.name == name)
            .map_or(0.0, |c| c.group);
        let busbw = algbw * bus_factor(name, group);
        out.push_str(&format!(
            " Fitted over its {} sizes as a fixed time plus bytes at a rate, {} takes {:.2} ms a call whatever it moves (waiting for the last rank to arrive, or a fixed per-call cost) and moves its bytes at {busbw:.1} GB/s bus bandwidth ({:.0}% of {pname}'s {peak:.0} GB/s link): {}.",
            pts.len(),
            code(name),
            fixed / 1e3,
            busbw / peak * 100.0,
            if busbw < WAITING_BELOW_LINK * peak {
                "the transfer itself is slow as well as the wait, so both the ranks' arrival and the transport need a look"
            } else {
                "the bytes move near the link's rate, so the time is the fixed part: the ranks' arrival (skew) or a per-call cost"
            }
        ));
    }
    out
}

/// "5.1 MiB", or "48.0 KiB" under a tenth of a MiB (a 50 KB all-gather had read "0.0 MB"). The
/// sizes are TraceLens's "MB" columns, which divide by 2^20: named so (review 25: "16.8 MB" for
/// 17.6 million bytes).
fn size_text(mib: f64) -> String {
    if mib < 0.1 {
        format!("{:.1} KiB", mib * 1024.0)
    } else {
        format!("{mib:.1} MiB")
    }
}

/// The rows of `coll_analysis`, sized as NCCL's metadata records them.
fn sheet_collectives(s: &Sheet) -> Vec<super::collective_sizes::SizedCollective> {
    let (Some(name), Some(mb), Some(n)) = (
        s.column("Collective name"),
        s.column("In msg size (MB)_first"),
        s.column("operation_count"),
    ) else {
        return Vec::new();
    };
    let out_mb = s.column("Out msg size (MB)_first");
    let mean = s.column("dur_mean");
    let sum = s.column("dur_sum");
    let ranks = s.column("Group size");
    s.rows
        .iter()
        .map(|r| {
            let in_mib = r[mb].as_f64().unwrap_or(0.0);
            super::collective_sizes::SizedCollective {
                name: r[name].csv_text(),
                in_mib,
                size_mib: out_mb
                    .and_then(|c| r[c].as_f64())
                    .map_or(in_mib, |o| o.max(in_mib)),
                calls: r[n].as_f64().unwrap_or(0.0),
                sum_us: sum.and_then(|c| r[c].as_f64()).unwrap_or(0.0),
                mean_us: mean.and_then(|c| r[c].as_f64()).filter(|t| *t > 0.0),
                group: ranks.and_then(|c| r[c].as_f64()).unwrap_or(0.0),
            }
        })
        .collect()
}

/// A trace's collectives from its `coll_analysis` sheet with their bus bandwidth: (name, size
/// in MiB, calls, mean µs, bus GB/s), largest total time first; those of at least
/// [`LATENCY_BOUND_MIB`] only (smaller ones are latency-bound, their bandwidth not judged). Read
/// by the comparison, which sets each side's against the other's.
pub fn bus_bandwidths(coll: &Sheet) -> Vec<(String, f64, f64, f64, f64)> {
    let mut all = sheet_collectives(coll);
    all.sort_by(|a, b| b.sum_us.total_cmp(&a.sum_us));
    all.into_iter()
        .filter(|c| c.size_mib >= LATENCY_BOUND_MIB)
        .filter_map(|c| {
            let us = c.mean_us?;
            let busbw = c.size_mib * 1_048_576.0 / (us * 1e-6) / 1e9 * bus_factor(&c.name, c.group);
            Some((c.name, c.size_mib, c.calls, us, busbw))
        })
        .collect()
}

/// The share of collective time (`dur_sum`) spent in collectives of at least 1 MiB whose bus
/// bandwidth is far below the platform's link (`WAITING_BELOW_LINK`): time they spend waiting on
/// other ranks, which no overlap or bucketing hides. `None` without sizes, times or a link.
fn waiting_share(inp: &Inputs<'_>) -> Option<f64> {
    let s = inp.coll?;
    let link = inp.platform?.link_gbps.as_ref()?.0;
    let (name, mb, mean, sum) = (
        s.column("Collective name")?,
        s.column("In msg size (MB)_first")?,
        s.column("dur_mean")?,
        s.column("dur_sum")?,
    );
    let (out_mb, ranks) = (s.column("Out msg size (MB)_first"), s.column("Group size"));
    let (mut waiting, mut total) = (0.0, 0.0);
    for r in &s.rows {
        let t = r[sum].as_f64().unwrap_or(0.0);
        total += t;
        let in_mib = r[mb].as_f64().unwrap_or(0.0);
        let size_mib = out_mb
            .and_then(|c| r[c].as_f64())
            .map_or(in_mib, |o| o.max(in_mib));
        let (Some(us), group) = (
            r[mean].as_f64().filter(|t| *t > 0.0),
            ranks.and_then(|c| r[c].as_f64()).unwrap_or(0.0),
        ) else {
            continue;
        };
        let coll = r[name].csv_text();
        let busbw = size_mib * 1_048_576.0 / (us * 1e-6) / 1e9 * bus_factor(&coll, group);
        // A group across nodes is bounded by the network, not the node's link.
        let peak = if spans_nodes(inp, group).is_some() {
            NIC_GBPS
        } else {
            link
        };
        if size_mib >= LATENCY_BOUND_MIB && busbw < WAITING_BELOW_LINK * peak {
            waiting += t;
        }
    }
    (total > 0.0).then(|| waiting / total)
}

/// When a training step's computation is shorter than its communication, the per-GPU batch is
/// too small to hide the all-reduce.
fn small_batch_text(inp: &Inputs<'_>) -> String {
    let tl = inp.timeline;
    // The time the collectives need at the link's peak: only when that alone exceeds the
    // step's computation is the batch too small (a slow collective that mostly waits on other
    // ranks is skew, not a small batch).
    let link = inp.platform.and_then(|p| p.link_gbps.as_ref()).map(|l| l.0);
    let (Some(link), Some(s)) = (link, inp.coll) else {
        return String::new();
    };
    let at_link_ns: f64 = sheet_collectives(s)
        .iter()
        .map(|c| {
            let bytes = c.size_mib * 1_048_576.0 * bus_factor(&c.name, c.group);
            let link = if spans_nodes(inp, c.group).is_some() {
                NIC_GBPS
            } else {
                link
            };
            bytes / (link * 1e9) * 1e9 * c.calls
        })
        .sum();
    if inp.trains && at_link_ns > tl.computation as f64 && tl.computation > 0 {
        format!(
            " At the link's peak the collectives alone need {:.3} ms, more than the step's {:.3} ms of computation: the per-GPU batch is too small to hide the gradient all-reduce behind the backward pass.",
            at_link_ns / 1e6,
            tl.computation as f64 / 1e6
        )
    } else {
        String::new()
    }
}

/// The exposed-communication action, written for the collectives that take the time and the
/// mode (docs/analysis.md, "Patterns").
fn communication_action(inp: &Inputs<'_>, back_to_back: Option<f64>) -> String {
    // (name, time in ns) of each collective and communication kernel family; the advice is
    // for those with at least a tenth of the largest one's time.
    let mut timed: Vec<(String, f64)> = inp
        .coll
        .and_then(|s| {
            let c = s.column("Collective name")?;
            let t = s.column("dur_sum");
            Some(
                s.rows
                    .iter()
                    .map(|r| {
                        (
                            r[c].csv_text().to_ascii_lowercase().replace(['_', ' '], ""),
                            t.and_then(|t| r[t].as_f64()).unwrap_or(0.0) * 1e3,
                        )
                    })
                    .collect(),
            )
        })
        .unwrap_or_default();
    // The kernels themselves (symmetric memory, custom all-reduce, DeepEP carry no metadata).
    timed.extend(inp.comm_all.families.iter().map(|(f, _, ns)| {
        let f = f.to_ascii_lowercase().replace(['_', ' '], "");
        let ep = [
            "deepep",
            "dpsk",
            "intranode",
            "internode",
            "dispatch",
            "combine",
        ];
        let f = if ep.iter().any(|k| f.contains(k)) {
            "alltoall".to_owned()
        } else {
            f
        };
        (f, *ns as f64)
    }));
    // And the `c10d::` ops by kind: a kernel without NCCL metadata (RCCL's `Generic`) is
    // named by the op that launched it.
    timed.extend(
        inp.patterns
            .collectives
            .iter()
            .map(|s| (s.kind(), s.calls.iter().map(|c| c.1).sum::<i64>() as f64)),
    );
    let top = timed.iter().map(|t| t.1).fold(0.0, f64::max);
    let names: Vec<String> = timed
        .into_iter()
        .filter(|(_, t)| *t >= 0.1 * top)
        .map(|(n, _)| n)
        .collect();
    let has = |k: &str| names.iter().any(|n| n.contains(k));
    // Communication already hidden for most of its time is prefetched already (FSDP2 gathers
    // one layer ahead by default): what stays exposed has no compute before or after it to hide
    // under (held-out suite 8's healthy FSDP2 job, 90 % hidden, told to prefetch).
    let tl = inp.timeline;
    let hidden = if tl.total_comm > 0 {
        1.0 - tl.exposed_comm as f64 / tl.total_comm as f64
    } else {
        0.0
    };
    let prefetched = format!(
        "the all-gathers already run under compute ({:.0}% of the communication is hidden: they are prefetched); what stays exposed lies where no compute runs beside it (in an FSDP step, typically its first all-gather and its last reduce-scatter), which a change of prefetch settings does not hide (a smaller first and last unit of sharding shortens them)",
        hidden * 100.0
    );
    let mut parts: Vec<&str> = Vec::new();
    if let Some(m) = inp
        .patterns
        .moe_capacity
        .as_ref()
        .filter(|_| has("alltoall"))
    {
        // The all-to-alls' size is the capacity's: shrinking them comes before hiding them.
        parts.push(if m.scale < 0.5 {
            "shrink the all-to-alls first: they carry the MoE capacity padding (the capacity-padding finding), and at a capacity factor of 1.25 they move less than half as much"
        } else {
            "shrink the all-to-alls first: they carry the MoE capacity padding (the capacity-padding finding)"
        });
    }
    if has("alltoall") {
        parts.push("pipeline the all-to-all with compute: split the batch into micro-batches so one's all-to-all runs while another computes (MoE expert-parallel two-batch overlap, DeepEP's low-latency kernels; for model-parallel embeddings, start the next batch's embedding all-to-all during this batch's dense part)");
    }
    // The all-reduces by role (`collective_roles`): gradient advice only for gradients, the
    // tensor-parallel advice for tensor-parallel calls, none for a role whose own mechanism
    // leads (SyncBatchNorm, DDP's buffers), whatever the mode.
    let role_ns = |keep: &dyn Fn(CollectiveRole) -> bool| -> f64 {
        (inp.patterns.collectives.iter())
            .filter(|s| s.kind() == "allreduce" && keep(s.role))
            .map(|s| s.calls.iter().map(|c| c.1).sum::<i64>() as f64)
            .sum()
    };
    let classified = role_ns(&|_| true) > 0.0;
    let grads =
        role_ns(&|r| matches!(r, CollectiveRole::GradientReduction | CollectiveRole::Other));
    let tp = role_ns(&|r| r == CollectiveRole::TensorParallel);
    let reduce_grads = !classified || grads >= 0.1 * top;
    if classified && tp >= 0.1 * top {
        parts.push("overlap or shrink the tensor-parallel all-reduces: each carries the output of a row-parallel layer that the next op needs, so it cannot be bucketed; async tensor parallelism or Megatron's `--tp-comm-overlap` overlaps it with its GEMM, sequence parallelism splits it into a reduce-scatter and an all-gather, and the group belongs inside one node's NVLink / Infinity Fabric");
    }
    if (has("allreduce") || names.is_empty()) && reduce_grads {
        if inp.trains && crate::standalone::manual_allreduce::deepspeed(inp.trace) {
            parts.push("overlap the gradient reduction with the backward pass: DeepSpeed's `overlap_comm: true` with `reduce_bucket_size` / `allreduce_bucket_size` sized so buckets fill while the backward runs, no reduction on accumulation micro-steps (`gradient_accumulation_steps` through the engine), and a larger per-GPU batch if the backward is too short to hide it");
        } else if inp.trains && crate::standalone::manual_allreduce::managed_by_framework(inp.trace)
        {
            parts.push("overlap the gradient all-reduce with the backward pass: tune DDP bucket sizes (`bucket_cap_mb`), reorder so gradients are ready earlier, skip synchronization on accumulation steps (`no_sync`), and raise the per-GPU batch if the backward is too short to hide it");
        } else if inp.trains {
            // No DDP / FSDP in the trace: their knobs are no advice (held-out review 91: a
            // hand-written all-reduce loop told to tune `bucket_cap_mb`).
            parts.push("overlap the gradient all-reduce with the backward pass: reduce gradients in buckets while the backward runs (DistributedDataParallel or FSDP do it), and raise the per-GPU batch if the backward is too short to hide it");
        } else if custom_all_reduce(&names) {
            // Already a one-shot / symmetric-memory path: advising it again contradicts the trace.
            parts.push("overlap the tensor-parallel all-reduce with compute (async tensor parallelism, GEMM + all-reduce fused kernels) and fuse it with the following residual add and norm; the trace already runs a custom / symmetric-memory all-reduce, so the small-message path is not the lever");
        } else {
            parts.push("overlap the tensor-parallel all-reduce with compute (async tensor parallelism, GEMM + all-reduce fused kernels), use a custom one-shot / two-shot all-reduce for small messages, and fuse the all-reduce with the following residual add and norm");
        }
    }
    if has("allgather") || has("reducescatter") {
        if inp.trains && hidden >= PREFETCHED_HIDDEN {
            parts.push(&prefetched);
        } else if inp.trains {
            parts.push("prefetch the all-gathers (FSDP `forward_prefetch` / `backward_prefetch`, a larger unit of sharding) so they run under the previous layer's compute");
        } else {
            parts.push("overlap the all-gather / reduce-scatter with the neighbouring GEMMs (sequence parallelism with overlapped communication)");
        }
    }
    if parts.is_empty() {
        parts.push("overlap the collectives with independent compute on another stream, or batch small ones into fewer calls");
    }
    let mut a = parts.join("; ");
    if let Some(first) = a.get(..1) {
        a = first.to_uppercase() + &a[1..];
    }
    a.push('.');
    // Collectives that mostly wait on other ranks: overlap and bucketing cannot hide a wait, so
    // the slow rank comes first (and the overlap the trace already has is said).
    if waiting_share(inp).is_some_and(|w| w >= WAITING_LEADS) {
        let tl = inp.timeline;
        // The share of communication already hidden behind compute, %.
        let hidden = (tl.total_comm > 0 && tl.exposed_comm < tl.total_comm)
            .then(|| (1.0 - tl.exposed_comm as f64 / tl.total_comm as f64) * 100.0);
        let lead = if back_to_back.is_some_and(|b| b >= WAITING_LEADS) {
            let overlapped = hidden
                .map(|h| format!(" (they already overlap compute for {h:.0}% of their time)"))
                .unwrap_or_default();
            // How much slower a straggler would have to be: another rank's compute would have
            // to fill this rank's compute and its exposed wait (review 14: 7 ms of compute and
            // 35 ms of exposed all-reduce, a rank 2.7× slower, which identical data-parallel
            // ranks seldom are).
            let straggler = (tl.computation > 0 && tl.exposed_comm > 0)
                .then(|| (tl.computation + tl.exposed_comm) as f64 / tl.computation as f64);
            let likelier = match straggler {
                Some(x) if x >= STRAGGLER_UNLIKELY => format!(
                    " A straggler alone would have to compute {x:.1}× as long as this rank (its {:.1} ms plus the {:.1} ms this rank waits exposed), which ranks running the same step seldom do: the transport is likely part of it (where the collective has several sizes, the fit above splits the wait from the transfer).",
                    tl.computation as f64 / 1e6,
                    tl.exposed_comm as f64 / 1e6
                ),
                _ => String::new(),
            };
            format!("The large collectives move data far below the link even when they start right after the previous one, when the ranks have just synchronized{overlapped}: either another rank is still computing or the transport is slow.{likelier} Trace every rank (`jarvis ranks`): a rank whose compute ends later is the straggler; if every rank shows the same slow back-to-back collectives, check what NCCL / RCCL runs over (`NCCL_DEBUG=INFO` names the transport: a fallback to sockets or host memory, or peer-to-peer disabled, looks like this). Overlapping or re-bucketing hides neither")
        } else {
            let overlapped = hidden
                .map(|h| format!(", and already overlap compute for {h:.0}% of their time"))
                .unwrap_or_default();
            format!("The large collectives move data far below the link{overlapped}: they mostly wait on other ranks. Find the slow rank or the skew first (trace every rank and compare them, `jarvis ranks`), and check the transport (NCCL / RCCL topology and settings for these sizes); overlapping or re-bucketing cannot hide a collective that waits")
        };
        a = format!(
            // What overlap can do comes after, for what stays exposed once the wait is gone: as
            // a next step it contradicted the lead (review 7).
            "{lead}. Once the collectives run at the link's rate, what stays exposed can be hidden: {}{}",
            a.get(..1).map(str::to_lowercase).unwrap_or_default(),
            a.get(1..).unwrap_or_default()
        );
    }
    a
}

/// The share of communication hidden under compute from which all-gathers count as prefetched
/// already.
const PREFETCHED_HIDDEN: f64 = 0.8;

/// The share of collective time spent waiting (far below the link) from which the exposed
/// communication's action leads with the slow rank.
pub const WAITING_LEADS: f64 = 0.5;

/// A collective that starts within this of the previous one's end on its stream runs right
/// after the ranks synchronized in that one: no skew is left for it to wait out.
pub const BACK_TO_BACK_NS: i64 = 100_000;

/// The share of communication-kernel time in collectives that start within
/// [`BACK_TO_BACK_NS`] of the previous collective's end on their stream. When it holds most of
/// the time and the bandwidth is still far below the link, the transport is a suspect beside a
/// rank still computing.
pub fn back_to_back_share(trace: &crate::model::Trace) -> Option<f64> {
    let mut is_comm: rustc_hash::FxHashMap<crate::model::StrId, bool> =
        rustc_hash::FxHashMap::default();
    let mut by_stream: std::collections::BTreeMap<i64, Vec<(i64, i64)>> =
        std::collections::BTreeMap::new();
    for e in &trace.events {
        if e.kind() != crate::model::EventKind::Kernel || e.dur <= 0 {
            continue;
        }
        let comm = *is_comm.entry(e.name).or_insert_with(|| {
            crate::analysis::kernel_kinds::is_communication_kernel(trace.name(e))
        });
        if comm {
            by_stream
                .entry(e.stream().unwrap_or(-1))
                .or_default()
                .push((e.ts, e.end()));
        }
    }
    let (mut b2b, mut total) = (0i64, 0i64);
    for spans in by_stream.values_mut() {
        spans.sort_unstable();
        for (i, &(s, e)) in spans.iter().enumerate() {
            total += e - s;
            if i > 0 && s - spans[i - 1].1 <= BACK_TO_BACK_NS {
                b2b += e - s;
            }
        }
    }
    (total > 0).then(|| b2b as f64 / total as f64)
}

/// How many times this rank's compute a straggler would need to take, from which the exposed
/// wait is more likely the transport's than a slower rank's.
pub const STRAGGLER_UNLIKELY: f64 = 2.0;

/// Why collectives run far below the link: waiting on other ranks, or, where most of the time
/// is in back-to-back collectives (whose ranks have just synchronized in the previous one, so
/// only a rank still computing can hold them back), possibly the transport: one rank's trace
/// cannot tell the two apart, and says so.
fn slow_link_reason(back_to_back: Option<f64>) -> String {
    match back_to_back.filter(|&b| b >= WAITING_LEADS) {
        Some(b) => format!(
            ": far below the link; {:.0}% of the collective time is in collectives that start right after the previous one ends, when the ranks have just synchronized, so either a rank still computing holds them back or the transport itself is slow (one rank's trace cannot tell which), unless the group spans nodes (the network then bounds it)",
            b * 100.0
        ),
        None => ": far below the link: the kernel mostly waits on other ranks (skew or a slow rank), unless the group spans nodes (the network then bounds it)".to_owned(),
    }
}

/// Whether the timed collective families (lower case, no `_` or spaces) already include a
/// custom one-shot / two-shot or symmetric-memory all-reduce (vLLM / SGLang custom all-reduce,
/// `multimem` (NVLS), `symm_mem`, aiter's `cross_device_reduce`, quickreduce, mscclpp).
fn custom_all_reduce(names: &[String]) -> bool {
    const CUSTOM: [&str; 9] = [
        "multimem",
        "symmmem",
        "customar",
        "customallreduce",
        "oneshot",
        "twoshot",
        "quickreduce",
        "crossdevicereduce",
        "mscclpp",
    ];
    names.iter().any(|n| CUSTOM.iter().any(|c| n.contains(c)))
}

#[cfg(test)]
mod tests {
    use super::{back_to_back_share, custom_all_reduce, slow_link_reason};

    /// Two all-reduces on one stream, the second 18 µs after the first ends (the MI300X DDP
    /// ResNet's 17.6 MB one, 9.2 ms at 3.4 GB/s): 9.2 of 10.2 ms of collective time is
    /// back to back, and a slow link is then the transport's, not a straggler's. Spread out,
    /// they keep the waiting reading.
    #[test]
    fn back_to_back_collectives_name_the_transport_as_a_suspect() {
        let trace = |gap_us: i64| {
            let text = format!(
                r#"{{"traceEvents": [
  {{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "pid": 0, "tid": 7, "ts": 0, "dur": 1000, "args": {{"stream": 7}}}},
  {{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "pid": 0, "tid": 7, "ts": {}, "dur": 9200, "args": {{"stream": 7}}}},
  {{"ph": "X", "cat": "kernel", "name": "elementwise_kernel", "pid": 0, "tid": 8, "ts": 0, "dur": 500, "args": {{"stream": 8}}}}
]}}"#,
                1000 + gap_us
            );
            crate::import::import_bytes(text.as_bytes()).expect("imports")
        };
        let b = back_to_back_share(&trace(18)).expect("collectives");
        assert!((b - 9200.0 / 10200.0).abs() < 1e-9, "{b}");
        assert!(slow_link_reason(Some(b)).contains("one rank's trace cannot tell which"));
        let apart = back_to_back_share(&trace(5000)).expect("collectives");
        assert_eq!(apart, 0.0);
        assert!(slow_link_reason(Some(apart)).contains("waits on other ranks"));
    }

    #[test]
    fn a_custom_or_symmetric_memory_all_reduce_is_recognized() {
        let n = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(custom_all_reduce(&n(&["multimemallreducekernel"])));
        assert!(custom_all_reduce(&n(&[
            "allreduce",
            "crossdevicereduce1stage"
        ])));
        assert!(custom_all_reduce(&n(&["vllm::customar"])));
        assert!(!custom_all_reduce(&n(&[
            "allreduce",
            "ncclkernelallreduceringllsum"
        ])));
        assert!(!custom_all_reduce(&[]));
    }
}
