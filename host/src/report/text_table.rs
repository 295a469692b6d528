//! Aligned plain-text tables for CLI output, laid out by `comfy-table`
//! (no borders, two spaces between columns, no trailing spaces).

use comfy_table::{presets::NOTHING, CellAlignment, ColumnConstraint, ContentArrangement, Table};

/// Column alignment.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// A table whose columns are padded to their widest cell.
pub struct TextTable {
    table: Table,
    rows: usize,
}

impl TextTable {
    pub fn new(columns: &[(&str, Align)]) -> Self {
        let mut table = Table::new();
        table
            .load_style(NOTHING)
            .set_content_arrangement(ContentArrangement::Disabled)
            .set_header(columns.iter().map(|(h, _)| *h));
        for (i, (_, align)) in columns.iter().enumerate() {
            if let Some(c) = table.column_mut(i) {
                c.set_cell_alignment(match align {
                    Align::Left => CellAlignment::Left,
                    Align::Right => CellAlignment::Right,
                });
                // One space either side of every cell but the outer ones
                // gives the two-space gutter.
                c.set_padding((u16::from(i > 0), 1));
                c.set_constraint(ColumnConstraint::ContentWidth);
            }
        }
        TextTable { table, rows: 0 }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.table.add_row(cells);
        self.rows += 1;
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Renders with `indent` spaces before every line; no trailing spaces.
    pub fn render(&self, indent: usize) -> String {
        let pad = " ".repeat(indent);
        self.table
            .lines()
            .map(|l| format!("{pad}{}\n", l.trim_end()))
            .collect()
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
