//! The run's software environment where the trace records one: the performance switches set in
//! its environment variables and the kernel libraries installed, so advice can say what the run
//! already does ("TunableOp is on with tuning off") instead of repeating it.
//!
//! Kineto writes no environment; harnesses add it under a top-level `metadata` key
//! (`metadata.system.env`, `metadata.system.pip_packages`: TraceLens's HF traces). The import
//! reduces that value at once to the switches named here ([`Environment::from_metadata`]) and
//! keeps only them (under [`META_KEY`] in the trace's kept top-level values): an environment can
//! hold secrets (access tokens), so nothing else of it is stored, shown or exported.

use serde::{Deserialize, Serialize};

use super::TraceMeta;

/// PyTorch's TunableOp switches (`PYTORCH_TUNABLEOP_*`), as the run set them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TunableOp {
    /// `PYTORCH_TUNABLEOP_ENABLED`: results are looked up (and tuned where tuning is on).
    pub enabled: bool,
    /// `PYTORCH_TUNABLEOP_TUNING`: new shapes are timed; off means only the file's are used
    /// (PyTorch's default is on once enabled).
    pub tuning: bool,
    /// `PYTORCH_TUNABLEOP_FILENAME`: the results file.
    pub file: Option<String>,
}

/// What the trace records of its run's software environment.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// `None` where the environment is not recorded or sets no `PYTORCH_TUNABLEOP_*` switch.
    pub tunableop: Option<TunableOp>,
    /// Kernel libraries installed (`name==version`) among those the advice names: aiter,
    /// flash_attn, xformers, flashinfer, triton. Empty where no package list is recorded.
    pub kernel_libraries: Vec<String>,
    /// The PyTorch build (`2.6.0+cu124`), where the harness recorded it
    /// (`system.torch_env_info.torch_version`), reduced to a version's characters: a
    /// comparison of two builds says their kernels may differ by software.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch_version: Option<String>,
}

/// Packages the advice can name as present (normalized: lower case, `-` as `_`).
const KERNEL_LIBRARIES: [&str; 5] = ["aiter", "flash_attn", "xformers", "flashinfer", "triton"];

fn truthy(v: &str) -> bool {
    matches!(
        v.trim(),
        "1" | "true" | "True" | "TRUE" | "on" | "ON" | "yes"
    )
}

/// The key the import keeps the reduced environment under in `TraceMeta::other`.
pub const META_KEY: &str = "jarvis_environment";

impl Environment {
    /// The environment the import kept for the trace (none where it recorded none).
    pub fn of(meta: &TraceMeta) -> Environment {
        meta.other
            .iter()
            .find(|(k, _)| k == META_KEY)
            .and_then(|(_, v)| serde_json::from_str(v).ok())
            .unwrap_or_default()
    }

