//! Synthetic Kineto traces with known ground truth (work in progress in this commit).

/// Which vendor's naming the synthetic trace uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SynthPlatform {
    #[default]
    H100,
    Mi300x,
}

impl SynthPlatform {
    pub fn from_name(name: &str) -> Option<SynthPlatform> {
        match name.to_ascii_lowercase().as_str() {
            "h100" | "cuda" | "nvidia" => Some(SynthPlatform::H100),
            "mi300x" | "mi300" | "rocm" | "amd" => Some(SynthPlatform::Mi300x),
            _ => None,
        }
    }
}

/// What to generate.
#[derive(Debug, Clone, Default)]
pub struct SynthSpec {
    pub platform: SynthPlatform,
    pub steps: u32,
}

/// Ground truth of a generated trace.
#[derive(Debug, Clone, Default)]
pub struct SynthTruth {
    pub events: u64,
    pub kernels: u64,
    pub busy_ns: i64,
}

pub fn write_trace(_spec: &SynthSpec, _w: &mut impl std::io::Write) -> std::io::Result<SynthTruth> {
    Ok(SynthTruth::default())
}
