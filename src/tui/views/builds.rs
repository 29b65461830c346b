//! Builds: the compatibility matrix ([`crate::ops::builds`], the same `inspect builds`
//! prints) — each kind of unfinished work under one key, and which running builds can run
//! it; stranded work in red; the title says what stopping each build would strand.

use super::super::theme::Role;
use super::{Cell, Column, Row, TableData, col};
use crate::ops::builds::Matrix;

pub const COLUMNS: &[Column] = &[
    col("kind", 9, 1),
    col("handler", 18, 0),
    col("key", 9, 2),
    col("unfinished", 10, 0),
    col("run by", 40, 0),
];

#[must_use]
pub fn table(matrix: &Matrix) -> TableData {
    let rows: Vec<Row> = matrix
        .cells
        .iter()
        .map(|c| {
            let stranded = c.runnable_by.is_empty();
            let run_by = if stranded {
                "nobody: stranded".to_owned()
            } else {
                c.runnable_by.join(" | ")
            };
            let handler = c.handler.clone().unwrap_or_else(|| "?".into());
            let key: String = c.compat.chars().take(8).collect();
            Row {
                key: format!("{}|{}", c.kind.as_str(), c.compat),
                cells: vec![
                    Cell::raw(c.kind.as_str(), 16),
                    Cell::raw(&handler, 80),
                    Cell::raw(&key, 8).role(Role::Muted),
                    Cell::raw(&c.unfinished.to_string(), 20),
                    Cell::raw(&run_by, 300).role_if(stranded, Role::Error),
                ],
                detail: vec![
                    ("kind".into(), c.kind.as_str().to_owned()),
                    ("handler".into(), handler),
                    ("key".into(), c.compat.clone()),
                    ("unfinished".into(), c.unfinished.to_string()),
                    ("run by".into(), run_by),
                ],
                ..Row::default()
            }
        })
        .collect();
    let stopping: Vec<String> = matrix
        .builds
        .iter()
        .map(|b| {
            let tag = b.label.split(" · ").next().unwrap_or(&b.label);
            format!(
                "stop {tag} ({}): strands {}",
                b.authorities.len(),
                matrix.strands_if_stopped(&b.label)
            )
        })
        .collect();
    let summary = format!(
        "{} build(s) running · stranded {}{}",
        matrix.builds.len(),
        matrix.stranded(),
        if stopping.is_empty() {
            String::new()
        } else {
            format!(" · {}", stopping.join(" · "))
        }
    );
    TableData::new(COLUMNS, rows, summary)
}
