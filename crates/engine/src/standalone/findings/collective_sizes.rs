//! Collectives the `coll_analysis` sheet cannot hold: symmetric-memory, custom and engine
//! all-reduces (`multimem_all_reduce_kernel`, `cross_device_reduce`, DeepEP) record no NCCL
//! metadata, so their size comes from their op's recorded input (review 9: B200's 73
//! symmetric-memory all-reduces, 99 % of its communication, had no size or bandwidth).

use crate::analysis::kernel_kinds::is_communication_kernel;
use crate::model::distributed::DistributedInfo;
use crate::model::Trace;
use crate::standalone::ops::OpRow;

/// One collective, sized: from `coll_analysis` or from its op.
#[derive(Debug, Clone, PartialEq)]
pub struct SizedCollective {
    pub name: String,
    /// The message in and the larger of in and out, MiB.
    pub in_mib: f64,
    pub size_mib: f64,
    pub calls: f64,
    pub sum_us: f64,
    pub mean_us: Option<f64>,
    /// Ranks in its group (0 where unknown).
    pub group: f64,
}

/// The ops whose main kernel is a collective no NCCL/RCCL name covers, each signature sized by
/// its first input (elements × the dtype's bytes); the group is the trace's world size.
pub fn op_collectives(rows: &[OpRow], trace: &Trace) -> Vec<SizedCollective> {
    let world = trace
        .meta
        .distributed_info
        .as_deref()
        .and_then(DistributedInfo::parse)
        .and_then(|d| d.world_size)
        .unwrap_or(0) as f64;
    rows.iter()
        .filter_map(|r| {
            let (kernel, _) = r.kernel_names.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
            let nccl = crate::analysis::categories::is_communication(kernel);
            if !is_communication_kernel(kernel) || nccl || r.count == 0 {
                return None;
            }
            let dims = crate::standalone::diagnosis::elementwise::shapes(&r.input_dims);
            let elems: i64 = dims.first()?.iter().product();
            let dtype = r
                .input_type
                .trim_matches(|c| c == '(' || c == ')' || c == '[' || c == ']')
                .split(',')
                .next()?
                .trim()
                .trim_matches('\'')
                .trim_start_matches("c10::");
            let bytes = crate::analysis::collectives::dtype_bytes(dtype)?;
            let mib = elems as f64 * bytes / 1_048_576.0;
            (mib > 0.0).then(|| SizedCollective {
                name: r.name.clone(),
                in_mib: mib,
                size_mib: mib,
                calls: r.count as f64,
                sum_us: r.kernel_us,
                mean_us: Some(r.kernel_us / r.count as f64),
                group: world,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// B200's symmetric-memory all-reduce of (2557440,) bf16: 4.88 MiB a call, 37 calls; an
    /// NCCL collective (sized by `coll_analysis`) and a compute op are left alone.
    #[test]
    fn engine_collectives_are_sized_from_their_input() {
        let mut r = crate::standalone::ops::tests_support::row("symm_mem::multimem_all_reduce_");
        r.input_dims = "((2557440,), (), ())".into();
        r.input_type = "('c10::BFloat16', '', '')".into();
        r.count = 37;
        r.kernel_us = 1124.446;
        r.kernel_names = vec![(
            "void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>".into(),
            1124.446,
        )];
        let mut nccl = r.clone();
        nccl.kernel_names = vec![("ncclDevKernel_AllGather_RING_LL".into(), 22.0)];
        let mut add = r.clone();
        add.kernel_names = vec![("vectorized_elementwise_kernel".into(), 5.0)];
        let trace = Trace::default();
        let got = op_collectives(&[r, nccl, add], &trace);
        assert_eq!(got.len(), 1);
        assert!((got[0].size_mib - 2557440.0 * 2.0 / 1_048_576.0).abs() < 1e-9);
        assert!((got[0].mean_us.unwrap() - 1124.446 / 37.0).abs() < 1e-9);
    }
}
