//! `jarvis whatif`: replay a trace with changes and print each step's recorded, replayed and
//! predicted time (docs/whatif.md).

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{bail, Result};
use jarvis_engine::analysis::kernel_kinds::is_communication_kernel;
use jarvis_engine::whatif::{self, Change};
use jarvis_engine::{Options, PlatformChoice};

/// The changes as given: (kind, specs) for each flag.
pub struct Flags<'a> {
    pub scale: &'a [String],
    pub efficiency: &'a [String],
    pub remove: &'a [String],
    pub fuse: &'a [String],
    pub remove_sync: &'a [String],
}

impl Flags<'_> {
    fn changes(&self) -> Result<Vec<Change>> {
        let mut out = Vec::new();
        for (kind, specs) in [
            ("scale", self.scale),
            ("efficiency", self.efficiency),
            ("remove", self.remove),
            ("fuse", self.fuse),
            ("remove-sync", self.remove_sync),
        ] {
            for s in specs {
                out.push(Change::parse(kind, s).map_err(anyhow::Error::msg)?);
            }
        }
        Ok(out)
    }
}

pub fn run(path: &Path, flags: &Flags<'_>, platform: PlatformChoice) -> Result<()> {
    let changes = flags.changes()?;
    if changes.is_empty() {
        bail!("no change given: --scale, --efficiency, --remove, --fuse or --remove-sync (docs/whatif.md)");
    }
    let trace = super::import(path)?;
    let Some((cp, _)) = jarvis_engine::critical_path::analyze(&trace, &is_communication_kernel)
    else {
        bail!("{}: the trace has no GPU work to replay", path.display());
    };
    let Some(replay) = cp.replay else {
        bail!("{}: the trace could not be replayed", path.display());
    };
    // The perf models' roofline times come from the full analysis (a second read of the
    // trace), only when an efficiency is asked for.
    let rows = if changes
        .iter()
        .any(|c| matches!(c.action, whatif::Action::Efficiency(_)))
    {
        let options = Options {
            platform,
            ..Options::default()
        };
        let analysis =
            jarvis_engine::trace_analysis::analyze_trace_with(super::import(path)?, &options);
        analysis.standalone.map(|s| s.rows).unwrap_or_default()
    } else {
        Vec::new()
    };
    let outcome = whatif::predict(&trace, &replay, &rows, &changes, &is_communication_kernel)
        .map_err(anyhow::Error::msg)?;
    super::say(&render(path, &outcome));
    Ok(())
}

fn render(path: &Path, o: &whatif::Outcome) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "What-if on {}", path.display());
    for (text, n) in &o.touched {
        let _ = writeln!(s, "  {text:<50}  {n} events");
    }
    let _ = writeln!(
        s,
        "\n{:<28}  {:>12}  {:>12}  {:>12}  {:>8}",
        "step", "recorded ms", "replayed ms", "predicted ms", "change"
    );
    for st in &o.steps {
        let _ = writeln!(
            s,
            "{:<28}  {:>12.3}  {:>12.3}  {:>12.3}  {:>+7.1}%",
            st.step,
            st.recorded_us / 1000.0,
            st.replayed_us / 1000.0,
            st.predicted_us / 1000.0,
            st.change_pct()
        );
    }
    if let Some(st) = o
        .steps
        .iter()
        .max_by(|a, b| a.predicted_us.total_cmp(&b.predicted_us))
    {
        let causes: Vec<String> = st
            .by_cause
            .iter()
            .filter(|(_, t)| *t > 0.0)
            .map(|(b, t)| {
                format!(
                    "{} {:.1} %",
                    jarvis_engine::critical_path::summary::cause_name(*b),
                    t * 100.0 / st.predicted_us.max(1e-9)
                )
            })
            .collect();
        let _ = writeln!(
            s,
            "\npredicted critical path of {} (the longest step): {}",
            st.step,
            causes.join(", ")
        );
    }
    s
}
