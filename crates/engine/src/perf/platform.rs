//! Hardware platforms as data (`platforms.json`): peak HBM bandwidth and per-precision TFLOPS,
//! each value labelled with its source; detection from `deviceProperties` names; custom
//! platforms from a small JSON document of the same shape.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

const BUILTIN: &str = include_str!("platforms.json");

/// A value and where it comes from (`seed`, `max-achievable`, `datasheet`, `custom`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sourced(pub f64, pub String);

/// One GPU platform.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Platform {
    pub name: String,
    /// How the reports write the GPU where its name cannot be told for sure: "MI210 or MI250
    /// GCD" for a device identified by a fingerprint another GPU shares (review 6: the MI250
    /// trace's titles hedged but its bodies said "MI210's ridge point"). `None`: the name.
    /// Serialized so the page's worker answer keeps it (the top bar said "MI300X" for a VF).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(default)]
    pub vendor: String,
    /// Substrings of a `deviceProperties` name that identify this platform.
    #[serde(default, rename = "match")]
    pub patterns: Vec<String>,
    /// Substrings that rule a name out (e.g. `PCIe` variants with other bandwidth).
    #[serde(default)]
    pub exclude: Vec<String>,
    pub memory_gb: Option<f64>,
    /// The `totalGlobalMem` range (GiB, inclusive) that tells this SKU from another of the same
    /// name (A100 40 GB vs 80 GB, GH200 96 GB vs 144 GB). An entry with a range matches only a
    /// device whose memory the trace states and that falls in it, and is tried before entries
    /// without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_range_gib: Option<(f64, f64)>,
    /// Peak HBM bandwidth, TB/s.
    pub hbm_tbps: Sourced,
    /// Peak GPU-to-GPU link bandwidth in one direction, GB/s (decimal): what NCCL's bus
    /// bandwidth is judged against. Absent where the table has no figure.
    #[serde(default)]
    pub link_gbps: Option<Sourced>,
    /// Peak TFLOPS by `Compute Spec` key (`matrix_bf16`, `vector_fp32`, ...).
    pub tflops: BTreeMap<String, Sourced>,
    /// The datasheet's dense peaks where `tflops` holds another one (the seeds' and TraceLens's
    /// achievable peaks, MAF, on AMD): the diagnosis text states efficiency against the
    /// datasheet on every vendor and shows both where they differ.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub datasheet_tflops: BTreeMap<String, Sourced>,
    /// Compute units (AMD CUs) or streaming multiprocessors (NVIDIA SMs): what a kernel's
    /// workgroups fill in waves (the diagnosis rules' wave and occupancy arithmetic).
    #[serde(default)]
    pub compute_units: Option<Sourced>,
    /// LDS (AMD) or shared memory (NVIDIA) per compute unit, KiB.
    #[serde(default)]
    pub lds_kib: Option<Sourced>,
    /// L2 cache, MiB.
    #[serde(default)]
    pub l2_mib: Option<Sourced>,
    /// The matrix instruction granularity the tile rules assume, and its source.
    #[serde(default)]
    pub matrix_instruction: Option<(String, String)>,
    /// Exponentials per second of the special function units, 10^12/s: what a fused attention
    /// kernel's softmax runs on (`standalone::diagnosis` attention ceiling). Absent where no
    /// source gives the rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exp_tops: Option<Sourced>,
}

#[derive(Deserialize)]
struct Table {
    platforms: Vec<Platform>,
}

/// The built-in platform table.
pub fn builtin() -> Vec<Platform> {
    serde_json::from_str::<Table>(BUILTIN)
        .map(|t| t.platforms)
        .unwrap_or_default()
}

/// The lowest ridge point (FLOPs/byte) any built-in platform has for `compute_spec`: an op
/// whose intensity is under it is memory-bound on every GPU in the table, so a trace without a
/// platform can still be judged memory-bound. `None` where no platform has the figure.
pub fn lowest_ridge(compute_spec: &str) -> Option<f64> {
    builtin()
        .iter()
        .filter_map(|p| p.ridge(compute_spec))
        .min_by(f64::total_cmp)
}

