//! TraceDiff against TraceLens's own regression expectations (`shared/reference/tracediff/`):
//! the CSVs' cells to 1e-3 with the same rows, the JSON and text files line for line.

mod common;

use jarvis_engine::tracediff::{diff, DiffSide};
use jarvis_engine::{analyze_trace_with, Options};

fn side(path: &std::path::Path) -> DiffSide {
    let trace = jarvis_engine::import::import_bytes(&common::read(path)).expect("imports");
    let options = Options {
        diff_tree: true,
        ..Options::default()
    };
    analyze_trace_with(trace, &options)
        .diff_side
        .expect("asked for the diff tree")
}

#[test]
fn timesformer_matches_tracelens() {
    let Some(shared) = common::shared_dir() else {
        return;
    };
    let traces = shared.join("traces/tracelens");
    let t1 =
        side(&traces.join("mi300xvf_facebook_timesformer-base-finetuned-k400__1016002.json.gz"));
    let t2 = side(&traces.join("h100_facebook_timesformer-base-finetuned-k400__1016002.json.gz"));
    let d = diff(&t1, &t2).expect("diffs");
    let expected = shared.join("reference/tracediff/timesformer");
    let out = std::env::var_os("JARVIS_TRACEDIFF_OUT");
    for (name, bytes) in d.files() {
        if let Some(dir) = &out {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(std::path::Path::new(dir).join(&name), &bytes).unwrap();
        }
        let want = common::read(&expected.join(&name));
        assert_eq!(
            String::from_utf8_lossy(&bytes),
            String::from_utf8_lossy(&want),
            "{name} differs"
        );
    }
}
