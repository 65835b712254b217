//! The Diff view: TraceDiff's merged call tree with both sides' GPU time per node, the delta,
//! expand/collapse, sort by delta and search; clicking a node lists both sides' longest
//! kernels under it. Data: the comparison's `diff_tree` rows (pre-order, parent indices).

use std::collections::HashSet;

use leptos::prelude::*;
use serde_json::Value;

/// At most this many rows are in the DOM at once (search or expand further to see others).
const SHOWN: usize = 2000;

#[derive(Clone)]
struct Node {
    id: u64,
    parent: Option<usize>,
    depth: u64,
    side: String,
    label: String,
    target_us: f64,
    reference_us: f64,
    kernels: [Vec<(String, f64)>; 2],
    /// GPU work's first start and last end per side (target, reference), trace ns.
    spans: [Option<(i64, i64)>; 2],
}

fn span(v: &Value, k: &str) -> Option<(i64, i64)> {
    let a = v.get(k)?.as_array()?;
    Some((a.first()?.as_i64()?, a.get(1)?.as_i64()?))
}

fn parse(rows: &[Value]) -> Vec<Node> {
    let kernels = |v: &Value, k: &str| -> Vec<(String, f64)> {
        v.get(k)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|p| Some((p.get(0)?.as_str()?.to_owned(), p.get(1)?.as_f64()?)))
                    .collect()
            })
            .unwrap_or_default()
    };
    rows.iter()
        .map(|v| Node {
            id: v.get("id").and_then(Value::as_u64).unwrap_or(0),
            parent: v.get("parent").and_then(Value::as_u64).map(|p| p as usize),
            depth: v.get("depth").and_then(Value::as_u64).unwrap_or(0),
            side: v
                .get("side")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            label: v
                .get("label")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            target_us: v.get("target_us").and_then(Value::as_f64).unwrap_or(0.0),
            reference_us: v.get("reference_us").and_then(Value::as_f64).unwrap_or(0.0),
            kernels: [
                kernels(v, "target_kernels"),
                kernels(v, "reference_kernels"),
            ],
            spans: [span(v, "target_span_ns"), span(v, "reference_span_ns")],
        })
        .collect()
}

/// The rows to show, in tree order: expanded subtrees (or, while searching, every match with
/// its ancestors), siblings by |Δ| when asked.
fn visible(
    nodes: &[Node],
    kids: &[Vec<usize>],
    roots: &[usize],
    open: &HashSet<usize>,
    query: &str,
    by_delta: bool,
) -> Vec<usize> {
    let q = query.trim().to_lowercase();
    let mut wanted = vec![q.is_empty(); nodes.len()];
    if !q.is_empty() {
        for (i, n) in nodes.iter().enumerate() {
            if n.label.to_lowercase().contains(&q) {
                let mut x = Some(i);
                while let Some(j) = x {
                    if wanted[j] {
                        break;
                    }
                    wanted[j] = true;
                    x = nodes[j].parent;
                }
            }
        }
    }
    let delta = |i: usize| (nodes[i].target_us - nodes[i].reference_us).abs();
    let order = |list: &[usize]| {
        let mut v: Vec<usize> = list.iter().copied().filter(|&i| wanted[i]).collect();
        if by_delta {
            // The folded row (the smaller siblings together) stays last.
            let folded = |i: usize| nodes[i].side == "folded";
            v.sort_by(|&a, &b| {
                folded(a)
                    .cmp(&folded(b))
                    .then(delta(b).total_cmp(&delta(a)))
            });
        }
        v
    };
    let mut out = Vec::new();
    let mut stack: Vec<usize> = order(roots).into_iter().rev().collect();
    while let Some(i) = stack.pop() {
        out.push(i);
        if out.len() >= SHOWN {
            break;
        }
        if open.contains(&i) || !q.is_empty() {
            stack.extend(order(&kids[i]).into_iter().rev());
        }
    }
    out
}

fn ms(us: f64) -> String {
    format!("{:.3}", us / 1e3)
}

