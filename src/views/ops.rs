//! The ops view: `unified_perf_summary` as an explorable table (one row per op and argument
//! signature), sortable by any column, filterable by text, category and bound, virtualized (only
//! the rows in view are in the DOM, so 100k rows scroll like 100). Clicking a row opens its call
//! stack (module frames and CPU ops above it), its subtree (ops and kernels below it, with
//! shapes and times) and the recommendations that concern it.

use jarvis_engine::standalone::explorer::OpView;
use leptos::prelude::*;

use crate::analysis_view::Recommendation;
use crate::url_state::OpsState;

/// Row height in pixels (fixed: the virtualization computes positions from it).
const ROW_H: f64 = 26.0;
/// Height of the scrolling viewport in pixels.
const VIEW_H: f64 = 520.0;
/// Rows rendered above and below the viewport.
const OVERSCAN: usize = 8;

/// A sortable column: (key, header, numeric value or text of an op).
struct Column {
    key: &'static str,
    label: &'static str,
    num: fn(&OpView) -> Option<f64>,
    text: fn(&OpView) -> String,
}

fn fmt(x: Option<f64>, digits: usize) -> String {
    x.filter(|v| v.is_finite())
        .map_or_else(String::new, |v| format!("{v:.digits$}"))
}

const COLUMNS: [Column; 15] = [
    Column {
        key: "name",
        label: "op",
        num: |_| None,
        text: |o| o.name.clone(),
    },
    Column {
        key: "category",
        label: "category",
        num: |_| None,
        text: |o| o.category.clone(),
    },
    Column {
        key: "count",
        label: "count",
        num: |o| Some(o.count as f64),
        text: |o| o.count.to_string(),
    },
    Column {
        key: "kernel_ms",
        label: "kernel ms",
        num: |o| Some(o.kernel_ms),
        text: |o| format!("{:.3}", o.kernel_ms),
    },
    Column {
        key: "mean_us",
        label: "mean µs",
        num: |o| Some(o.mean_us),
        text: |o| format!("{:.1}", o.mean_us),
    },
    Column {
        key: "pct_compute",
        label: "% compute",
        num: |o| Some(o.pct_compute),
        text: |o| format!("{:.2}", o.pct_compute),
    },
    Column {
        key: "flops_per_byte",
        label: "FLOPS/B",
        num: |o| o.flops_per_byte,
        text: |o| fmt(o.flops_per_byte, 1),
    },
    Column {
        key: "tflops_s",
        label: "TFLOPS/s",
        num: |o| o.tflops_s,
        text: |o| fmt(o.tflops_s, 2),
    },
    Column {
        key: "tb_s",
        label: "TB/s",
        num: |o| o.tb_s,
        text: |o| fmt(o.tb_s, 3),
    },
    Column {
        key: "efficiency_pct",
        label: "efficiency %",
        num: |o| o.efficiency_pct,
        text: |o| fmt(o.efficiency_pct, 1),
    },
    Column {
        key: "bound",
        label: "bound",
        num: |_| None,
        text: |o| o.bound.clone().unwrap_or_default(),
    },
    Column {
        key: "input_dims",
        label: "shapes",
        num: |_| None,
        text: |o| o.input_dims.clone(),
    },
    Column {
        key: "input_type",
        label: "dtypes",
        num: |_| None,
        text: |o| o.input_type.clone(),
    },
    Column {
        key: "gemm_waves",
        label: "tiles · waves",
        num: |o| o.gemm.as_ref().and_then(|g| g.waves),
        text: |o| o.gemm.as_ref().map(tiling_text).unwrap_or_default(),
    },
    Column {
        key: "gemm_misaligned",
        label: "misaligned",
        num: |_| None,
        text: |o| {
            o.gemm
                .as_ref()
                .map(|g| g.misaligned.join(", "))
                .unwrap_or_default()
        },
    },
];

