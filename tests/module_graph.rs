//! The crates' modules depend on one another in one direction only (ARCHITECTURE.md): no import
//! circle between sibling modules, at any depth. Read from the sources: every `crate::…`,
//! `super::…` and `self::…` path outside comments and test modules is an edge from the file's
//! module to the longest module that path names; an edge between two modules is lifted to the
//! children of their nearest common ancestor (so `analysis::idle` → `report::files` is
//! `analysis` → `report`), and those graphs must have no cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use regex::Regex;

type Graph = BTreeMap<String, BTreeSet<String>>;

/// Module path of each `.rs` file under `root` (`a/b.rs`, `a/b/mod.rs` → `a::b`; `lib.rs`,
/// `main.rs` → the crate root ``), with its text.
fn modules(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("source dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path
                    .strip_prefix(root)
                    .expect("under root")
                    .with_extension("");
                let mut parts: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                if matches!(
                    parts.last().map(String::as_str),
                    Some("mod" | "lib" | "main")
                ) {
                    parts.pop();
                }
                out.insert(
                    parts.join("::"),
                    std::fs::read_to_string(&path).expect("read"),
                );
            }
        }
    }
    out
}

/// Strips line comments and a trailing `#[cfg(test)] mod …` block (tests may reach anywhere).
fn code(src: &str) -> String {
    let no_comments = Regex::new(r"//[^\n]*").expect("re").replace_all(src, "");
    let test_mod = Regex::new(r"#\[cfg\(test\)\]\s*(pub(\(crate\))? )?mod \w+\s*\{").expect("re");
    match test_mod.find(&no_comments) {
        Some(m) => no_comments[..m.start()].to_owned(),
        None => no_comments.into_owned(),
    }
}

/// The module a path names, seen from module `cur`: the longest prefix that is a module.
fn resolve(names: &BTreeMap<String, String>, cur: &[&str], path: &str) -> Option<String> {
    let mut segs: Vec<&str> = path.split("::").collect();
    let mut base: Vec<&str> = match segs[0] {
        "crate" => Vec::new(),
        "self" => cur.to_vec(),
        "super" => cur.to_vec(),
        _ => return None,
    };
    if segs[0] == "super" {
        while segs.first() == Some(&"super") {
            base.pop();
            segs.remove(0);
        }
    } else {
        segs.remove(0);
    }
    (1..=segs.len()).rev().find_map(|i| {
        let mut m = base.clone();
        m.extend(&segs[..i]);
        let m = m.join("::");
        names.contains_key(&m).then_some(m)
    })
}

/// The lifted module graph of a crate's sources.
fn graph(root: &Path) -> Graph {
    let mods = modules(root);
    let path_re = Regex::new(r"\b((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+)").expect("re");
    let group_re = Regex::new(r"\b((?:crate|super|self)(?:::[a-z_]+)*)::\{([^}]*)\}").expect("re");
    let mut g = Graph::new();
    for (m, src) in &mods {
        let cur: Vec<&str> = if m.is_empty() {
            Vec::new()
        } else {
            m.split("::").collect()
        };
        let src = code(src);
        let mut paths: Vec<String> = path_re
            .captures_iter(&src)
            .map(|c| c[1].to_owned())
            .collect();
        for c in group_re.captures_iter(&src) {
            for item in c[2].split([',', '{', '}']) {
                let first = item.trim().split("::").next().unwrap_or("").trim();
                let first = first.split(' ').next().unwrap_or("");
                if !first.is_empty() && first != "self" {
                    paths.push(format!("{}::{first}", &c[1]));
                }
            }
        }
        for p in paths {
            let Some(t) = resolve(&mods, &cur, &p) else {
                continue;
            };
            let nested = |a: &str, b: &str| b.is_empty() || a.starts_with(&format!("{b}::"));
            if t == *m || nested(m, &t) || nested(&t, m) {
                continue;
            }
            let (x, y) = lift(m, &t);
            g.entry(y.clone()).or_default();
            g.entry(x).or_default().insert(y);
        }
    }
    g
}

/// Both modules cut to one segment below their nearest common ancestor.
fn lift(a: &str, b: &str) -> (String, String) {
    let (pa, pb): (Vec<&str>, Vec<&str>) = (a.split("::").collect(), b.split("::").collect());
    let common = pa.iter().zip(&pb).take_while(|(x, y)| x == y).count();
    (pa[..=common].join("::"), pb[..=common].join("::"))
}

/// One cycle of the graph, if any (depth-first search with colours).
fn cycle(g: &Graph) -> Option<Vec<String>> {
    fn visit(
        g: &Graph,
        v: &str,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(v.to_owned(), 1);
        path.push(v.to_owned());
        for w in g.get(v).into_iter().flatten() {
            match state.get(w.as_str()).copied().unwrap_or(0) {
                1 => {
                    let at = path.iter().position(|p| p == w).unwrap_or(0);
                    let mut c = path[at..].to_vec();
                    c.push(w.clone());
                    return Some(c);
                }
                0 => {
                    if let Some(c) = visit(g, w, state, path) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        path.pop();
        state.insert(v.to_owned(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for v in g.keys() {
        if state.get(v.as_str()).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(g, v, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn no_crate_has_an_import_circle() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for dir in [
        "crates/engine/src",
        "crates/cli/src",
        "crates/export/src",
        "crates/worker/src",
        "src",
    ] {
        let g = graph(&repo.join(dir));
        assert!(g.len() > 1 || dir != "crates/engine/src", "{dir}: no graph");
        if let Some(c) = cycle(&g) {
            panic!("{dir}: import circle {}", c.join(" → "));
        }
    }
}

#[test]
fn the_check_sees_a_circle() {
    // Two sibling modules that use each other, one of them through a nested module.
    let dir = std::env::temp_dir().join(format!("jarvis-module-graph-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("a")).expect("mkdir");
    std::fs::write(dir.join("lib.rs"), "pub mod a;\npub mod b;\n").expect("write");
    std::fs::write(dir.join("a/mod.rs"), "pub mod inner;\n").expect("write");
    std::fs::write(dir.join("a/inner.rs"), "use crate::b::Thing;\n").expect("write");
    std::fs::write(
        dir.join("b.rs"),
        "// use crate::a is only a comment here\npub struct Thing;\nfn f() { super::a::inner::g(); }\n",
    )
    .expect("write");
    let c = cycle(&graph(&dir));
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(c.map(|c| c.len()), Some(3), "a → b → a");
}
