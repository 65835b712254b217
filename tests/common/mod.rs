//! Helpers shared by the integration tests: where `../shared` is, and the skip/fail rule.
#![allow(dead_code)]

use std::path::PathBuf;

/// The shared fixtures folder (`../shared` beside the repository, or `$JARVIS_SHARED`).
/// Returns `None` (after printing a notice) when it is absent and `CI` is unset; under
/// `CI=true` its absence fails the test.
pub fn shared_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("JARVIS_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"));
    if dir.join("traces").is_dir() {
        return Some(dir);
    }
    if std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0") {
        panic!(
            "CI is set but the shared fixtures folder {} is missing",
            dir.display()
        );
    }
    eprintln!(
        "notice: {} is absent; skipping tests that need shared traces",
        dir.display()
    );
    None
}

/// Every trace file under `shared/traces`, sorted.
pub fn all_traces(shared: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for sub in std::fs::read_dir(shared.join("traces")).expect("traces dir") {
        let sub = sub.expect("entry").path();
        if sub.is_dir() {
            for f in std::fs::read_dir(&sub).expect("sub dir") {
                let f = f.expect("entry").path();
                let name = f.to_string_lossy().to_string();
                if name.ends_with(".json") || name.ends_with(".json.gz") {
                    out.push(f);
                }
            }
        }
    }
    out.sort();
    out
}

/// Every trace file anywhere under `shared/traces` (capture traces included), sorted.
pub fn all_traces_deep(shared: &std::path::Path) -> Vec<PathBuf> {
    fn walk(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).expect("dir") {
            let p = e.expect("entry").path();
            let name = p.to_string_lossy().to_string();
            if p.is_dir() {
                walk(&p, out);
            } else if name.ends_with(".json") || name.ends_with(".json.gz") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&shared.join("traces"), &mut out);
    out.sort();
    out
}

/// Reads a whole file.
pub fn read(path: &std::path::Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Every file `jarvis report` writes for an analysis, by path (CSVs under `perf_report_csvs/`).
pub fn report_files(
    a: &jarvis_engine::Analysis,
    title: &str,
) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    a.write_csv_sheets(|name, csv| {
        out.insert(format!("perf_report_csvs/{name}.csv"), csv.to_vec());
        Ok::<(), ()>(())
    })
    .expect("csv");
    for (p, b) in jarvis_engine::report::contract::standalone_files(a, title).expect("files") {
        assert!(out.insert(p.clone(), b).is_none(), "{p} written twice");
    }
    out
}