/// `1089 tiles of 256×256 · 3.58 waves (last 58%) · 94% useful`.
fn tiling_text(g: &jarvis_engine::standalone::diagnosis::GemmTiling) -> String {
    let mut s = format!("{} tiles of {}×{}", g.tiles, g.tile_m, g.tile_n);
    if g.split_k > 1 {
        s.push_str(&format!(" × split-K {}", g.split_k));
    }
    match (g.waves, g.last_wave_fill, g.persistent) {
        (_, _, true) => s.push_str(" · persistent"),
        (Some(w), Some(f), false) => {
            s.push_str(&format!(" · {w:.2} waves (last {:.0}%)", f * 100.0))
        }
        _ => {}
    }
    if g.useful < 0.995 {
        s.push_str(&format!(" · {:.0}% useful", g.useful * 100.0));
    }
    s
}

/// Columns sorted alphabetically (ascending) on first click.
const TEXT_COLUMNS: [&str; 6] = [
    "name",
    "category",
    "bound",
    "input_dims",
    "input_type",
    "gemm_misaligned",
];

fn column(key: &str) -> &'static Column {
    COLUMNS.iter().find(|c| c.key == key).unwrap_or(&COLUMNS[3])
}

/// Indices of the ops that pass the filters, in the chosen order.
pub fn visible_rows(
    ops: &[OpView],
    text: &str,
    category: &str,
    bound: &str,
    sort: &str,
    descending: bool,
) -> Vec<usize> {
    let needle = text.trim().to_lowercase();
    let mut idx: Vec<usize> = ops
        .iter()
        .enumerate()
        .filter(|(_, o)| {
            (needle.is_empty()
                || o.name.to_lowercase().contains(&needle)
                || o.input_dims.to_lowercase().contains(&needle)
                || o.module_path.to_lowercase().contains(&needle))
                && (category.is_empty() || o.category == category)
                && (bound.is_empty() || o.bound.as_deref() == Some(bound))
        })
        .map(|(i, _)| i)
        .collect();
    let col = column(sort);
    idx.sort_by(|&a, &b| {
        let (x, y) = (&ops[a], &ops[b]);
        let ord = match ((col.num)(x), (col.num)(y)) {
            (Some(p), Some(q)) => p.total_cmp(&q),
            (Some(_), None) => std::cmp::Ordering::Greater,
            (None, Some(_)) => std::cmp::Ordering::Less,
            (None, None) => (col.text)(x).cmp(&(col.text)(y)),
        };
        let ord = if descending { ord.reverse() } else { ord };
        // Ties keep the sheet's order (kernel time).
        ord.then(a.cmp(&b))
    });
    idx
}

