//! Elementwise, normalization, reduce, Triton and other ops: achieved bandwidth against the
//! trace's elementwise baseline, broadcast and non-contiguous inputs (from the recorded strides),
//! dtype conversions, and tiny launch-bound tensors.

use super::*;

/// An op moving less than this per call (MB) is a tiny tensor...
pub const TINY_MB: f64 = 1.0;
/// ...and launch-bound when its kernels average less than this (µs).
pub const TINY_US: f64 = 5.0;
/// A few-workgroups kernel whose calls take at least this many times the larger of their
/// roofline time and the kernel floor is slow for its grid, not for its work.
pub const FAR_FROM_WORK: f64 = 4.0;
/// A kernel streaming at this share of the trace's elementwise baseline or more is not held
/// by its grid (`few_workgroups`).
const GRID_FREE_BASELINE_SHARE: f64 = 0.8;
/// [`FAR_FROM_WORK`] for a call of [`LONG_CALL_US`] or more whose grid leaves half the units or
/// more idle (`few_workgroups`).
const FAR_FROM_WORK_LONG: f64 = 2.0;
/// A call this long, µs, is far above any kernel's fixed cost.
const LONG_CALL_US: f64 = 100.0;
/// Below this share of the elementwise baseline, the kernel itself is slow.
pub const BELOW_BASELINE: f64 = 0.5;

use super::recorded_shapes::contiguous_where_it_matters;
pub(crate) use super::recorded_shapes::{inputs_contiguous, shapes, tensor_list_shapes};

/// The dtypes of the activation-sized tensor inputs (those with the most elements), in order:
/// a BatchNorm's float per-channel statistics beside bf16 activations are no conversion. Where
/// the recorded types and shapes do not line up, every tensor input's dtype.
fn activation_types<'a>(input_type: &'a str, dims: &[Vec<i64>]) -> Vec<&'a str> {
    // `['c10::BFloat16', '', 'float']`: the quoted entries, one per input.
    let entries: Vec<&str> = input_type.split('\'').skip(1).step_by(2).collect();
    let is_dtype = |t: &str| t.contains("::") || t.starts_with("float") || t.starts_with("Half");
    if entries.len() != dims.len() {
        return entries.into_iter().filter(|t| is_dtype(t)).collect();
    }
    let numel = |d: &Vec<i64>| -> i64 { d.iter().product() };
    let largest = dims.iter().filter(|d| !d.is_empty()).map(numel).max();
    entries
        .into_iter()
        .zip(dims)
        .filter(|(t, d)| is_dtype(t) && !d.is_empty() && Some(numel(d)) == largest)
        .map(|(t, _)| t)
        .collect()
}

/// A host↔device copy shorter than this (µs per call) moves too little for the link's bandwidth
/// to be its cost: at 25 GB/s (PCIe 4 x16, pinned) 10 µs is 250 KB.
const SMALL_COPY_US: f64 = 10.0;

