//! The categories view: each of the seeds' op categories with its share of compute, its
//! efficiency and its findings (overview, bottlenecks with priority, Path A and Path B, impact
//! projections, ops table), largest share first. The findings are the worker's inert HTML.

use leptos::prelude::*;

use crate::reply_parts::CategoryRow;

#[component]
pub fn CategoriesView(categories: Vec<CategoryRow>) -> impl IntoView {
    if categories.is_empty() {
        return view! { <p class="facts">"No category analysis: the trace has no CPU ops to attribute GPU time to."</p> }.into_any();
    }
    let items = categories
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let eff = c
                .efficiency_pct
                .map_or_else(|| "no perf model".to_owned(), |e| format!("{e:.1} % of roofline"));
            view! {
                <details class="category" data-testid=format!("category-{}", c.key) open=i == 0>
                    <summary>
                        <span class="cat-name">{c.key.clone()}</span>
                        <span class="share-bar"><span style=format!("width: {:.1}%", c.share_pct.clamp(0.0, 100.0))></span></span>
                        <span class="num" data-value=c.share_pct.to_string()>{format!("{:.1} % of compute", c.share_pct)}</span>
                        <span class="num">{format!("{:.3} ms", c.time_ms)}</span>
                        <span class="num">{format!("{} calls", c.calls)}</span>
                        <span class="num">{eff}</span>
                    </summary>
                    <article class="report findings" inner_html=c.html></article>
                </details>
            }
        })
        .collect_view();
    view! { <section class="categories-view" data-testid="categories">{items}</section> }.into_any()
}