#[component]
pub fn OpsView(
    ops: Vec<OpView>,
    recommendations: Vec<Recommendation>,
    /// Sort, filters and selection, shared with the URL.
    state: RwSignal<OpsState>,
    /// Opens the timeline with the selected op marked (None without lanes: a bundle).
    show_in_timeline: Option<Callback<()>>,
) -> impl IntoView {
    let ops = StoredValue::new(ops);
    let recs = StoredValue::new(recommendations);
    let scroll = RwSignal::new(0.0_f64);
    // The selected op as an index into `ops` (the state holds its unified row).
    let selected = Memo::new(move |_| {
        let row = state.with(|s| s.selected_row)?;
        ops.with_value(|o| o.iter().position(|x| x.row == row))
    });
    let scroller = NodeRef::<leptos::html::Div>::new();

    let rows = Memo::new(move |_| {
        state.with(|s| {
            ops.with_value(|o| {
                visible_rows(o, &s.text, &s.category, &s.bound, &s.sort, s.descending)
            })
        })
    });
    // Bring the selected op into view once the table exists (a link or a roofline click).
    Effect::new(move |_| {
        let (Some(sel), Some(el)) = (selected.get_untracked(), scroller.get()) else {
            return;
        };
        if let Some(pos) = rows.get_untracked().iter().position(|&i| i == sel) {
            let top = (pos as f64 * ROW_H - 2.0 * ROW_H).max(0.0);
            el.set_scroll_top(top as i32);
            scroll.set(top);
        }
    });
    let categories = ops.with_value(|o| {
        let mut c: Vec<String> = o.iter().map(|x| x.category.clone()).collect();
        c.sort();
        c.dedup();
        c
    });
    let header = COLUMNS
        .iter()
        .map(|c| {
            let key = c.key;
            let sort = move || {
                state.update(|s| {
                    if s.sort == key {
                        s.descending = !s.descending;
                    } else {
                        s.sort = key.to_owned();
                        // Numbers read best largest first, names alphabetically.
                        s.descending = !TEXT_COLUMNS.contains(&key);
                    }
                });
            };
            let arrow = move || {
                state.with(|s| match (s.sort == key, s.descending) {
                    (true, true) => " ▼",
                    (true, false) => " ▲",
                    _ => "",
                })
            };
            view! {
                <div class="cell head" role="columnheader" tabindex="0" data-testid=format!("ops-sort-{key}")
                    aria-sort=move || state.with(|s| match (s.sort == key, s.descending) {
                        (true, true) => "descending",
                        (true, false) => "ascending",
                        _ => "none",
                    })
                    on:click=move |_| sort()
                    on:keydown=move |ev: web_sys::KeyboardEvent| {
                        if ev.key() == "Enter" || ev.key() == " " {
                            ev.prevent_default();
                            sort();
                        }
                    }>
                    {c.label}{arrow}
                </div>
            }
        })
        .collect_view();
    let body = move || {
        let rows = rows.get();
        let first = ((scroll.get() / ROW_H) as usize).saturating_sub(OVERSCAN);
        let last = (first + (VIEW_H / ROW_H) as usize + 2 * OVERSCAN).min(rows.len());
        let shown: Vec<usize> = rows
            .get(first..last)
            .map(<[usize]>::to_vec)
            .unwrap_or_default();
        ops.with_value(|o| {
            shown
                .into_iter()
                .map(|i| {
                    let op = &o[i];
                    let cells = COLUMNS
                        .iter()
                        .map(|c| {
                            let class = if (c.num)(op).is_some() {
                                "cell num"
                            } else {
                                "cell"
                            };
                            view! { <div class=class role="cell" title=(c.text)(op)>{(c.text)(op)}</div> }
                        })
                        .collect_view();
                    let row = op.row;
                    view! {
                        <div class="row" role="row" data-testid="ops-row" data-row=op.row tabindex="0"
                            aria-selected=move || (selected.get() == Some(i)).to_string()
                            class:selected=move || selected.get() == Some(i)
                            on:click=move |_| state.update(|s| s.selected_row = Some(row))
                            on:keydown=move |ev: web_sys::KeyboardEvent| {
                                // Enter or Space opens the row, as a click does.
                                if ev.key() == "Enter" || ev.key() == " " {
                                    ev.prevent_default();
                                    state.update(|s| s.selected_row = Some(row));
                                }
                            }>
                            {cells}
                        </div>
                    }
                })
                .collect_view()
        })
    };
    let offset = move || {
        let first = ((scroll.get() / ROW_H) as usize).saturating_sub(OVERSCAN);
        format!("transform: translateY({}px)", first as f64 * ROW_H)
    };
    let detail = move || {
        selected.get().map(|i| {
            ops.with_value(|o| {
                let op = o[i].clone();
                let related: Vec<Recommendation> = recs.with_value(|r| {
                    r.iter()
                        .filter(|x| op.recommendations.contains(&(x.rank as usize)))
                        .cloned()
                        .collect()
                });
                view! { <OpDetail op=op related=related show_in_timeline=show_in_timeline/> }
            })
        })
    };
    view! {
        <section class="ops-view">
            <div class="filters">
                <input type="search" placeholder="filter: op name, shape or module" data-testid="ops-filter" aria-label="filter ops"
                    prop:value=move || state.with(|s| s.text.clone())
                    on:input=move |ev| state.update(|s| s.text = event_target_value(&ev))/>
                <select data-testid="ops-category" aria-label="category" prop:value=move || state.with(|s| s.category.clone())
                    on:change=move |ev| state.update(|s| s.category = event_target_value(&ev))>
                    <option value="">"all categories"</option>
                    {categories.into_iter().map(|c| view! { <option value=c.clone()>{c.clone()}</option> }).collect_view()}
                </select>
                <select data-testid="ops-bound" aria-label="bound" prop:value=move || state.with(|s| s.bound.clone())
                    on:change=move |ev| state.update(|s| s.bound = event_target_value(&ev))>
                    <option value="">"any bound"</option>
                    <option value="compute">"compute-bound"</option>
                    <option value="memory">"memory-bound"</option>
                </select>
                <span class="count" data-testid="ops-count">{move || format!("{} of {} rows", rows.get().len(), ops.with_value(Vec::len))}</span>
            </div>
            <div class="ops-table" role="table" data-testid="ops-table">
                <div class="row head" role="row">{header}</div>
                <div class="ops-scroll" node_ref=scroller style=format!("height: {VIEW_H}px")
                    on:scroll=move |ev| scroll.set(event_target::<web_sys::HtmlElement>(&ev).scroll_top() as f64)>
                    <div class="ops-spacer" style=move || format!("height: {}px", rows.get().len() as f64 * ROW_H)>
                        <div class="ops-window" style=offset>{body}</div>
                    </div>
                </div>
            </div>
            {detail}
        </section>
    }
}