pub(super) fn causes(r: &OpRow, shape: &OpRow, ctx: &Context<'_>) -> Vec<Cause> {
    let mut out = Vec::new();
    // A copy between host and device runs at the link's speed, not HBM's: judged apart.
    let transfers: Vec<&str> = shape
        .kernel_names
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| is_host_device_copy(n))
        .collect();
    if let Some(kind) = transfers.first() {
        let mb = shape.data_mb.map(|m| m * MIB / 1e6);
        // A copy too short for bandwidth to matter is a readback: its cost is the latency and
        // the wait, not the link (held-out suite 2, s16: 989 copies of 8 bytes after
        // `aten::nonzero` were told the link was an order of magnitude slower than HBM).
        let copy_us: f64 = shape
            .kernel_names
            .iter()
            .filter(|(n, _)| is_host_device_copy(n))
            .map(|(_, us)| *us)
            .sum();
        if copy_us > 0.0 && copy_us < SMALL_COPY_US {
            out.push(Cause {
                key: "host_readback",
                title: format!("a {copy_us:.1} µs host↔device copy per call: a readback, not a transfer"),
                evidence: format!(
                    "its copy ({}) takes {copy_us:.1} µs per call: under {SMALL_COPY_US:.0} µs even a slow link moves no more than a few hundred KB, so bandwidth is not its cost; the copy's fixed latency is, and the host's wait for the GPU to produce the value before it can go on (an output whose size or value the host needs: `.item()`, `.tolist()`, `nonzero`, boolean indexing).",
                    crate::standalone::md::code(kind)
                ),
                action: "Keep the value on the GPU: compute with masks or fixed-size ops instead of data-dependent shapes, read results back once per step rather than per call, and drop readbacks used only for logging or checks.".into(),
                waste: None,
                confidence: Confidence::High,
                bounds_all: true,
                scope: None,
            });
            return out;
        }
        out.push(Cause {
            key: "host_device_copy",
            title: format!("a host↔device copy ({kind})"),
            evidence: format!(
                "its kernel is {}{}: the data crosses the host link (PCIe or the CPU-GPU fabric), an order of magnitude slower than HBM, and the GPU waits for it.",
                crate::standalone::md::code(kind),
                mb.map(|m| format!(", {m:.1} MB per call")).unwrap_or_default()
            ),
            action: "Keep the tensor on the GPU (create it there, cache it across steps); where a copy is needed, copy from pinned memory with `non_blocking=True` on a side stream so it overlaps compute.".into(),
            waste: None,
            confidence: Confidence::High,
            bounds_all: true,
            scope: None,
        });
        return out;
    }
    if let Some(c) = few_workgroups(shape, super::signature_share(r, shape), ctx) {
        out.push(c);
    }
    let calls = r.count.max(1) as f64;
    let mean_us = r.kernel_us / calls;
    if let Some(mb) = shape.data_mb {
        // `Data Moved (MB)` is in MiB (TraceLens divides by 2^20).
        let bytes = mb * MIB;
        if mb < TINY_MB && mean_us < TINY_US && r.count >= 10 {
            // The size is the signature's: say how many of the op's calls it covers (MI300X
            // ResNet-18 with checkpointing: 117 of `aten::add_`'s 189 calls are the 24-byte
            // `num_batches_tracked` increments, the other 72 residual adds).
            let calls = if shape.count > 0 && shape.count < r.count {
                format!("{} of its {} calls", shape.count, r.count)
            } else {
                format!("{} calls", r.count)
            };
            out.push(Cause {
                key: "tiny_launch_bound",
                title: format!("tiny tensors: {} per call in {mean_us:.1} µs", size_text(bytes)),
                evidence: format!("{calls} each move {} ({mean_us:.1} µs per call over all of them): the launch and the kernel's start-up dominate, whatever the bandwidth.", size_text(bytes)),
                action: if r.graph_replayed {
                    "They are already replayed by a graph, so their launches cost no host time: fewer kernels is the lever: fuse these small ops with their neighbours (`torch.compile`, a foreach/multi-tensor kernel).".into()
                } else {
                    "Fuse these small ops with their neighbours (`torch.compile`, a foreach/multi-tensor kernel) or capture them in a CUDA/HIP graph.".into()
                },
                waste: None,
                confidence: Confidence::High,
                bounds_all: false,
                scope: None,
            });
        }
    }
    // The finding's own figure (all its signatures together, as its Issue states it), so the
    // cause and the Issue quote one bandwidth; the largest signature's where the group has none.
    let achieved = achieved_tb_s(r).or_else(|| achieved_tb_s(shape));
    // Under the baseline's own size class (16 MB per call) a kernel's fixed cost, not its
    // streaming, sets its time: it is not compared with ops that stream.
    let small = shape
        .data_mb
        .filter(|&m| (TINY_MB..crate::standalone::rules::BASELINE_MIN_MB).contains(&m));
    if let (Some(base), Some(bw), Some(mb)) = (ctx.baseline_tb_s, achieved, small) {
        if bw < BELOW_BASELINE * base {
            let mean_us = r.kernel_us / r.count.max(1) as f64;
            let stream_us = mb * MIB / (base * 1e12) * 1e6;
            // `Data Moved (MB)` is in MiB; the text speaks decimal megabytes.
            let mb = mb * MIB / 1e6;
            out.push(Cause {
                key: "elementwise_small_tensor",
                title: format!("small tensors: {mb:.1} MB per call in {mean_us:.1} µs"),
                evidence: format!(
                    "each call moves {mb:.1} MB in {mean_us:.1} µs; at the trace's elementwise baseline ({base:.2} TB/s, ops of {} MB or more) that is {stream_us:.1} µs of streaming: the rest is the kernel's fixed cost (launch, ramp-up, drain), which a tensor this small cannot hide, so its bandwidth is not compared with theirs",
                    crate::standalone::rules::BASELINE_MIN_MB
                ),
                action: if super::kernels::is_engine_op(&shape.name) {
                    "It is the serving engine's own kernel: fewer, larger calls are the lever (a fused neighbour in the engine, such as a norm with its residual add or an activation fused into its GEMM's epilogue); tuning its bandwidth is not.".into()
                } else {
                    "Fewer, larger calls: fuse it with its neighbours (`torch.compile`) or batch more rows per call; tuning its bandwidth is not the lever at this size.".into()
                },
                waste: None,
                confidence: Confidence::Medium,
                bounds_all: false,
                scope: None,
            });
        }
    }
    // A per-channel NCHW BatchNorm kernel reads its input in two passes or more (V100
    // ResNet-50's cuDNN `bn_bw_1C11_kernel_new`: x and dy twice), which the one-pass byte model
    // does not count: "44% of the elementwise bandwidth" was above it counted whole (review).
    let multi_pass = shape
        .kernel_names
        .iter()
        .any(|(n, _)| super::batchnorm::is_per_channel(n));
    if let (Some(base), Some(bw), false) = (ctx.baseline_tb_s, achieved, multi_pass) {
        if bw < BELOW_BASELINE * base
            && shape
                .data_mb
                .is_some_and(|m| m >= crate::standalone::rules::BASELINE_MIN_MB)
        {
            let dims = shapes(&shape.input_dims);
            let strides = shapes(&shape.input_strides);
            let strided: Vec<usize> = dims
                .iter()
                .zip(&strides)
                .enumerate()
                .filter(|(_, (d, st))| !contiguous_where_it_matters(d, st))
                .map(|(i, _)| i)
                .collect();
            // Tensor inputs of different sizes: one is broadcast against the other.
            let sizes: Vec<i64> = dims
                .iter()
                .filter(|d| !d.is_empty())
                .map(|d| d.iter().product())
                .collect();
            // Only between the operands of an elementwise op: a norm's weight is smaller by design.
            // And only of PyTorch's own ops: an engine's fused kernel (`silu_and_mul` reads
            // [T, 2I] and writes [T, I]) has operands of different sizes by design.
            let engine = super::kernels::is_engine_op(&shape.name);
            let broadcast = shape.category == SeedCategory::Elementwise
                && shape.name.starts_with("aten::")
                && sizes.windows(2).any(|w| w[0] != w[1]);
            // Tensor inputs of different dtypes (`copy_` from bf16 into fp32, mixed adds).
            let types = activation_types(&shape.input_type, &dims);
            let convert = types.windows(2).any(|w| w[0] != w[1]);
            let why = if !strided.is_empty() {
                format!("input {} {} not contiguous (strides {} for shape {}): the kernel gathers instead of streaming", strided.iter().map(|i| (i + 1).to_string()).collect::<Vec<_>>().join(", "), if strided.len() == 1 { "is" } else { "are" }, shape_text(&strides[strided[0]]), shape_text(&dims[strided[0]]))
            } else if broadcast {
                "one input is broadcast against the other (a size-1 or missing dimension), which PyTorch's generic kernel handles with index arithmetic per element".to_owned()
            } else if convert {
                format!(
                    "it converts dtypes ({}), reading one width and writing another",
                    types.join(" → ")
                )
            } else if let Some(rows) = row_per_workgroup(shape, &dims) {
                rows
            } else if let Some(k) = nchw_kernel(shape).filter(|_| ctx.convolutions) {
                // The layout is in the kernel's name, and the trace's convolutions already pay
                // for NCHW with transposes: one channels_last fix takes both (review 20: MI300X
                // ResNet-18's `max_pool_backward_nchw` read "no layout reason is visible").
                format!("its kernel is the NCHW variant ({}) and the trace's convolutions run NHWC kernels behind layout transposes: the model is NCHW", crate::standalone::md::code(nchw_word(k)))
            } else {
                "no layout reason is visible in the recorded shapes and strides".to_owned()
            };
            let key = if !strided.is_empty() {
                "elementwise_non_contiguous"
            } else if why.starts_with("its kernel is the NCHW variant") {
                "elementwise_nchw_kernel"
            } else if why.starts_with("the kernel runs one workgroup") {
                "elementwise_row_per_workgroup"
            } else if broadcast {
                "elementwise_broadcast"
            } else if convert {
                "elementwise_dtype_conversion"
            } else {
                "elementwise_below_baseline"
            };
            // A grid that leaves most units idle is the reason for the bandwidth: the cause,
            // where "below the baseline" with no reason would restate the symptom (held-out
            // suite 9: GroupNorm's statistics on 32 workgroups).
            if key == "elementwise_below_baseline"
                && out.iter().any(|c| c.key == "elementwise_few_workgroups")
            {
                return out;
            }
            out.push(Cause {
                key,
                title: format!("{:.0}% of the trace's elementwise bandwidth", bw / base * 100.0),
                evidence: format!("it moves {bw:.2} TB/s where the trace's simple elementwise ops reach {base:.2} TB/s; {why}."),
                action: if !strided.is_empty() {
                    "Make the input contiguous where it is produced (avoid a transpose/permute right before), or fuse the layout change into the producer.".into()
                } else if convert {
                    "Keep tensors in one dtype across the region (autocast boundaries), or fuse the cast into its producer or consumer.".into()
                } else if key == "elementwise_nchw_kernel" {
                    "Convert the model and its inputs to channels_last (`model.to(memory_format=torch.channels_last)`): the same change that removes the convolutions' layout transposes switches this op to its NHWC kernel.".into()
                } else if why.starts_with("the kernel runs one workgroup") {
                    "Give each workgroup more of the row, or several rows (a kernel variant for short rows: one warp or wavefront per row, vectorized loads); where the library has such a variant or a fused neighbour (a norm with its residual add), use it; replay it for the kernel team.".into()
                } else if engine && super::kernels::is_gated_activation(&shape.name.to_ascii_lowercase()) {
                    "It is the serving engine's own kernel (one launch already): compiling the model fuses nothing of it, but a GEMM can fold it in (the gate/up GEMM with a gated epilogue, or the down GEMM reading it in its prologue) where the engine or its kernel library has one; else replay it for the kernel team, or use the engine's other backend for it.".into()
                } else if engine {
                    "It is the serving engine's own kernel (one launch already): compiling the model fuses nothing of it; replay it for the kernel team, or use the engine's other backend for it.".into()
                } else {
                    "Fuse it with its neighbours (`torch.compile`) so the data crosses memory once; if it stays slow, replay it for the kernel team.".into()
                },
                waste: Some(1.0 - bw / base),
                confidence: if key == "elementwise_below_baseline" { Confidence::Low } else { Confidence::Medium },
                bounds_all: false,
                scope: None,
            });
        }
    }
    out
}

