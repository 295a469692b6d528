//! The reports' HTML templates (`templates/*.html`, `minijinja`, HTML
//! auto-escaping): `base.html` is the standalone page shell (inline CSS, the
//! embedded JSON data, the page script), which `profile.html`,
//! `memory.html`, `rejection.html` and `index.html` (the run's artifact
//! index) extend.

use minijinja::{AutoEscape, Environment, Value};

const TEMPLATES: [(&str, &str); 5] = [
    ("base.html", include_str!("templates/base.html")),
    ("profile.html", include_str!("templates/profile.html")),
    ("memory.html", include_str!("templates/memory.html")),
    ("rejection.html", include_str!("templates/rejection.html")),
    ("index.html", include_str!("templates/index.html")),
];

/// An environment holding every report template.
fn environment() -> Result<Environment<'static>, minijinja::Error> {
    let mut env = Environment::new();
    env.set_auto_escape_callback(|_| AutoEscape::Html);
    env.set_keep_trailing_newline(true);
    for (name, source) in TEMPLATES {
        env.add_template(name, source)?;
    }
    Ok(env)
}

/// Renders template `name` with `context` (escaped unless marked `|safe`
/// in the template).
pub fn render(name: &str, context: Value) -> Result<String, minijinja::Error> {
    environment()?.get_template(name)?.render(context)
}

/// Renders a page that extends `base.html`: `title` (escaped), the shared
/// stylesheet plus `css`, `data_json` (from [`super::html::embed_json`],
/// already safe inside `<script type="application/json">`) and `script`
/// (trusted, inlined last) are the shell's; `body` the page's own values.
pub fn render_page(
    name: &str,
    title: &str,
    css: &str,
    data_json: Option<&str>,
    script: &str,
    body: Value,
) -> Result<String, minijinja::Error> {
    let shell = minijinja::context! {
        title,
        base_css => super::html::BASE_CSS,
        css,
        data_json,
        script,
    };
    render(name, minijinja::context! { ..body, ..shell })
}
