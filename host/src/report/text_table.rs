//! Aligned plain-text tables for CLI output.

/// Column alignment.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// A table whose columns are padded to their widest cell.
pub struct TextTable {
    header: Vec<String>,
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl TextTable {
    pub fn new(columns: &[(&str, Align)]) -> Self {
        TextTable {
            header: columns.iter().map(|(h, _)| h.to_string()).collect(),
            align: columns.iter().map(|(_, a)| *a).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Renders with `indent` spaces before every line; no trailing spaces.
    pub fn render(&self, indent: usize) -> String {
        let n = self.header.len();
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate().take(n) {
                widths[i] = widths[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        for r in std::iter::once(&self.header).chain(&self.rows) {
            let mut line = " ".repeat(indent);
            for (i, c) in r.iter().enumerate().take(n) {
                let pad = widths[i] - c.chars().count();
                if i > 0 {
                    line.push_str("  ");
                }
                match self.align[i] {
                    Align::Left => {
                        line.push_str(c);
                        line.push_str(&" ".repeat(pad));
                    }
                    Align::Right => {
                        line.push_str(&" ".repeat(pad));
                        line.push_str(c);
                    }
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// `1234567` → `"1,234,567"`.
pub fn grouped(n: u64) -> String {
    super::html::thousands(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_to_the_widest_cell() {
        let mut t = TextTable::new(&[("name", Align::Left), ("bytes", Align::Right)]);
        t.row(vec!["a".into(), "1,024".into()]);
        t.row(vec!["longer".into(), "8".into()]);
        assert_eq!(
            t.render(2),
            "  name    bytes\n  a       1,024\n  longer      8\n"
        );
    }
}