    /// Reads the switches from a harness's top-level `metadata` value (raw JSON).
    pub fn from_metadata(raw: &str) -> Environment {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(raw) else {
            return Environment::default();
        };
        let system = v.get("system").unwrap_or(&v);
        let env = system.get("env").and_then(|e| e.as_object());
        let var = |k: &str| env.and_then(|e| e.get(k)).and_then(|x| x.as_str());
        let tunableop = var("PYTORCH_TUNABLEOP_ENABLED").map(|enabled| TunableOp {
            enabled: truthy(enabled),
            tuning: var("PYTORCH_TUNABLEOP_TUNING").is_none_or(truthy),
            file: var("PYTORCH_TUNABLEOP_FILENAME").map(str::to_owned),
        });
        let kernel_libraries = system
            .get("pip_packages")
            .and_then(|p| p.as_array())
            .map(|list| {
                list.iter()
                    .filter_map(|p| p.as_str())
                    .filter(|p| {
                        let name = p
                            .split(['=', '<', '>', ' ', '@'])
                            .next()
                            .unwrap_or_default()
                            .to_ascii_lowercase()
                            .replace('-', "_");
                        KERNEL_LIBRARIES.contains(&name.as_str())
                    })
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let torch_version = system
            .get("torch_env_info")
            .and_then(|t| t.get("torch_version"))
            .and_then(|x| x.as_str())
            .map(|x| {
                x.chars()
                    .filter(|c| c.is_ascii_alphanumeric() || "._+-".contains(*c))
                    .take(40)
                    .collect::<String>()
            })
            .filter(|x| !x.is_empty());
        Environment {
            tunableop,
            kernel_libraries,
            torch_version,
        }
    }

    /// Whether a kernel library (`aiter`, `flash_attn`, …) is installed, where the trace lists
    /// its packages; `None` where it lists none.
    pub fn has_library(&self, name: &str) -> Option<bool> {
        (!self.kernel_libraries.is_empty()).then(|| self.library(name).is_some())
    }

    /// The installed package of a kernel library as listed (`aiter==0.1.3.dev40`), reduced to
    /// the characters a version is written with: it comes from the trace and is quoted in
    /// advice.
    pub fn library(&self, name: &str) -> Option<String> {
        self.kernel_libraries
            .iter()
            .find(|p| p.to_ascii_lowercase().replace('-', "_").starts_with(name))
            .map(|p| {
                p.chars()
                    .filter(|c| c.is_ascii_alphanumeric() || "._+=-".contains(*c))
                    .collect()
            })
    }

    /// How advice says a library stands in this run: `" (installed in this run: `aiter==…`)"`,
    /// `" (not among this run's packages)"`, or nothing where no package list is recorded.
    pub fn library_note(&self, name: &str) -> String {
        match (self.has_library(name), self.library(name)) {
            (Some(true), Some(p)) => format!(" (installed in this run: `{p}`)"),
            (Some(false), _) => " (not among this run's packages)".to_owned(),
            _ => String::new(),
        }
    }

    /// No environment recorded (a `'static` one, for contexts that have none).
    pub const NONE: Environment = Environment {
        torch_version: None,
        tunableop: None,
        kernel_libraries: Vec::new(),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(metadata: &str) -> TraceMeta {
        let env = Environment::from_metadata(metadata);
        TraceMeta {
            other: vec![(META_KEY.into(), serde_json::to_string(&env).expect("json"))],
            ..TraceMeta::default()
        }
    }

    /// The switches are read as set; nothing else of the environment is kept (a token beside
    /// them is not), and the package list keeps only the kernel libraries.
    #[test]
    fn reads_the_switches_and_kernel_libraries_only() {
        let e = Environment::of(&meta(
            r#"{"system": {"env": {"PYTORCH_TUNABLEOP_ENABLED": "1", "PYTORCH_TUNABLEOP_TUNING": "0",
                "PYTORCH_TUNABLEOP_FILENAME": "/app/tune_%d.csv", "HF_TOKEN": "hf_secret"},
                "pip_packages": ["absl-py==2.3.1", "aiter==0.1.3.dev40", "flash-attn==2.7.4", "torch==2.7.0"]}}"#,
        ));
        let t = e.tunableop.clone().expect("set");
        assert!(t.enabled && !t.tuning);
        assert_eq!(t.file.as_deref(), Some("/app/tune_%d.csv"));
        assert_eq!(
            e.kernel_libraries,
            ["aiter==0.1.3.dev40", "flash-attn==2.7.4"]
        );
        assert_eq!(e.has_library("flash_attn"), Some(true));
        assert_eq!(e.has_library("xformers"), Some(false));
        assert_eq!(
            e.library_note("aiter"),
            " (installed in this run: `aiter==0.1.3.dev40`)"
        );
        assert_eq!(
            e.library_note("xformers"),
            " (not among this run's packages)"
        );
        assert!(!format!("{e:?}").contains("hf_secret"));
    }

    /// The PyTorch build is kept as written, reduced to a version's characters.
    #[test]
    fn reads_the_torch_build() {
        let e = Environment::from_metadata(
            r#"{"system": {"torch_env_info": {"torch_version": "2.7.0+gitf717b2a<b>"}}}"#,
        );
        assert_eq!(e.torch_version.as_deref(), Some("2.7.0+gitf717b2ab"));
        assert_eq!(Environment::from_metadata("{}").torch_version, None);
    }

    /// Through the import: a trace's `metadata` leaves only the switches behind (its token is
    /// nowhere in what the import kept).
    #[test]
    fn the_import_keeps_the_switches_not_the_environment() {
        let doc = br#"{"metadata": {"system": {"env": {"PYTORCH_TUNABLEOP_ENABLED": "1",
            "PYTORCH_TUNABLEOP_TUNING": "0", "HF_TOKEN": "hf_secret"}}},
            "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
            "ts": 1, "dur": 2, "args": {"stream": 7}}]}"#;
        let t = crate::import::import_bytes(doc).expect("imports");
        let e = Environment::of(&t.meta);
        assert!(e.tunableop.as_ref().is_some_and(|t| t.enabled && !t.tuning));
        assert!(!format!("{:?}", t.meta).contains("hf_secret"));
    }

    /// No metadata: nothing known; enabled without a tuning switch: PyTorch's default, tuning
    /// on; an environment without the switch: no TunableOp state.
    #[test]
    fn absent_or_tuning_switches() {
        let none = Environment::of(&TraceMeta::default());
        assert_eq!(none, Environment::default());
        assert_eq!(none.has_library("aiter"), None);
        let tuning = Environment::of(&meta(
            r#"{"system": {"env": {"PYTORCH_TUNABLEOP_ENABLED": "1"}}}"#,
        ));
        assert!(tuning.tunableop.is_some_and(|t| t.enabled && t.tuning));
        let unset = Environment::of(&meta(r#"{"system": {"env": {"PATH": "/bin"}}}"#));
        assert!(unset.tunableop.is_none());
    }
}