/// The op's main kernel where its name marks the NCHW layout (`max_pool_backward_nchw`,
/// `…_nchw_…`), not a layout conversion between NCHW and NHWC.
fn nchw_kernel(shape: &OpRow) -> Option<&str> {
    shape
        .kernel_names
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(k, _)| k.as_str())
        .filter(|k| {
            let l = k.to_ascii_lowercase();
            (l.contains("_nchw") || l.contains("nchw_"))
                && !crate::analysis::kernel_kinds::is_layout_conversion(k)
                && !l.contains("nhwc")
        })
}

/// The identifier in a kernel's name that carries its NCHW mark (`max_pool_backward_nchw` out
/// of `void at::native::(anonymous namespace)::max_pool_backward_nchw<…>(…)`).
fn nchw_word(kernel: &str) -> &str {
    kernel
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .find(|w| w.to_ascii_lowercase().contains("nchw"))
        .unwrap_or(kernel)
}

/// Bytes a launched thread moves below which a small grid is no cause ([`few_workgroups`]).
const MIN_BYTES_PER_THREAD: f64 = 64.0;

/// A memory-bound kernel needs loads in flight on every CU/SM to reach HBM bandwidth: where
/// the main kernel's recorded grid has fewer workgroups than the GPU has CUs/SMs (at least a
/// quarter of them idle) and that kernel is most of the op's time, the launch explains the
/// bandwidth (a LayerNorm over 8 rows in 8 workgroups; an activation launched one workgroup per
/// token of a 32-token decode batch).
/// `sig_share`: `shape`'s share of its group's time (the grid is that signature's).
pub(super) fn few_workgroups(shape: &OpRow, sig_share: f64, ctx: &Context<'_>) -> Option<Cause> {
    grid_cause(shape, sig_share, ctx).map(|(c, _)| c)
}

