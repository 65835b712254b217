//! The Memory tab's two tables, the events (each allocation with its release) and the
//! statistics by operator: sortable by any column, filtered by operator text, and windowed
//! (only the rows in view, and a few around, are in the DOM) like the Steps table.

use jarvis_engine::memory::bytes_text;
use leptos::prelude::*;

use crate::memory_parts::{EventRow, OpRow};

/// Row height in pixels, fixed by the stylesheet (`table.memory-rows td`).
const ROW_H: f64 = 28.0;
const OVERSCAN: usize = 10;
/// The scrolling box's height at most (`.memory-view .table-scroll`, 24rem).
const VIEW_H: f64 = 400.0;

/// A column: its header and whether it sorts by number.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    pub header: &'static str,
    pub numeric: bool,
}

/// A cell: what it shows and the number it sorts by (NaN: empty, last either way).
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub text: String,
    pub value: f64,
}

fn text(s: &str) -> Cell {
    Cell {
        text: s.to_owned(),
        value: f64::NAN,
    }
}

fn bytes(b: i64) -> Cell {
    Cell {
        text: bytes_text(b),
        value: b as f64,
    }
}

fn count(n: f64) -> Cell {
    Cell {
        text: format!("{n}"),
        value: n,
    }
}

/// A time as ms from the trace's start (`origin`), or empty.
fn at(ts: Option<i64>, origin: i64) -> Cell {
    match ts {
        Some(t) => ms((t - origin) as f64 / 1e6),
        None => text(""),
    }
}

fn ms(v: f64) -> Cell {
    Cell {
        text: format!("{v:.3}"),
        value: v,
    }
}

pub const EVENT_COLUMNS: &[Column] = &[
    Column {
        header: "operator",
        numeric: false,
    },
    Column {
        header: "size",
        numeric: true,
    },
    Column {
        header: "allocated at ms",
        numeric: true,
    },
    Column {
        header: "released at ms",
        numeric: true,
    },
    Column {
        header: "duration ms",
        numeric: true,
    },
    Column {
        header: "module",
        numeric: false,
    },
];

/// The events table's rows of `device`.
pub fn event_rows(events: &[EventRow], device: &str, origin: i64) -> Vec<Vec<Cell>> {
    events
        .iter()
        .filter(|e| e.device == device)
        .map(|e| {
            let duration = match (e.alloc_ts, e.free_ts) {
                (Some(a), Some(f)) => ms((f - a) as f64 / 1e6),
                _ => text(""),
            };
            vec![
                text(&e.operator),
                bytes(e.size),
                at(e.alloc_ts, origin),
                at(e.free_ts, origin),
                duration,
                text(e.module.as_deref().unwrap_or("")),
            ]
        })
        .collect()
}

pub const OP_COLUMNS: &[Column] = &[
    Column {
        header: "operator",
        numeric: false,
    },
    Column {
        header: "calls",
        numeric: true,
    },
    Column {
        header: "size increase",
        numeric: true,
    },
    Column {
        header: "self size increase",
        numeric: true,
    },
    Column {
        header: "allocations",
        numeric: true,
    },
    Column {
        header: "self allocations",
        numeric: true,
    },
    Column {
        header: "allocated",
        numeric: true,
    },
    Column {
        header: "self allocated",
        numeric: true,
    },
];

/// The statistics table's rows of `device`.
pub fn op_rows(rows: &[OpRow], device: &str) -> Vec<Vec<Cell>> {
    rows.iter()
        .filter(|r| r.device == device)
        .map(|r| {
            vec![
                text(&r.operator),
                count(r.calls as f64),
                bytes(r.size_increase),
                bytes(r.self_size_increase),
                count(r.allocation_count as f64),
                count(r.self_allocation_count as f64),
                bytes(r.allocation_bytes),
                bytes(r.self_allocation_bytes),
            ]
        })
        .collect()
}

/// The rows whose operator (first cell) contains `filter` (any case), ordered by column `sort`.
pub fn order(
    rows: &[Vec<Cell>],
    filter: &str,
    sort: usize,
    numeric: bool,
    desc: bool,
) -> Vec<usize> {
    let filter = filter.to_lowercase();
    let mut idx: Vec<usize> = (0..rows.len())
        .filter(|&i| {
            filter.is_empty()
                || rows[i]
                    .first()
                    .is_some_and(|c| c.text.to_lowercase().contains(&filter))
        })
        .collect();
    let cell = |i: usize| rows[i].get(sort);
    idx.sort_by(|&a, &b| {
        let (ca, cb) = (cell(a), cell(b));
        if numeric {
            let (va, vb) = (
                ca.map_or(f64::NAN, |c| c.value),
                cb.map_or(f64::NAN, |c| c.value),
            );
            // Empty cells last, whichever the direction.
            match (va.is_nan(), vb.is_nan()) {
                (true, true) => std::cmp::Ordering::Equal,
                (true, false) => std::cmp::Ordering::Greater,
                (false, true) => std::cmp::Ordering::Less,
                _ if desc => vb.total_cmp(&va),
                _ => va.total_cmp(&vb),
            }
        } else {
            let (ta, tb) = (ca.map_or("", |c| &c.text), cb.map_or("", |c| &c.text));
            if desc {
                tb.cmp(ta)
            } else {
                ta.cmp(tb)
            }
        }
    });
    idx
}