/// The selected op: call stack, subtree and the recommendations about it.
#[component]
fn OpDetail(
    op: OpView,
    related: Vec<Recommendation>,
    show_in_timeline: Option<Callback<()>>,
) -> impl IntoView {
    let chain = op
        .parent_chain
        .iter()
        .enumerate()
        .map(|(d, f)| {
            let module = f.starts_with("nn.Module: ");
            view! {
                <li class:module=module style=format!("padding-left: {}rem", d as f64 * 0.8)>{f.clone()}</li>
            }
        })
        .collect_view();
    let subtree = op
        .subtree
        .iter()
        .map(|l| {
            view! {
                <tr class=format!("kind-{}", l.kind)>
                    <td style=format!("padding-left: {}rem", f64::from(l.depth) * 0.8)>{l.name.clone()}</td>
                    <td class="dims">{l.input_dims.clone()}</td>
                    <td class="num">{l.gpu_us.map(|u| format!("{u:.1}")).unwrap_or_default()}</td>
                </tr>
            }
        })
        .collect_view();
    let recs = related
        .iter()
        .map(|r| {
            view! {
                <li><span class=format!("prio prio-{}", r.priority.to_lowercase())>{r.priority.clone()}</span>
                    " #" {r.rank} <div class="finding" inner_html=r.html.clone()></div></li>
            }
        })
        .collect_view();
    let no_recs = related.is_empty();
    view! {
        <aside class="op-detail" data-testid="call-stack">
            <h3>{op.name.clone()}</h3>
            <p class="facts">{format!("{} calls · {:.3} ms of kernels · {} · shapes {}", op.count, op.kernel_ms, op.input_type, op.input_dims)}</p>
            {show_in_timeline.map(|cb| view! {
                <button data-testid="ops-show-timeline" on:click=move |_| cb.run(())>"Show where it runs on the timeline"</button>
            })}
            {op.gemm.as_ref().map(|g| view! {
                <p class="facts" data-testid="op-gemm-tiling">
                    {format!("{} kernel: {}; {} × {} tiles along M × N{}", g.library, tiling_text(g), g.tiles_m, g.tiles_n,
                        if g.misaligned.is_empty() { String::new() } else { format!("; not a multiple of 16 bytes: {}", g.misaligned.join(", ")) })}
                </p>
            })}
            <h4>"Call stack (outermost first)"</h4>
            <ul class="chain">{chain}</ul>
            <h4>"Subtree (ops and kernels below it, one instance)"</h4>
            <table class="subtree"><thead><tr><th>"event"</th><th>"shapes"</th><th>"GPU µs"</th></tr></thead><tbody>{subtree}</tbody></table>
            <h4>"Recommendations about it"</h4>
            {if no_recs {
                view! { <p class="facts">"None: no rule flagged this op."</p> }.into_any()
            } else {
                view! { <ul class="related">{recs}</ul> }.into_any()
            }}
        </aside>
    }
}
