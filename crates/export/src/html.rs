//! The markdown reports as HTML: a fragment for the page and a self-contained document to share.
//! Raw HTML in the markdown (which Jarvis never writes on purpose) is shown as text, and links
//! other than in-page anchors lose their target, so nothing from a trace can become markup or
//! a request.

use pulldown_cmark::{html, CowStr, Event, Options, Parser, Tag};

/// Renders markdown to an HTML fragment (tables on, raw HTML escaped, external links dropped).
pub fn markdown_html(md: &str) -> String {
    let parser = Parser::new_ext(md, Options::ENABLE_TABLES).map(|ev| match ev {
        Event::Html(s) | Event::InlineHtml(s) => Event::Text(s),
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) => {
            let safe = if dest_url.starts_with('#') {
                dest_url
            } else {
                CowStr::from("#")
            };
            Event::Start(Tag::Link {
                link_type,
                dest_url: safe,
                title,
                id,
            })
        }
        Event::Start(Tag::Image { .. }) | Event::End(pulldown_cmark::TagEnd::Image) => {
            Event::Text(CowStr::from(""))
        }
        other => other,
    });
    let mut out = String::new();
    html::push_html(&mut out, parser);
    add_heading_ids(&out)
}

/// GitHub-style ids on headings, so the reports' "See Detailed Analysis" links work.
fn add_heading_ids(html: &str) -> String {
    let mut out = String::with_capacity(html.len() + 256);
    let mut rest = html;
    while let Some(at) = rest.find("<h") {
        let level = rest.as_bytes().get(at + 2).copied().unwrap_or(b'x');
        if !(b'1'..=b'6').contains(&level) || rest.as_bytes().get(at + 3) != Some(&b'>') {
            out.push_str(&rest[..at + 2]);
            rest = &rest[at + 2..];
            continue;
        }
        let close = format!("</h{}>", level as char);
        let Some(end) = rest[at..].find(&close) else {
            break;
        };
        let inner = &rest[at + 4..at + end];
        out.push_str(&rest[..at]);
        out.push_str(&format!(
            "<h{} id=\"{}\">{inner}{close}",
            level as char,
            anchor_of(inner)
        ));
        rest = &rest[at + end + close.len()..];
    }
    out.push_str(rest);
    out
}

/// The anchor GitHub derives from a heading's text (tags stripped, entities as characters).
fn anchor_of(inner_html: &str) -> String {
    let mut text = String::new();
    let mut in_tag = false;
    for c in inner_html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    let text = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&");
    jarvis_engine::standalone::md::anchor(&text)
}

/// Text as HTML text or attribute value.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const STYLE: &str = "body{font:15px/1.5 system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;color:#1d2330}\
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #ccd;padding:.2rem .5rem;text-align:left;vertical-align:top}\
code{background:#f1f3f7;padding:0 .2rem;border-radius:3px;word-break:break-all}pre{background:#f1f3f7;padding:.6rem;overflow:auto}\
h1,h2,h3{line-height:1.25}";

/// A self-contained HTML document of a report: no scripts, no external resources, and a
/// Content-Security-Policy that forbids both.
pub fn report_document(title: &str, md: &str) -> String {
    let esc = escape(title);
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{esc}</title><style>{STYLE}</style></head><body>\n{}</body></html>\n",
        markdown_html(md)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_html_and_external_links_are_inert() {
        let h = markdown_html("# A `x` (1.0%)\n\nsee <script>alert(1)</script> [go](https://evil.example) [in](#a) ![i](x.png)\n");
        assert!(h.contains("<h1 id=\"a-x-10\">"), "{h}");
        assert!(
            !h.contains("<script>") && h.contains("&lt;script&gt;"),
            "{h}"
        );
        assert!(
            !h.contains("evil.example") && h.contains("href=\"#a\""),
            "{h}"
        );
        assert!(!h.contains("<img"), "{h}");
        let d = report_document("t<b>", "hi");
        assert!(d.contains("<title>t&lt;b&gt;</title>") && d.contains("default-src 'none'"));
    }
}