#[component]
pub fn DiffTree(
    rows: Vec<Value>,
    target: String,
    reference: String,
    /// Called with a clicked node's GPU spans (target, reference) to show them on the timelines.
    on_pick: Callback<[Option<(i64, i64)>; 2]>,
) -> impl IntoView {
    let nodes = parse(&rows);
    let mut kids: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    let mut roots = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        match n.parent {
            Some(p) if p < nodes.len() => kids[p].push(i),
            _ => roots.push(i),
        }
    }
    // Everything starts folded: a trace can have a thousand roots (one per top-level op).
    let open = RwSignal::new(HashSet::<usize>::new());
    let query = RwSignal::new(String::new());
    let by_delta = RwSignal::new(false);
    let selected = RwSignal::new(None::<usize>);
    let nodes = StoredValue::new(nodes);
    let kids = StoredValue::new(kids);
    let roots = StoredValue::new(roots);
    let list = move || {
        let shown = nodes.with_value(|n| {
            kids.with_value(|k| {
                roots.with_value(|r| visible(n, k, r, &open.get(), &query.get(), by_delta.get()))
            })
        });
        shown
            .into_iter()
            .map(|i| {
                let n = nodes.with_value(|n| n[i].clone());
                let has_kids = kids.with_value(|k| !k[i].is_empty());
                let is_open = move || open.with(|o| o.contains(&i));
                let toggle = move |ev: leptos::ev::MouseEvent| {
                    ev.stop_propagation();
                    open.update(|o| {
                        if !o.remove(&i) {
                            o.insert(i);
                        }
                    });
                };
                let delta = n.target_us - n.reference_us;
                view! {
                    <tr data-testid="diff-row" class=format!("diff-{}", n.side)
                        class:selected=move || selected.get() == Some(i)
                        on:click=move |_| {
                            selected.set(Some(i));
                            on_pick.run(nodes.with_value(|n| n[i].spans));
                        }>
                        <td class="name" style=format!("padding-left: {}em", 0.3 + n.depth as f64 * 1.1)>
                            {has_kids.then(|| view! {
                                <button class="diff-toggle" data-testid="diff-toggle" on:click=toggle
                                    aria-label="expand or collapse">{move || if is_open() { "▾" } else { "▸" }}</button>
                            })}
                            <span class="diff-side">{match n.side.as_str() { "target" => "target only · ", "reference" => "reference only · ", _ => "" }}</span>
                            {n.label.clone()}
                        </td>
                        <td class="num">{ms(n.reference_us)}</td>
                        <td class="num">{ms(n.target_us)}</td>
                        <td class="num" data-testid="diff-delta">{format!("{:+.3}", delta / 1e3)}</td>
                        <td class="num">{(n.side != "folded").then_some(n.id)}</td>
                    </tr>
                }
            })
            .collect_view()
    };
    let (t2, r2) = (target.clone(), reference.clone());
    let detail = move || {
        selected.get().map(|i| {
            let n = nodes.with_value(|n| n[i].clone());
            let side = |name: String, list: Vec<(String, f64)>| {
                view! {
                    <div class="diff-kernels">
                        <h4>{name}</h4>
                        <ul>{list.into_iter().map(|(k, us)| view! { <li><span class="num">{format!("{} ms", ms(us))}</span>" "{k}</li> }).collect_view()}</ul>
                    </div>
                }
            };
            let [tk, rk] = n.kernels.clone();
            view! {
                <div class="diff-detail" data-testid="diff-detail">
                    <h3>{n.label.clone()}</h3>
                    {side(format!("{} (reference): longest GPU work", r2.clone()), rk)}
                    {side(format!("{} (target): longest GPU work", t2.clone()), tk)}
                </div>
            }
        })
    };
    view! {
        <div class="diff-tree">
            <div class="diff-controls">
                <input type="search" placeholder="search the merged tree" data-testid="diff-search"
                    prop:value=move || query.get() on:input=move |ev| query.set(event_target_value(&ev))/>
                <label><input type="checkbox" data-testid="diff-sort" prop:checked=move || by_delta.get()
                    on:change=move |ev| by_delta.set(event_target_checked(&ev))/>" sort siblings by |Δ|"</label>
            </div>
            <div class="kernels-scroll">
                <table class="kernels diff" data-testid="diff-table">
                    <thead><tr><th>"merged node"</th><th>{format!("{reference} ms")}</th><th>{format!("{target} ms")}</th><th>"Δ ms"</th><th>"id"</th></tr></thead>
                    <tbody>{list}</tbody>
                </table>
            </div>
            {detail}
        </div>
    }
}