/// The rows to render, `first..last`, for a scroll offset over `total` rows.
fn window(scroll: f64, total: usize) -> (usize, usize) {
    let first = ((scroll.max(0.0) / ROW_H) as usize)
        .saturating_sub(OVERSCAN)
        .min(total);
    let last = (first + (VIEW_H / ROW_H).ceil() as usize + 2 * OVERSCAN).min(total);
    (first, last)
}

/// One windowed, sortable, filterable table; `testid` names its parts (`{testid}`,
/// `{testid}-row`, `{testid}-sort-{i}`, `{testid}-filter`). Starts sorted by column `sort`,
/// largest first.
#[component]
pub fn MemoryTable(
    testid: &'static str,
    /// What the table holds (its scrolling region's accessible name).
    name: &'static str,
    columns: &'static [Column],
    rows: Vec<Vec<Cell>>,
    sort: usize,
) -> impl IntoView {
    let all = rows.len();
    let rows = StoredValue::new(rows);
    let filter = RwSignal::new(String::new());
    let sorted = RwSignal::new((sort, true));
    let scroll = RwSignal::new(0.0_f64);
    let shown = Memo::new(move |_| {
        let (col, desc) = sorted.get();
        let numeric = columns.get(col).is_some_and(|c| c.numeric);
        filter.with(|f| rows.with_value(|r| order(r, f, col, numeric, desc)))
    });
    let head = columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let click = move |_| {
                sorted.update(|s| {
                    *s = if s.0 == i { (i, !s.1) } else { (i, c.numeric) };
                })
            };
            let arrow = move || match sorted.get() {
                (s, true) if s == i => " ▼",
                (s, false) if s == i => " ▲",
                _ => "",
            };
            view! {
                <th class:num=c.numeric class="sortable" data-testid=format!("{testid}-sort-{i}")
                    aria-sort=move || match sorted.get() {
                        (s, true) if s == i => "descending",
                        (s, false) if s == i => "ascending",
                        _ => "none",
                    }
                    on:click=click>{c.header}{arrow}</th>
            }
        })
        .collect_view();
    let body = move || {
        shown.with(|idx| {
            let total = idx.len();
            let (first, last) = window(scroll.get(), total);
            let cells = rows.with_value(|r| {
                idx[first..last]
                    .iter()
                    .map(|&i| {
                        let tds = r[i]
                            .iter()
                            .zip(columns)
                            .map(|(cell, col)| {
                                let value = (col.numeric && !cell.value.is_nan())
                                    .then(|| cell.value.to_string());
                                view! { <td class:num=col.numeric data-value=value title=cell.text.clone()>{cell.text.clone()}</td> }
                            })
                            .collect_view();
                        view! { <tr data-testid=format!("{testid}-row")>{tds}</tr> }
                    })
                    .collect_view()
            });
            let above = first as f64 * ROW_H;
            let below = (total - last) as f64 * ROW_H;
            view! {
                <tr class="spacer" aria-hidden="true" style=format!("height: {above}px")></tr>
                {cells}
                <tr class="spacer" aria-hidden="true" style=format!("height: {below}px")></tr>
            }
        })
    };
    let label = columns.first().map_or("", |c| c.header);
    view! {
        <div class="filters">
            <input type="search" placeholder=format!("filter by {label}") data-testid=format!("{testid}-filter")
                aria-label=format!("filter by {label}")
                prop:value=move || filter.get()
                on:input=move |ev| filter.set(event_target_value(&ev))/>
            <span data-testid=format!("{testid}-count")>{move || format!("{} of {all} rows", shown.with(Vec::len))}</span>
        </div>
        <div class="table-scroll" tabindex="0" role="region" aria-label=name on:scroll=move |ev| scroll.set(event_target::<web_sys::HtmlElement>(&ev).scroll_top() as f64)>
            <table class="data memory-rows" data-testid=testid data-rows=move || shown.with(Vec::len).to_string()>
                <thead><tr>{head}</tr></thead>
                <tbody>{body}</tbody>
            </table>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> Vec<Vec<Cell>> {
        vec![
            vec![text("aten::mm"), bytes(10)],
            vec![text("aten::add"), bytes(300)],
            vec![text("aten::empty"), text("")],
            vec![text("ATen::MMish"), bytes(20)],
        ]
    }

    #[test]
    fn rows_filter_by_operator_and_sort_with_empty_cells_last() {
        let r = rows();
        assert_eq!(order(&r, "", 1, true, true), vec![1, 3, 0, 2]);
        assert_eq!(order(&r, "", 1, true, false), vec![0, 3, 1, 2]);
        assert_eq!(order(&r, "MM", 1, true, true), vec![3, 0]);
        assert_eq!(order(&r, "", 0, false, false), vec![3, 1, 2, 0]);
    }

    #[test]
    fn the_window_stays_in_bounds() {
        assert_eq!(window(0.0, 5), (0, 5));
        assert_eq!(window(100.0 * ROW_H, 1000), (90, 125));
        assert_eq!(window(1e9, 50), (50, 50));
    }
}
