//! Shared pieces of the standalone HTML reports: a page shell with inline
//! CSS/JS and safe embedding of JSON data and text.

use serde::Serialize;

/// Stylesheet shared by every report.
pub const BASE_CSS: &str = include_str!("assets/base.css");

/// JSON for a `<script type="application/json">` element. `</` and `<!--`
/// are escaped so the data can never close the element early.
pub fn embed_json<T: Serialize>(value: &T) -> serde_json::Result<String> {
    let json = serde_json::to_string(value)?;
    Ok(json.replace("</", "<\\/").replace("<!--", "<\\u0021--"))
}

/// Escapes text for HTML element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A complete standalone page: `body` is trusted HTML, `data_json` (from
/// [`embed_json`]) is placed in `<script id="data">`, `script` runs last.
pub fn page(
    title: &str,
    extra_css: &str,
    body: &str,
    data_json: Option<&str>,
    script: &str,
) -> String {
    let mut html =
        String::with_capacity(body.len() + script.len() + data_json.map_or(0, str::len) + 4096);
    html.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    html.push_str(
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>",
    );
    html.push_str(&escape(title));
    html.push_str("</title>\n<style>\n");
    html.push_str(BASE_CSS);
    html.push_str(extra_css);
    html.push_str("</style>\n</head>\n<body>\n");
    html.push_str(body);
    if let Some(json) = data_json {
        html.push_str("\n<script type=\"application/json\" id=\"data\">");
        html.push_str(json);
        html.push_str("</script>");
    }
    if !script.is_empty() {
        html.push_str("\n<script>\n");
        html.push_str(script);
        html.push_str("\n</script>");
    }
    html.push_str("\n</body>\n</html>\n");
    html
}

/// `1234567` → `"1,234,567"`.
pub fn thousands(n: u64) -> String {
    use num_format::{Locale, ToFormattedString};
    n.to_formatted_string(&Locale::en)
}