/// Finds a built-in platform by name (case-insensitive; `h100` finds `H100 SXM`).
pub fn by_name(name: &str) -> Option<Platform> {
    let want = name.to_ascii_lowercase().replace([' ', '-', '_'], "");
    builtin().into_iter().find(|p| {
        let n = p.name.to_ascii_lowercase().replace([' ', '-', '_'], "");
        n == want || n.starts_with(&want) && !want.is_empty()
    })
}

/// Detects the platform from a device name such as `NVIDIA H100 80GB HBM3` or
/// `AMD Instinct MI300X VF`. `None` for unknown or empty names: Jarvis asks rather than guesses.
pub fn detect(device_name: &str) -> Option<Platform> {
    detect_device(device_name, None)
}

/// [`detect`] with the device's `totalGlobalMem` (bytes) where `deviceProperties` gives it:
/// entries with a memory range (the SKUs a name alone does not tell apart) are tried first.
pub fn detect_device(device_name: &str, total_mem: Option<i64>) -> Option<Platform> {
    let upper = device_name.to_ascii_uppercase();
    if upper.trim().is_empty() {
        return None;
    }
    let gib = total_mem.map(|b| b as f64 / (1u64 << 30) as f64);
    let named = |p: &Platform| {
        p.patterns
            .iter()
            .any(|m| upper.contains(&m.to_ascii_uppercase()))
            && !p
                .exclude
                .iter()
                .any(|x| upper.contains(&x.to_ascii_uppercase()))
    };
    let all = builtin();
    let mut found = all
        .iter()
        .find(|p| {
            p.memory_range_gib
                .is_some_and(|(lo, hi)| gib.is_some_and(|g| g >= lo && g <= hi) && named(p))
        })
        .or_else(|| {
            all.iter()
                .find(|p| p.memory_range_gib.is_none() && named(p))
        })
        .cloned()?;
    // An SR-IOV virtual function (`AMD Instinct MI300X VF`: a virtual machine's view of the
    // GPU) has the same peaks; the reports say which it is (review 9: never said).
    if upper.split_whitespace().any(|w| w == "VF") {
        found.label = Some(format!("{} VF", found.name));
    }
    Some(found)
}

/// (architecture major, minor, compute units, memory range GiB, platform name).
/// What `deviceProperties` records of a GPU when the name is empty, and what it identifies.
struct Fingerprint {
    /// `computeMajor`, `computeMinor` (on ROCm the gfx generation: 9.4 is gfx942, CDNA3).
    arch: (i64, i64),
    /// `numSms`: compute units.
    units: i64,
    /// `totalGlobalMem`, GiB.
    memory_gib: (f64, f64),
    /// The platform's name in the table.
    platform: &'static str,
    /// What else fits the prints, in words (empty where nothing does).
    note: &'static str,
    /// That other GPU in a word, for titles.
    alternative: &'static str,
}

/// GPUs told apart by what `deviceProperties` records when the name is empty. CU counts and
/// memory from `../shared/docs/hardware_facts.md` (MI300X: 304 CUs, 192 GB; MI325X: 304 CUs,
/// 256 GB).
const FINGERPRINTS: &[Fingerprint] = &[
    Fingerprint {
        arch: (9, 4),
        units: 304,
        memory_gib: (170.0, 200.0),
        platform: "MI300X",
        note: "",
        alternative: "",
    },
    Fingerprint {
        arch: (9, 4),
        units: 304,
        memory_gib: (230.0, 270.0),
        platform: "MI325X",
        note: "",
        alternative: "",
    },
    // gfx90a with 104 CUs and 64 GiB: an MI210, or one GCD of an MI250 (each GCD is its own
    // device), whose CUs, clock, memory and bandwidth per GCD are the MI210's
    // (hardware_facts.md: `hta/mi250_minitoy_*` records 104 CUs and 64 GiB).
    Fingerprint {
        arch: (9, 0),
        units: 104,
        memory_gib: (56.0, 72.0),
        platform: "MI210",
        note: "an MI210, or one GCD of an MI250, whose figures are the same",
        alternative: "MI250 GCD",
    },
];

fn fingerprint_of(platform: &str) -> Option<&'static Fingerprint> {
    FINGERPRINTS.iter().find(|f| f.platform == platform)
}

