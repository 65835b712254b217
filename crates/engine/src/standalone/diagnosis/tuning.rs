//! Library tuning as a lever, said against what the run already set: PyTorch's TunableOp
//! (`PYTORCH_TUNABLEOP_*`, read by `model::environment` where a harness recorded them).

use crate::model::environment::TunableOp;
use crate::standalone::md::code;

/// The GEMM-tuning lever through PyTorch's TunableOp, said against what the run set: tuning
/// already on is not advised again; on with tuning off (a results file read, nothing new timed)
/// is told to tune these shapes once, in few words: the lever rides on every GEMM finding
/// (review 24: its 120 words five times in one report). `amd`: the libraries it picks among (hipBLASLt / rocBLAS,
/// else cuBLASLt).
pub fn tunableop_lever(t: Option<&TunableOp>, amd: bool) -> String {
    let libs = if amd {
        "every hipBLASLt / rocBLAS solution"
    } else {
        "the cuBLASLt algorithms"
    };
    match t {
        Some(t) if t.enabled && !t.tuning => format!(
            "PyTorch's TunableOp is already on in this run with tuning off (`PYTORCH_TUNABLEOP_ENABLED=1`, `PYTORCH_TUNABLEOP_TUNING=0`{}): a shape missing from its results file ran the library's default, so tune the missing ones once (`PYTORCH_TUNABLEOP_TUNING=1` for one run times {libs}); for a shape the file holds, this kernel is its pick and an offline-tuned kernel is the lever",
            t.file
                .as_deref()
                .map(|f| format!(", results in {}", code(f)))
                .unwrap_or_default()
        ),
        Some(t) if t.enabled => format!(
            "PyTorch's TunableOp is already on and tuning in this run (it timed {libs} for these shapes and kept the fastest): the library has nothing faster to offer; a kernel tuned for the shape (offline tuning, another tile) is the lever"
        ),
        _ => format!(
            "PyTorch's TunableOp (`PYTORCH_TUNABLEOP_ENABLED=1`: it times {libs} for the shape on the GPU and keeps the fastest)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On with tuning off: told to tune the shapes once; on and tuning: not told to turn it
    /// on; unknown or off: offered as such. The results file is trace text, shown escaped.
    #[test]
    fn the_lever_is_the_delta_from_the_run() {
        let off = TunableOp {
            enabled: true,
            tuning: false,
            file: Some("/app/tune_%d.csv".into()),
        };
        let lever = tunableop_lever(Some(&off), true);
        assert!(
            lever.contains("already on in this run with tuning off"),
            "{lever}"
        );
        assert!(
            lever.contains("`PYTORCH_TUNABLEOP_TUNING=1` for one run"),
            "{lever}"
        );
        assert!(lever.contains("results in `/app/tune_%d.csv`"), "{lever}");
        let on = TunableOp {
            tuning: true,
            ..off
        };
        assert!(tunableop_lever(Some(&on), true).contains("already on and tuning"));
        assert!(tunableop_lever(None, false).starts_with(
            "PyTorch's TunableOp (`PYTORCH_TUNABLEOP_ENABLED=1`: it times the cuBLASLt"
        ));
    }
}