/// [`few_workgroups`] with the share of the units its grid leaves idle.
pub(super) fn grid_cause(shape: &OpRow, sig_share: f64, ctx: &Context<'_>) -> Option<(Cause, f64)> {
    let p = ctx.platform?;
    let units = p.units()?;
    let total: f64 = shape.kernel_names.iter().map(|(_, us)| us).sum();
    let (name, us, launch) = shape
        .kernel_names
        .iter()
        .zip(&shape.kernel_launch)
        .filter_map(|((n, us), l)| l.map(|l| (n.as_str(), *us, l)))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    let share = if total > 0.0 { us / total } else { 0.0 };
    // A kernel near the launch floor is short for lack of work, not of workgroups.
    let floor = ctx.kernel_floor_us.unwrap_or(0.0);
    if us < (2.0 * floor).max(TINY_US) {
        return None;
    }
    // Nor is one near its own work's floor: the larger of its roofline time and the kernel
    // floor, times [`FAR_FROM_WORK`]; a call within that is short for its work, and more
    // workgroups would not finish it sooner (BERT-small's GELU on MI300X: 4 µs calls over
    // 141 × 2048 values). A call far beyond it is the grid's doing, whatever its bytes
    // (review 8: a LayerNorm backward over 8 rows, 8 workgroups, 32.6 µs a call for 0.3 µs of
    // bytes at peak, had been let off as "work under the fixed cost"). Without recorded
    // shapes the work is unknown, and a small grid may be all the op has to do (MI210's
    // BatchNorm running-statistics update on one workgroup; a bias gradient's column sum):
    // nothing is claimed.
    let per_call = shape.kernel_us / shape.count.max(1) as f64;
    let wgs = super::recorded_workgroups(name, &launch);
    let idle = 1.0 - wgs as f64 / units as f64;
    // A call streaming near the trace's elementwise baseline is not held by its grid, whatever
    // the grid looks like (suite 9's healthy ResNet-50: BatchNorm's forward on 128 workgroups of
    // 304 CUs at 87 % of the baseline).
    if let (Some(base), Some(bw)) = (ctx.baseline_tb_s, achieved_tb_s(shape)) {
        if bw >= GRID_FREE_BASELINE_SHARE * base {
            return None;
        }
    }
    // A long call (far above any fixed cost) that leaves most units idle is the grid's doing
    // from twice its work's time: a unit streams at most a few times its share of HBM, so a
    // quarter of them cannot reach half the bandwidth (held-out suite 9: GroupNorm's
    // `RowwiseMomentsCUDAKernel`, one workgroup per group, 32 on 142 SMs, 65 % of the op's
    // time at 2.7× its work, had gone unnamed).
    let far = if idle >= 0.5 && per_call >= LONG_CALL_US {
        FAR_FROM_WORK_LONG
    } else {
        FAR_FROM_WORK
    };
    if shape
        .roofline_us
        .is_none_or(|roof| per_call < far * roof.max(floor))
    {
        return None;
    }
    if wgs >= units || idle < super::gemm::IDLE_SLOTS_MIN || share < 0.5 {
        return None;
    }
    // Each launched thread must have a loop's worth of bytes for the grid to hold the time:
    // with under `MIN_BYTES_PER_THREAD` each (four 16-byte loads), every thread issues its loads
    // at once and more workgroups would shorten nothing (review 24: a 640-element `sum` in one
    // 128-thread workgroup, 20 bytes a thread, told to split the reduction). The bytes are the
    // roofline's: its time at the platform's HBM bandwidth.
    let threads = wgs
        * launch
            .block
            .iter()
            .map(|&b| u64::from(b.max(1)))
            .product::<u64>();
    let bytes = shape.roofline_us.unwrap_or(0.0) * p.hbm_tbps.0 * 1e6;
    if threads > 0 && bytes / (threads as f64) < MIN_BYTES_PER_THREAD {
        return None;
    }
    let unit = p.unit_name();
    Some((Cause {
        key: "elementwise_few_workgroups",
        title: format!("{wgs} workgroups for {units} {unit}s"),
        evidence: format!(
            "its kernel {} launched {wgs} workgroups (grid {:?}, block {:?}, as recorded) for {}'s {units} {unit}s: {:.0}% of them issue no loads, and a memory-bound kernel reaches HBM bandwidth only with every {unit} streaming; it is {:.0}% of the op's kernel time",
            crate::standalone::md::code(&crate::standalone::md::short(name, 60)),
            launch.grid,
            launch.block,
            p.label(),
            idle * 100.0,
            share * 100.0
        ),
        // A reduction's grid is set by its outputs (a bias gradient's column sum: one
        // workgroup per block of columns), so more rows only lengthen each thread's loop.
        action: if name.contains("reduce_kernel") && launch.grid[0] <= 1 && launch.grid[1] > 1 {
            // PyTorch's `reduce_kernel` puts the workgroups that share one output along grid.y
            // (`ctas_per_output`): a grid of [1, 16, 1] is already a split reduction, sized by
            // its input (review 12: "split the reduction" told to one; a loss's mean of 131 072
            // values).
            format!("PyTorch already splits this reduction across {} workgroups for its one output (grid.y, combined by a second pass), as many as its input warrants: the input is small, so the levers are doing the reduction less often or fusing it with the op that produces its input (`torch.compile`).", launch.grid[1])
        } else if name.contains("reduce") {
            format!(
                "Split the reduction across workgroups (each sums a slice of the rows, a second pass combines: `torch.compile` generates such split reductions){}; a larger batch only lengthens each thread's loop.",
                // A GEMM epilogue is a neighbour only where the trace runs GEMMs.
                if ctx.gemm_rows.is_empty() && ctx.gemm_peers.is_empty() {
                    ""
                } else {
                    ", or fuse it into its neighbour (a bias gradient into the weight-gradient GEMM's epilogue, cuBLASLt's BGRADB)"
                }
            )
        } else if name.contains("RowwiseMoments") {
            // Eager GroupNorm's statistics: one workgroup per (sample, group).
            format!("PyTorch's eager GroupNorm computes each (sample, group)'s statistics in one workgroup, {wgs} here: split the reduction across workgroups (`torch.compile` the norm or the model: Inductor's `triton_red_fused_native_group_norm` kernels use thousands), use a channels-last group-norm kernel, or batch more samples per call.")
        } else if super::kernels::is_engine_op(&shape.name) {
            "More rows per call (a larger batch), or the engine's kernel variant that splits each row (or several tokens) across workgroups; replay it for the kernel team.".into()
        } else {
            "More rows per call (a larger batch), or a kernel that splits each row across workgroups (`torch.compile` generates one sized to the GPU); the grid, not the bytes, limits it.".into()
        },
        waste: Some(idle * share * sig_share),
        confidence: Confidence::High,
        bounds_all: false,
        scope: None,
    }, idle))
}