/// What else a platform found by its fingerprint may be (empty where nothing else fits).
pub fn fingerprint_note(platform: &str) -> &'static str {
    fingerprint_of(platform).map_or("", |f| f.note)
}

/// The GPU a fingerprint cannot tell from `platform`, in a word ("MI250 GCD" for MI210), for
/// the reports' titles (review 5: an MI250 trace titled "MI210"); empty where none.
pub fn fingerprint_alternative(platform: &str) -> &'static str {
    fingerprint_of(platform).map_or("", |f| f.alternative)
}

/// The platform whose architecture, compute-unit count and memory `deviceProperties` records,
/// for a device without a name; `None` where they fit no single GPU (or the name is present:
/// names are read by [`detect_device`]).
pub fn identify(
    name: &str,
    major: i64,
    minor: i64,
    units: i64,
    total_mem: Option<i64>,
) -> Option<Platform> {
    // ROCm writes a generic marketing name for some devices: no product in it.
    if !name.is_empty() && name != "AMD Radeon Graphics" {
        return None;
    }
    let gib = total_mem? as f64 / (1u64 << 30) as f64;
    let mut fits = FINGERPRINTS.iter().filter(|f| {
        f.arch == (major, minor)
            && f.units == units
            && gib >= f.memory_gib.0
            && gib <= f.memory_gib.1
    });
    let found = fits.next()?;
    if fits.next().is_some() {
        return None;
    }
    let mut p = by_name(found.platform)?;
    if !found.alternative.is_empty() {
        p.label = Some(format!("{} or {}", found.platform, found.alternative));
    }
    Some(p)
}

/// Parses a custom platform (same shape as a `platforms.json` entry).
pub fn from_json(text: &str) -> Result<Platform, String> {
    serde_json::from_str(text).map_err(|e| format!("invalid platform JSON: {e}"))
}

impl Platform {
    /// The GPU's link to the host (its PCIe generation, x16) and about what pinned copies reach
    /// over it, GB/s (about 80 % of the link's 15.8 / 31.5 / 63 GB/s a direction: PCIe 3.0 on
    /// V100, Turing and Pascal boards; 4.0 on A100, MI210 and MI250X; 5.0 on H100, H200, H800,
    /// B200 and MI300-series boards). `None` where the host link is not PCIe (GH200's
    /// NVLink-C2C) or not known: the copy advice then states the measured rate alone.
    pub fn host_link(&self) -> Option<(&'static str, f64)> {
        let n = self.name.to_ascii_lowercase();
        let any = |keys: &[&str]| keys.iter().any(|k| n.contains(k));
        if any(&["gh200", "b300", "mi400"]) {
            None
        } else if any(&["v100", "2080", "gp100"]) {
            Some(("PCIe 3.0 x16", 12.0))
        } else if any(&["a100", "mi210", "mi250"]) {
            Some(("PCIe 4.0 x16", 25.0))
        } else if any(&["h100", "h200", "h800", "b200", "mi300", "mi325", "mi355"]) {
            Some(("PCIe 5.0 x16", 50.0))
        } else {
            None
        }
    }

    /// The GPU as the reports write it: its [`label`](Self::label) where it has one (a
    /// fingerprint two GPUs share), else its name.
    pub fn label(&self) -> &str {
        self.label.as_deref().unwrap_or(&self.name)
    }

    /// The datasheet's dense peak for a `Compute Spec`, where the table's peak is another one
    /// (an achievable MAF); `None` where the table's peak is the datasheet's.
    pub fn datasheet_tflops(&self, compute_spec: &str) -> Option<f64> {
        self.datasheet_tflops
            .get(compute_spec)
            .map(|v| v.0)
            .filter(|d| {
                self.peak_tflops(compute_spec)
                    .is_none_or(|p| (d - p).abs() > 1e-9)
            })
    }

