//! Shared pieces of the standalone HTML reports: the base stylesheet (the
//! page shell is `templates/base.html`), safe embedding of JSON data, text
//! escaping and number grouping.

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

/// `1234567` → `"1,234,567"`.
pub fn thousands(n: u64) -> String {
    use num_format::{Locale, ToFormattedString};
    n.to_formatted_string(&Locale::en)
}