/// Bytes in words: `512 B` under a kilobyte, else whole kilobytes (`295 KB`).
fn size_text(bytes: f64) -> String {
    if bytes < 1e3 {
        format!("{bytes:.0} B")
    } else {
        format!("{:.0} KB", bytes / 1e3)
    }
}

/// Elements each thread of a one-row-per-workgroup kernel must handle, at least, to keep
/// enough loads in flight (a 16-byte vector of bf16 is 8).
const ROW_ELEMENTS_PER_THREAD: u64 = 8;

/// "one workgroup of 512 threads per row of 128 elements …": where the main kernel's recorded
/// grid is one workgroup per row of the first input (rows = elements / last dimension) and each
/// thread has under [`ROW_ELEMENTS_PER_THREAD`] elements of its row, the launch explains the
/// bandwidth: short rows on wide workgroups leave most threads idle or each with too little
/// work to hide memory latency (Qwen3's per-head QK-norm: 491,520 rows of 128 on a 512-thread
/// kernel). `None` where the trace records no launch or the grid is not one per row.
fn row_per_workgroup(shape: &OpRow, dims: &[Vec<i64>]) -> Option<String> {
    let d = dims.first().filter(|d| d.len() >= 2)?;
    let row = *d.last()? as u64;
    let rows: u64 = d[..d.len() - 1].iter().map(|&x| x.max(0) as u64).product();
    let (name, launch) = shape
        .kernel_names
        .iter()
        .zip(&shape.kernel_launch)
        .filter_map(|((n, us), l)| l.map(|l| (n, us, l)))
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(n, _, l)| (n, l))?;
    let workgroups = super::recorded_workgroups(name, &launch);
    let threads = launch.block_size();
    if rows == 0 || row == 0 || workgroups != rows || threads * ROW_ELEMENTS_PER_THREAD <= row {
        return None;
    }
    Some(format!(
        "the kernel runs one workgroup of {threads} threads per row (grid {} for {rows} rows of {row} elements): {:.2} elements per thread, too little work for each to keep its loads in flight{}",
        workgroups,
        row as f64 / threads as f64,
        if threads > row { ", and most threads of each workgroup have no element at all" } else { "" }
    ))
}

/// A runtime copy between host and device (`Memcpy HtoD (Pageable -> Device)`, `hipMemcpyDtoH`).
pub fn is_host_device_copy(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.contains("memcpy")
        && ["htod", "dtoh", "host", "pageable", "pinned"]
            .iter()
            .any(|k| n.contains(k))
}