    /// Peak TFLOPS for a `Compute Spec`; vector precisions not listed fall back to `vector_fp32`
    /// (PyTorch's elementwise kernels compute in fp32 whatever the storage type).
    pub fn peak_tflops(&self, compute_spec: &str) -> Option<f64> {
        if let Some(v) = self.tflops.get(compute_spec) {
            return Some(v.0);
        }
        if compute_spec.starts_with("vector_") {
            return self.tflops.get("vector_fp32").map(|v| v.0);
        }
        // A GPU without FP4 (or FP8) matrix units runs such GEMMs by widening the narrow
        // operand to BF16 (weight-only quantization: MXFP4 experts on MI300X are dequantized and
        // multiplied in BF16), so its BF16 peak bounds them.
        match compute_spec {
            "matrix_fp4" | "matrix_fp8" => self.tflops.get("matrix_bf16").map(|v| v.0),
            _ => None,
        }
    }

    /// This platform with edited peaks (the page's peak editor), each labelled `custom`, named
    /// `<name> (edited)` so every report says the figures are not the datasheet's, and matching
    /// no device name.
    pub fn edited(&self, hbm_tbps: f64, tflops: &[(String, f64)]) -> Platform {
        let mut p = self.clone();
        if !p.name.ends_with(" (edited)") {
            p.name = format!("{} (edited)", p.name);
        }
        if let Some(l) = p.label.as_mut().filter(|l| !l.ends_with(" (edited)")) {
            l.push_str(" (edited)");
        }
        p.patterns.clear();
        p.exclude.clear();
        p.hbm_tbps = Sourced(hbm_tbps, "custom".into());
        for (key, value) in tflops {
            p.tflops
                .insert(key.clone(), Sourced(*value, "custom".into()));
        }
        p
    }

    /// This platform as the MIG slice a device name states (`NVIDIA H100 80GB HBM3 MIG
    /// 2g.20gb`), or `None` when the name states none: a slice has a share of the GPU's SMs
    /// (its `numSms`, else `g` of 7 compute slices) and of its memory, bandwidth and L2 (its
    /// `totalGlobalMem` of the whole, else the name's `gb`), so every peak is scaled by those
    /// shares (held-out suite 3: a `2g.20gb` slice with 32 SMs and 20 GB judged against a full
    /// H100's peaks). The label says which slice it is.
    pub fn mig_slice(
        &self,
        device_name: &str,
        sms: Option<i64>,
        memory: Option<i64>,
    ) -> Option<Platform> {
        let profile = device_name
            .split_whitespace()
            .skip_while(|w| *w != "MIG")
            .nth(1)?;
        let (g, gb) = profile.split_once("g.")?;
        let g: f64 = g.parse().ok()?;
        let gb: f64 = gb
            .trim_end_matches("gb")
            .trim_end_matches("GB")
            .parse()
            .ok()?;
        let full_units = self.compute_units.as_ref().map(|c| c.0);
        let compute = match (sms, full_units) {
            (Some(n), Some(full)) if n > 0 && (n as f64) < full => n as f64 / full,
            _ => g / 7.0,
        };
        let full_gb = self.memory_gb?;
        let mem = memory.map_or(gb, |b| b as f64 / 1e9) / full_gb;
        if !(0.0..1.0).contains(&compute) || !(0.0..1.0).contains(&mem) {
            return None;
        }
        let mut p = self.clone();
        let scaled = |v: &Sourced, by: f64, what: &str| {
            Sourced(
                v.0 * by,
                format!("{} × {by:.3} ({what} of the MIG slice)", v.1),
            )
        };
        for v in p.tflops.values_mut().chain(p.datasheet_tflops.values_mut()) {
            *v = scaled(v, compute, "the SM share");
        }
        p.hbm_tbps = scaled(&self.hbm_tbps, mem, "the memory share");
        p.l2_mib = self
            .l2_mib
            .as_ref()
            .map(|v| scaled(v, mem, "the memory share"));
        p.exp_tops = self
            .exp_tops
            .as_ref()
            .map(|v| scaled(v, compute, "the SM share"));
        p.compute_units = self
            .compute_units
            .as_ref()
            .map(|v| scaled(v, compute, "the SM share"));
        if let Some(n) = sms.filter(|&n| n > 0) {
            p.compute_units = Some(Sourced(n as f64, "deviceProperties numSms".into()));
        }
        p.memory_gb = Some(full_gb * mem);
        p.label = Some(format!("{} MIG {profile}", self.label()));
        Some(p)
    }

