//! The kernels view: TraceLens's `kernel_summary` (one row per kernel name, launching op and
//! stream) with the owning ops, filterable by text and sortable by any column.

use leptos::prelude::*;
use serde_json::Value;

use crate::reply_parts::KernelTable;

/// The columns shown, in order: (sheet column, header).
const SHOWN: [(&str, &str); 9] = [
    ("Kernel name", "kernel"),
    ("Parent cpu_op", "launched by op"),
    ("Parent op category", "op category"),
    ("Kernel duration (µs)_count", "count"),
    ("Kernel duration (µs)_sum", "total µs"),
    ("Kernel duration (µs)_mean", "mean µs"),
    ("Kernel duration (µs)_min", "min µs"),
    ("Kernel duration (µs)_max", "max µs"),
    ("Percent of kernels time (%)", "share %"),
];

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n
            .as_f64()
            .map(|f| {
                if f.fract() == 0.0 && f.abs() < 1e15 {
                    format!("{f:.0}")
                } else {
                    format!("{f:.3}")
                }
            })
            .unwrap_or_default(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

#[component]
pub fn KernelsView(table: KernelTable) -> impl IntoView {
    let idx: Vec<Option<usize>> = SHOWN
        .iter()
        .map(|(c, _)| table.columns.iter().position(|x| x == c))
        .collect();
    let table = StoredValue::new(table);
    let idx = StoredValue::new(idx);
    let filter = RwSignal::new(String::new());
    let sort = RwSignal::new(4_usize);
    let descending = RwSignal::new(true);
    let rows = Memo::new(move |_| {
        let needle = filter.get().to_lowercase();
        let (s, desc) = (sort.get(), descending.get());
        table.with_value(|t| {
            idx.with_value(|idx| {
                let mut out: Vec<usize> = (0..t.rows.len())
                    .filter(|&r| {
                        needle.is_empty()
                            || idx[..2].iter().flatten().any(|&c| {
                                t.rows[r]
                                    .get(c)
                                    .is_some_and(|v| text(v).to_lowercase().contains(&needle))
                            })
                    })
                    .collect();
                if let Some(c) = idx[s] {
                    out.sort_by(|&a, &b| {
                        let (x, y) = (&t.rows[a][c], &t.rows[b][c]);
                        let ord = match (x.as_f64(), y.as_f64()) {
                            (Some(p), Some(q)) => p.total_cmp(&q),
                            _ => text(x).cmp(&text(y)),
                        };
                        if desc { ord.reverse() } else { ord }.then(a.cmp(&b))
                    });
                }
                out
            })
        })
    });
    let header = SHOWN
        .iter()
        .enumerate()
        .map(|(i, (_, label))| {
            let click = move |_| {
                if sort.get_untracked() == i {
                    descending.update(|d| *d = !*d);
                } else {
                    sort.set(i);
                    descending.set(i >= 3);
                }
            };
            view! { <th data-testid=format!("kernels-sort-{i}") on:click=click>{*label}</th> }
        })
        .collect_view();
    let body = move || {
        let rows = rows.get();
        table.with_value(|t| {
            idx.with_value(|idx| {
                rows.iter()
                    .map(|&r| {
                        let cells = idx
                            .iter()
                            .enumerate()
                            .map(|(i, c)| {
                                let v = c
                                    .and_then(|c| t.rows[r].get(c))
                                    .map(text)
                                    .unwrap_or_default();
                                let class = if i >= 3 { "num" } else { "name" };
                                // A kernel no CPU op launched (graph replay, profiler gaps).
                                let v = if i == 1 && v.is_empty() {
                                    "(no CPU op)".to_owned()
                                } else {
                                    v
                                };
                                let title = v.clone();
                                view! { <td class=class title=title>{v}</td> }
                            })
                            .collect_view();
                        view! { <tr data-testid="kernels-row">{cells}</tr> }
                    })
                    .collect_view()
            })
        })
    };
    view! {
        <section class="kernels-view">
            <div class="filters">
                <input type="search" placeholder="filter: kernel or op name" data-testid="kernels-filter"
                    prop:value=move || filter.get() on:input=move |ev| filter.set(event_target_value(&ev))/>
                <span class="count">{move || format!("{} of {} kernels", rows.get().len(), table.with_value(|t| t.rows.len()))}</span>
            </div>
            <div class="kernels-scroll">
                <table class="kernels" data-testid="kernels-table">
                    <thead><tr>{header}</tr></thead>
                    <tbody>{body}</tbody>
                </table>
            </div>
        </section>
    }
}