fn shape_text(v: &[i64]) -> String {
    format!(
        "({})",
        v.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
    )
}

/// Bytes in one unit of the `Data Moved (MB)` column: TraceLens divides bytes by 2^20.
pub const MIB: f64 = 1024.0 * 1024.0;

/// Achieved TB/s (decimal) of one signature: the bytes of all its instances over their kernel
/// time, `Data Moved (MB)` read as MiB.
pub fn achieved_tb_s(r: &OpRow) -> Option<f64> {
    let mb = r.data_mb?;
    (r.kernel_us > 0.0).then(|| mb * MIB * r.count as f64 / (r.kernel_us * 1e-6) / 1e12)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One 512-thread workgroup per 128-element row (491,520 rows): a quarter of an element
    /// per thread; the same rows on 16-thread workgroups (8 each) are not named, nor a grid
    /// that is not one per row.
    #[test]
    fn short_rows_on_wide_workgroups_are_the_reason() {
        let norm = |grid: u32, block: u32| {
            let mut r = crate::standalone::ops::tests_support::row("aiter::rmsnorm");
            r.kernel_names = vec![("add_rmsnorm_quant_kernel".into(), 300.0)];
            r.kernel_launch = vec![Some(crate::model::LaunchDims {
                grid: [grid, 1, 1],
                block: [block, 1, 1],
            })];
            r
        };
        let dims = vec![vec![491_520, 128], vec![128]];
        let why = row_per_workgroup(&norm(491_520, 512), &dims).expect("one row each");
        assert!(
            why.contains("512 threads per row") && why.contains("0.25 elements per thread"),
            "{why}"
        );
        assert_eq!(row_per_workgroup(&norm(491_520, 16), &dims), None);
        assert_eq!(row_per_workgroup(&norm(1920, 512), &dims), None);
    }

    /// An 8-byte readback after `aten::nonzero` (1.4 µs) is latency and a wait, never the
    /// link's bandwidth; a 2 ms upload is a transfer.
    #[test]
    fn a_short_copy_is_a_readback_not_a_transfer() {
        let ctx = Context::on(None);
        let copy = |us: f64| {
            let mut r = crate::standalone::ops::tests_support::row("aten::nonzero");
            r.count = 900;
            r.kernel_us = 900.0 * (us + 3.0);
            r.kernel_names = vec![
                (
                    "void at::cuda::cub::DeviceSelectSweepKernel<...>".into(),
                    3.0,
                ),
                ("Memcpy DtoH (Device -> Pinned)".into(), us),
            ];
            r
        };
        let short = causes(&copy(1.4), &copy(1.4), &ctx);
        assert_eq!(short[0].key, "host_readback");
        assert!(short[0].title.contains("1.4 µs"), "{}", short[0].title);
        assert!(!short[0].evidence.contains("order of magnitude"));
        let long = causes(&copy(2000.0), &copy(2000.0), &ctx);
        assert_eq!(long[0].key, "host_device_copy");
    }

    /// A per-channel NCHW BatchNorm kernel reads its input twice or more, which the one-pass
    /// byte model does not count: it is not compared with the elementwise baseline (V100
    /// ResNet-50's cuDNN backward read "44%" of it, above it counted whole); the same op on a
    /// channels-last kernel is.
    #[test]
    fn multi_pass_batchnorm_is_not_compared_with_the_baseline() {
        let ctx = Context {
            baseline_tb_s: Some(0.63),
            ..Context::on(None)
        };
        let bn = |kernel: &str| {
            let mut r =
                crate::standalone::ops::tests_support::row("aten::cudnn_batch_norm_backward");
            r.category = SeedCategory::Batchnorm;
            r.data_mb = Some(100.0);
            r.count = 10;
            // 100 MiB per call in 400 µs: 0.26 TB/s, 42 % of the baseline.
            r.kernel_us = 4000.0;
            r.kernel_names = vec![(kernel.into(), 4000.0)];
            r
        };
        let keys = |r: &OpRow| {
            causes(r, r, &ctx)
                .into_iter()
                .map(|c| c.key)
                .collect::<Vec<_>>()
        };
        let two_pass = bn("void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>");
        assert!(
            !keys(&two_pass).contains(&"elementwise_below_baseline"),
            "{:?}",
            keys(&two_pass)
        );
        let nhwc = bn("void cudnn::bn_bw_1C11_kernel_NHWC<float>");
        assert!(
            keys(&nhwc).contains(&"elementwise_below_baseline"),
            "{:?}",
            keys(&nhwc)
        );
    }

    /// SGLang's `silu_and_mul` on 32 tokens: 2.3 MB per call in 9 µs against a baseline of
    /// 3.45 TB/s set by ops of 16 MB or more: a small tensor whose fixed cost sets its time, not
    /// "below the baseline, no layout reason"; from 16 MB a slow op is compared.
    #[test]
    fn small_tensors_are_not_compared_with_streaming_ops() {
        let ctx = Context {
            baseline_tb_s: Some(3.45),
            kernel_floor_us: None,
            ..Context::on(None)
        };
        let op = |mb: f64, us: f64| {
            let mut r = crate::standalone::ops::tests_support::row("sgl_kernel::silu_and_mul");
            r.category = SeedCategory::Elementwise;
            r.data_mb = Some(mb);
            r.count = 10;
            r.kernel_us = us * 10.0;
            r
        };
        let small = op(2.3, 9.0);
        let all = causes(&small, &small, &ctx);
        let c = all
            .iter()
            .find(|c| c.key == "elementwise_small_tensor")
            .expect("small tensor");
        // 2.3 MiB (TraceLens's unit) is 2.4 MB.
        assert!(c.title.contains("2.4 MB per call in 9.0 µs"), "{}", c.title);
        assert!(
            c.action
                .starts_with("It is the serving engine's own kernel"),
            "{}",
            c.action
        );
        assert!(all.iter().all(|c| c.key != "elementwise_below_baseline"));
        let large = op(64.0, 100.0);
        let keys: Vec<_> = causes(&large, &large, &ctx)
            .into_iter()
            .map(|c| c.key)
            .collect();
        assert!(keys.contains(&"elementwise_below_baseline"), "{keys:?}");
        assert!(!keys.contains(&"elementwise_small_tensor"), "{keys:?}");
    }

    /// The tiny-tensor cause counts the calls of the signature it measured.
    #[test]
    fn tiny_tensors_say_how_many_calls_they_are() {
        // `aten::add_` of 189 calls, the largest signature 117 calls of one int64 (8 B × 3:
        // `num_batches_tracked += 1`): the cause counts those, not all 189.
        let mut r = crate::standalone::ops::tests_support::row("aten::add_");
        r.count = 189;
        r.kernel_us = 189.0 * 4.3;
        let mut shape = r.clone();
        shape.count = 117;
        shape.kernel_us = 117.0 * 4.3;
        shape.data_mb = Some(24.0 / MIB);
        let ctx = Context::on(None);
        let c = causes(&r, &shape, &ctx)
            .into_iter()
            .find(|c| c.key == "tiny_launch_bound")
            .expect("tiny");
        assert!(
            c.evidence
                .starts_with("117 of its 189 calls each move 24 B"),
            "{}",
            c.evidence
        );
        // One signature: every call.
        let c = causes(&shape, &shape, &ctx)
            .into_iter()
            .find(|c| c.key == "tiny_launch_bound")
            .expect("tiny");
        assert!(
            c.evidence.starts_with("117 calls each move"),
            "{}",
            c.evidence
        );
    }

    /// A LayerNorm backward over 8 rows in 8 workgroups of MI300X's 304 CUs, 40 µs a call:
    /// the grid leaves 97 % of the CUs idle; a short kernel near the launch floor, or a grid
    /// that fills the GPU, is not told so.
    #[test]
    fn a_grid_smaller_than_the_gpu_is_the_reason() {
        let mi300 = crate::perf::platform::by_name("mi300x").expect("mi300x");
        let ctx = Context {
            baseline_tb_s: None,
            kernel_floor_us: Some(3.0),
            ..Context::on(Some(&mi300))
        };
        let norm = |grid: u32, us: f64| {
            let mut r =
                crate::standalone::ops::tests_support::row("aten::native_layer_norm_backward");
            r.kernel_names = vec![("layer_norm_grad_input_kernel".into(), us)];
            r.kernel_launch = vec![Some(crate::model::LaunchDims {
                grid: [grid, 1, 1],
                block: [256, 1, 1],
            })];
            // Its work at peak: 10 µs, above the 3 µs floor.
            r.roofline_us = Some(10.0);
            r.count = 1;
            r.kernel_us = us;
            r
        };
        let c = few_workgroups(&norm(8, 40.0), 1.0, &ctx).expect("8 for 304");
        assert_eq!(c.title, "8 workgroups for 304 CUs");
        assert!((c.waste.expect("costed") - (1.0 - 8.0 / 304.0)).abs() < 1e-12);
        assert!(
            few_workgroups(&norm(8, 4.0), 1.0, &ctx).is_none(),
            "near the floor"
        );
        assert!(
            few_workgroups(&norm(400, 40.0), 1.0, &ctx).is_none(),
            "fills the GPU"
        );
        // A reduction's grid is its outputs': split it, not a larger batch.
        let mut sum = norm(8, 40.0);
        sum.kernel_names[0].0 = "void at::native::reduce_kernel<128, 4>".into();
        let c = few_workgroups(&sum, 1.0, &ctx).expect("8 for 304");
        assert!(c.action.starts_with("Split the reduction"), "{}", c.action);
        // With no GEMM in the trace, no GEMM epilogue is offered to fuse it into.
        assert!(!c.action.contains("BGRADB"), "{}", c.action);
        let rows = [4096_i64];
        let with_gemms = Context {
            gemm_rows: &rows,
            ..Context::on(Some(&mi300))
        };
        let c = few_workgroups(
            &sum,
            1.0,
            &Context {
                kernel_floor_us: Some(3.0),
                ..with_gemms
            },
        )
        .expect("8 for 304");
        assert!(c.action.contains("BGRADB"), "{}", c.action);
        // PyTorch's split reduction (grid [1, 16, 1]: 16 workgroups on one output) is already
        // split: never told to split it.
        sum.kernel_launch = vec![Some(crate::model::LaunchDims {
            grid: [1, 16, 1],
            block: [32, 16, 1],
        })];
        let c = few_workgroups(&sum, 1.0, &ctx).expect("16 for 304");
        assert!(
            c.action
                .starts_with("PyTorch already splits this reduction across 16 workgroups"),
            "{}",
            c.action
        );
        // Work under the floor in calls far beyond it: the grid's doing (review 8: the
        // LayerNorm backward's 32.6 µs calls for 0.3 µs of bytes at peak).
        let mut small = norm(8, 40.0);
        small.roofline_us = Some(1.0);
        assert!(
            few_workgroups(&small, 1.0, &ctx).is_some(),
            "far from its work"
        );
        // Calls within 4× of their work's floor (the larger of roofline and kernel floor), or
        // work unknown (no recorded shapes): nothing to spread.
        let mut near = norm(8, 10.0);
        near.roofline_us = Some(1.0);
        assert!(few_workgroups(&near, 1.0, &ctx).is_none(), "near its work");
        small.roofline_us = None;
        assert!(few_workgroups(&small, 1.0, &ctx).is_none(), "unknown work");
        // A 640-element fp32 sum in one 128-thread workgroup (review 24): 2.5 KB, 20 bytes a
        // thread, one round of loads: nothing for more workgroups to take, whatever the call
        // takes. The same call over 64 KB (512 bytes a thread) is the grid's doing.
        let mut tiny = norm(1, 13.6);
        tiny.kernel_names[0].0 = "void at::native::reduce_kernel<128, 4>".into();
        tiny.kernel_launch = vec![Some(crate::model::LaunchDims {
            grid: [1, 1, 1],
            block: [32, 4, 1],
        })];
        tiny.roofline_us = Some(2560.0 / (mi300.hbm_tbps.0 * 1e6));
        let ctx = Context {
            kernel_floor_us: Some(0.5),
            ..ctx
        };
        assert!(
            few_workgroups(&tiny, 1.0, &ctx).is_none(),
            "20 bytes a thread"
        );
        tiny.roofline_us = Some(65536.0 / (mi300.hbm_tbps.0 * 1e6));
        assert!(
            few_workgroups(&tiny, 1.0, &ctx).is_some(),
            "512 bytes a thread"
        );
        // A long call at 2.7× its work whose grid leaves most units idle (GroupNorm's
        // statistics at batch 1: 32 workgroups): the grid's doing, with the GroupNorm lever.
        // The same call on 200 workgroups (a third idle) stays within its work's reach.
        let mut moments = norm(32, 2700.0);
        moments.kernel_names[0].0 =
            "void at::native::(anonymous namespace)::RowwiseMomentsCUDAKernel<c10::Half>".into();
        moments.roofline_us = Some(1000.0);
        let c = few_workgroups(&moments, 1.0, &ctx).expect("32 for 304");
        assert!(c.action.contains("one workgroup, 32 here"), "{}", c.action);
        moments.kernel_launch = vec![Some(crate::model::LaunchDims {
            grid: [200, 1, 1],
            block: [512, 1, 1],
        })];
        assert!(
            few_workgroups(&moments, 1.0, &ctx).is_none(),
            "a third idle"
        );
        // A call streaming at 90 % of the trace's elementwise baseline is not held by its grid;
        // at half of it, it is.
        let mut streaming = norm(8, 40.0);
        streaming.data_mb = Some(1.0);
        let bw = achieved_tb_s(&streaming).expect("rate");
        let near = Context {
            baseline_tb_s: Some(bw / 0.9),
            kernel_floor_us: Some(3.0),
            ..Context::on(Some(&mi300))
        };
        assert!(
            few_workgroups(&streaming, 1.0, &near).is_none(),
            "near the baseline"
        );
        let far = Context {
            baseline_tb_s: Some(bw / 0.5),
            ..near
        };
        assert!(
            few_workgroups(&streaming, 1.0, &far).is_some(),
            "half the baseline"
        );
        // A short call at 2.7× its work keeps the strict bound.
        let mut short_call = norm(8, 27.0);
        short_call.roofline_us = Some(10.0);
        assert!(few_workgroups(&short_call, 1.0, &ctx).is_none(), "short");
    }

    #[test]
    fn host_device_copies() {
        assert!(is_host_device_copy("Memcpy HtoD (Pageable -> Device)"));
        assert!(is_host_device_copy("Memcpy DtoH (Device -> Pinned)"));
        assert!(!is_host_device_copy("Memcpy DtoD (Device -> Device)"));
        assert!(!is_host_device_copy("vectorized_elementwise_kernel"));
    }

    #[test]
    fn only_activation_sized_inputs_can_convert() {
        let types = "['c10::BFloat16', 'c10::BFloat16', 'c10::BFloat16', 'float', 'float']";
        let dims = shapes("((10, 64, 112, 112), (10, 64, 112, 112), (64,), (64,), (64,))");
        // BatchNorm backward: bf16 activations, float statistics: no conversion.
        assert_eq!(
            activation_types(types, &dims),
            vec!["c10::BFloat16", "c10::BFloat16"]
        );
        // A copy_ from bf16 into an fp32 tensor of the same size converts.
        let dims = shapes("((8, 4096), (8, 4096), ())");
        assert_eq!(
            activation_types("['float', 'c10::BFloat16', '']", &dims),
            vec!["float", "c10::BFloat16"]
        );
        // Types and shapes that do not line up: every tensor dtype, as before.
        assert_eq!(
            activation_types("['float', 'c10::Half']", &shapes("((4,),)")),
            vec!["float", "c10::Half"]
        );
    }
}