    pub fn hbm_bytes_per_s(&self) -> f64 {
        self.hbm_tbps.0 * 1e12
    }

    /// The ridge point of this platform's roofline for a `Compute Spec`: peak FLOPs over peak
    /// HBM bytes per second, FLOPs/byte. An op whose arithmetic intensity is below it is
    /// memory-bound on this platform (the same test the `Roofline Bound` column makes).
    pub fn ridge(&self, compute_spec: &str) -> Option<f64> {
        let peak = self.peak_tflops(compute_spec)?;
        (self.hbm_tbps.0 > 0.0).then(|| peak / self.hbm_tbps.0)
    }

    /// Compute units (CUs or SMs) as a count.
    pub fn units(&self) -> Option<u64> {
        self.compute_units
            .as_ref()
            .map(|c| c.0 as u64)
            .filter(|&n| n > 0)
    }

    /// `CU` on AMD, `SM` on NVIDIA: how findings name the compute unit.
    pub fn unit_name(&self) -> &'static str {
        if self.vendor == "AMD" {
            "CU"
        } else {
            "SM"
        }
    }
}

/// Roofline and efficiency of one op instance on a platform.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Roofline {
    /// FLOPs per byte moved.
    pub intensity: f64,
    /// The platform's ridge point for this precision (FLOPs per byte).
    pub ridge: f64,
    pub compute_bound: bool,
    /// max(FLOPs / peak, bytes / bandwidth), µs.
    pub time_us: f64,
    /// Roofline time over measured kernel time, %.
    pub pct_roofline: f64,
    /// Achieved rate over the peak of the op's own unit and precision (TFLOPS if compute-bound,
    /// TB/s if memory-bound), %.
    pub efficiency_pct: f64,
}

/// Roofline of an op with `flops` and `bytes` that ran `kernel_us` with compute spec `spec`.
pub fn roofline(
    p: &Platform,
    spec: &str,
    flops: f64,
    bytes: f64,
    kernel_us: f64,
) -> Option<Roofline> {
    let peak = p.peak_tflops(spec)? * 1e12;
    let bw = p.hbm_bytes_per_s();
    if flops <= 0.0 || bytes <= 0.0 || peak <= 0.0 || bw <= 0.0 {
        return None;
    }
    let compute_us = flops / peak * 1e6;
    let memory_us = bytes / bw * 1e6;
    let compute_bound = compute_us >= memory_us;
    let time_us = compute_us.max(memory_us);
    let (pct, eff) = if kernel_us > 0.0 {
        let achieved = if compute_bound {
            flops / (kernel_us / 1e6) / peak
        } else {
            bytes / (kernel_us / 1e6) / bw
        };
        (time_us / kernel_us * 100.0, achieved * 100.0)
    } else {
        (f64::NAN, f64::NAN)
    };
    Some(Roofline {
        intensity: flops / bytes,
        ridge: peak / bw,
        compute_bound,
        time_us,
        pct_roofline: pct,
        efficiency_pct: eff,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The GDDR cards of the hardware facts are in the table: an L40S and a T4 by their
    /// device names, with their own peaks (held-out suite 4: an L40S trace had no platform).
    #[test]
    fn gddr_cards_are_detected() {
        let l40s = detect("NVIDIA L40S").expect("l40s");
        assert_eq!(l40s.name, "L40S");
        assert_eq!(l40s.units(), Some(142));
        assert!((l40s.hbm_tbps.0 - 0.864).abs() < 1e-12);
        assert_eq!(l40s.peak_tflops("matrix_bf16"), Some(362.0));
        let t4 = detect("Tesla T4").expect("t4");
        assert_eq!(t4.name, "T4");
        assert_eq!(t4.units(), Some(40));
    }

    /// A MIG slice's name scales the full GPU's peaks by its SM and memory shares: H100's
    /// `2g.20gb` with 32 of 132 SMs and 20.9 GB of 80; a whole GPU's name is no slice.
    #[test]
    fn a_mig_slice_has_its_share_of_the_peaks() {
        let name = "NVIDIA H100 80GB HBM3 MIG 2g.20gb";
        let full = detect_device(name, Some(20_937_965_568)).expect("h100");
        let s = full
            .mig_slice(name, Some(32), Some(20_937_965_568))
            .expect("slice");
        let bf16 = |p: &Platform| p.tflops["matrix_bf16"].0;
        assert!((bf16(&s) - bf16(&full) * 32.0 / 132.0).abs() < 1e-9);
        let mem = 20.937_965_568 / full.memory_gb.expect("memory");
        assert!((s.hbm_tbps.0 - full.hbm_tbps.0 * mem).abs() < 1e-9);
        assert_eq!(s.units(), Some(32));
        assert_eq!(s.label(), "H100 SXM MIG 2g.20gb");
        // Without numSms, g of 7 compute slices.
        let g = full.mig_slice(name, None, None).expect("slice");
        assert!((bf16(&g) - bf16(&full) * 2.0 / 7.0).abs() < 1e-9);
        assert!(full
            .mig_slice("NVIDIA H100 80GB HBM3", Some(132), None)
            .is_none());
    }

    /// A device without a name is identified by architecture, CUs and memory where they fit
    /// one GPU (the AMD vLLM trace: gfx 9.4, 304 CUs, 206,141,652,992 B = 192 GiB → MI300X),
    /// and by nothing else.
    #[test]
    fn an_unnamed_device_is_identified_by_its_properties() {
        let gib = |g: i64| Some(g << 30);
        let name = |p: Option<Platform>| p.map(|p| p.name);
        assert_eq!(
            name(identify("", 9, 4, 304, Some(206_141_652_992))).as_deref(),
            Some("MI300X")
        );
        assert_eq!(
            name(identify("", 9, 4, 304, gib(256))).as_deref(),
            Some("MI325X")
        );
        // A name is read by `detect_device`; other architectures, CU counts or sizes are not guessed.
        assert!(identify("AMD Instinct MI300X", 9, 4, 304, gib(192)).is_none());
        assert!(identify("", 9, 4, 228, gib(128)).is_none());
        assert!(identify("", 9, 0, 304, gib(192)).is_none());
        assert!(identify("", 9, 4, 304, None).is_none());
        // One GCD of an MI250 under ROCm's generic name: gfx90a, 104 CUs, 64 GiB, the MI210's
        // figures.
        assert_eq!(
            name(identify(
                "AMD Radeon Graphics",
                9,
                0,
                104,
                Some(68_702_699_520)
            ))
            .as_deref(),
            Some("MI210")
        );
        assert!(identify("AMD Radeon Graphics", 9, 0, 110, gib(64)).is_none());
    }

    #[test]
    fn precisions_without_matrix_units_are_bounded_by_bf16() {
        let mi300x = by_name("MI300X").expect("built in");
        let bf16 = mi300x.peak_tflops("matrix_bf16").expect("bf16 peak");
        assert!(!mi300x.tflops.contains_key("matrix_fp4"));
        assert_eq!(mi300x.peak_tflops("matrix_fp4"), Some(bf16));
        // A precision it has keeps its own peak.
        let fp8 = mi300x.peak_tflops("matrix_fp8").expect("fp8 peak");
        assert!(fp8 > bf16);
    }

    #[test]
    fn edited_platforms_are_named_labelled_custom_and_round_trip() {
        let h100 = by_name("H100").expect("h100");
        let p = h100.edited(2.0, &[("matrix_bf16".into(), 500.0)]);
        let back = from_json(&serde_json::to_string(&p).expect("json")).expect("parses");
        assert_eq!(back, p);
        assert_eq!(p.name, "H100 SXM (edited)");
        assert_eq!(p.hbm_tbps, Sourced(2.0, "custom".into()));
        assert_eq!(p.tflops["matrix_bf16"], Sourced(500.0, "custom".into()));
        assert_eq!(p.tflops["vector_fp32"], h100.tflops["vector_fp32"]);
        assert!(p.patterns.is_empty() && detect("NVIDIA H100 80GB HBM3").is_some());
        // Editing again does not stack the suffix.
        assert_eq!(p.edited(3.0, &[]).name, "H100 SXM (edited)");
    }

    #[test]
    fn ridge_points_and_compute_units_come_from_the_table() {
        let h100 = by_name("h100").expect("h100");
        // 989 TFLOPS / 3.35 TB/s = 295 FLOPs per byte (hardware_facts.md §1d).
        assert_eq!(h100.ridge("matrix_bf16").map(f64::round), Some(295.0));
        // fp32 on the vector units: 66.9 / 3.35 = 20.
        assert_eq!(h100.ridge("vector_fp32").map(f64::round), Some(20.0));
        assert_eq!((h100.units(), h100.unit_name()), (Some(132), "SM"));
        let mi = by_name("mi300x").expect("mi300x");
        // The seed's achievable bf16 peak over 5.3 TB/s.
        assert!((mi.ridge("matrix_bf16").expect("ridge") - 708.0 / 5.3).abs() < 1e-9);
        assert_eq!((mi.units(), mi.unit_name()), (Some(304), "CU"));
        assert_eq!(mi.lds_kib.as_ref().map(|l| l.0), Some(64.0));
        // Every platform with a full table names its compute units and their source.
        for p in builtin().iter().filter(|p| p.name != "MI400") {
            let c = p.compute_units.as_ref().expect("compute units");
            assert!(c.0 > 0.0 && !c.1.is_empty(), "{}", p.name);
        }
    }

    #[test]
    fn table_loads_with_seed_values() {
        let all = builtin();
        assert!(all.len() >= 8);
        let mi = by_name("mi300x").expect("MI300X");
        assert_eq!(mi.hbm_tbps.0, 5.3);
        assert_eq!(mi.peak_tflops("matrix_bf16"), Some(708.0));
        assert_eq!(by_name("h100").map(|p| p.name), Some("H100 SXM".into()));
        for (name, bw, bf16) in [
            ("MI325X", 6.0, 708.0),
            ("MI355X", 6.5, 850.0),
            ("MI400", 7.0, 1000.0),
            ("H200", 4.8, 989.0),
            ("A100", 2.0, 312.0),
        ] {
            let p = by_name(name).expect(name);
            assert_eq!(
                (p.hbm_tbps.0, p.peak_tflops("matrix_bf16")),
                (bw, Some(bf16)),
                "{name}"
            );
        }
    }

    #[test]
    fn detection_from_device_names() {
        let name = |s: &str| detect(s).map(|p| p.name);
        assert_eq!(name("NVIDIA H100 80GB HBM3"), Some("H100 SXM".into()));
        assert_eq!(name("AMD Instinct MI300X VF"), Some("MI300X".into()));
        // A virtual function keeps the GPU's peaks and says what it is; the bare GPU does not.
        let label = |s: &str| detect(s).map(|p| p.label().to_owned());
        assert_eq!(label("AMD Instinct MI300X VF"), Some("MI300X VF".into()));
        assert_eq!(label("AMD Instinct MI300X"), Some("MI300X".into()));
        // The label crosses the worker boundary (JSON) and an edit keeps saying it was edited.
        let vf = detect("AMD Instinct MI300X VF").expect("detected");
        let back = from_json(&serde_json::to_string(&vf).expect("json")).expect("parses");
        assert_eq!(back.label(), "MI300X VF");
        let edited = vf.edited(5.3, &[]).edited(5.3, &[]);
        assert_eq!(edited.label(), "MI300X VF (edited)");
        assert_eq!(name("AMD Instinct MI210"), Some("MI210".into()));
        assert_eq!(name("NVIDIA B200"), Some("B200".into()));
        assert_eq!(name("NVIDIA H100 PCIe"), Some("H100 PCIe".into()));
        assert_eq!(name("NVIDIA H800"), Some("H800".into()));
        assert_eq!(name("NVIDIA GH200 480GB"), Some("GH200".into()), "not H200");
        assert_eq!(name("NVIDIA B300 SXM6 AC"), Some("B300".into()));
        assert_eq!(name("AMD Instinct MI250X"), Some("MI250X".into()));
        assert_eq!(name("NVIDIA A100 80GB PCIe"), Some("A100 PCIe 80GB".into()));
        assert_eq!(name(""), None);
        assert_eq!(name("Quadro GP100"), Some("Quadro GP100".into()));
        assert_eq!(
            name("NVIDIA GeForce RTX 2080 Ti"),
            Some("RTX 2080 Ti".into())
        );
        assert_eq!(name("NVIDIA GeForce RTX 2080"), None, "not the Ti");
    }

    /// The datasheet's dense peak beside an achievable (MAF) table peak: MI300X bf16 708 vs
    /// 1307.4 TFLOPS (hardware_facts.md §1c); none where the table's peak is the datasheet's.
    #[test]
    fn datasheet_peaks_beside_achievable_ones() {
        let mi = by_name("MI300X").expect("MI300X");
        assert_eq!(mi.peak_tflops("matrix_bf16"), Some(708.0));
        assert_eq!(mi.datasheet_tflops("matrix_bf16"), Some(1307.4));
        assert_eq!(mi.datasheet_tflops("matrix_fp8"), Some(2614.9));
        assert_eq!(
            mi.datasheet_tflops("matrix_tf32"),
            None,
            "the table holds the datasheet's"
        );
        let h = by_name("H100 SXM").expect("H100");
        assert_eq!(h.datasheet_tflops("matrix_bf16"), None);
        assert_eq!(
            by_name("MI355X").and_then(|p| p.datasheet_tflops("matrix_bf16")),
            Some(2500.0)
        );
    }

    /// SKUs one name does not tell apart are told by `totalGlobalMem` (hardware_facts.md §1b).
    #[test]
    fn detection_uses_device_memory() {
        let gib = |g: f64| Some((g * (1u64 << 30) as f64) as i64);
        let sku = |s: &str, m: Option<i64>| detect_device(s, m).map(|p| (p.name, p.hbm_tbps.0));
        // The HTA A100 traces: 42297524224 bytes (39.4 GiB), the 40 GB part at 1.555 TB/s.
        assert_eq!(
            sku("NVIDIA A100-PG509-200", Some(42297524224)),
            Some(("A100 40GB".into(), 1.555))
        );
        assert_eq!(
            sku("NVIDIA A100-PCIE-40GB", gib(39.4)),
            Some(("A100 40GB".into(), 1.555))
        );
        assert_eq!(
            sku("NVIDIA A100-SXM4-80GB", gib(79.2)),
            Some(("A100".into(), 2.0))
        );
        assert_eq!(
            sku("NVIDIA A100-SXM4-80GB", None),
            Some(("A100".into(), 2.0))
        );
        assert_eq!(
            sku("NVIDIA A100 80GB PCIe", Some(84990623744)),
            Some(("A100 PCIe 80GB".into(), 1.935))
        );
        assert_eq!(
            sku("NVIDIA GH200 144G HBM3e", gib(143.0)),
            Some(("GH200 144GB".into(), 4.9))
        );
        assert_eq!(
            sku("NVIDIA GH200 480GB", gib(95.0)),
            Some(("GH200".into(), 4.0))
        );
        assert_eq!(
            sku("NVIDIA H200", gib(140.0)),
            Some(("H200 SXM".into(), 4.8))
        );
        assert_eq!(
            sku("NVIDIA H100 80GB HBM3", gib(79.2)),
            Some(("H100 SXM".into(), 3.35))
        );
    }

    #[test]
    fn roofline_bounds() {
        let p = by_name("MI300X").expect("platform");
        // 1 GFLOP over 1 MB: intensity 1000 FLOP/B, above the bf16 ridge (708e12/5.3e12 = 133.6).
        let r = roofline(&p, "matrix_bf16", 1e9, 1e6, 2.0).expect("modelled");
        assert!(r.compute_bound);
        assert!((r.ridge - 708.0 / 5.3).abs() < 1e-9);
        assert!((r.time_us - 1e9 / 708e12 * 1e6).abs() < 1e-12);
        // achieved 1e9 FLOP in 2 µs = 500 TFLOPS: 70.6 % of 708.
        assert!((r.efficiency_pct - 500.0 / 708.0 * 100.0).abs() < 1e-9);
        let m = roofline(&p, "vector_bf16", 1e6, 1e8, 40.0).expect("modelled");
        assert!(!m.compute_bound);
        assert!((m.efficiency_pct - 1e8 / 40e-6 / 5.3e12 * 100.0).abs() < 1e-9);
    }
}
