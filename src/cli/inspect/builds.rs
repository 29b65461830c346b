//! `inspect builds`: the compatibility matrix ([`crate::ops::builds`]) — one row per kind of
//! unfinished work under one key, with the builds that can run it; then, for people, what
//! stopping each build would strand.

use std::io::Write;

use serde::Serialize;

use super::render::ViewRow;
use super::{Ctx, Failure};
use crate::cli::output::short;
use crate::clock::Millis;
use crate::foundation::text_cell::{cell, cell_max};
use crate::ops::builds::Cell;
use crate::ops::live::LiveBuilds;

/// One cell of the matrix as the view prints it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BuildsRow {
    #[serde(flatten)]
    cell: Cell,
}

impl ViewRow for BuildsRow {
    const COLUMNS: &'static [&'static str] = &["KIND", "HANDLER", "KEY", "UNFINISHED", "RUN BY"];

    fn cells(&self, _now: Millis) -> Vec<String> {
        let c = &self.cell;
        let run_by = if c.runnable_by.is_empty() {
            "nobody: stranded".to_owned()
        } else {
            c.runnable_by
                .iter()
                .map(|b| cell_max(b, 60))
                .collect::<Vec<_>>()
                .join(" | ")
        };
        vec![
            c.kind.as_str().to_owned(),
            c.handler.as_deref().map_or_else(|| "?".into(), cell),
            short(&c.compat),
            c.unfinished.to_string(),
            run_by,
        ]
    }
}

pub(super) fn print(ctx: &Ctx<'_>, out: &mut dyn Write) -> Result<Option<String>, Failure> {
    let matrix = LiveBuilds::load(ctx.store, ctx.now)?.matrix(ctx.store)?;
    let rows: Vec<BuildsRow> = matrix
        .cells
        .iter()
        .cloned()
        .map(|cell| BuildsRow { cell })
        .collect();
    let next = ctx.emit(out, &rows, None)?;
    if !ctx.json {
        writeln!(
            out,
            "stranded (no running build runs it): {}",
            matrix.stranded()
        )?;
        for build in &matrix.builds {
            writeln!(
                out,
                "stopping {} ({}) strands {}",
                cell_max(&build.label, 80),
                build
                    .authorities
                    .iter()
                    .map(|a| cell_max(a, 32))
                    .collect::<Vec<_>>()
                    .join(", "),
                matrix.strands_if_stopped(&build.label)
            )?;
        }
    }
    Ok(next)
}
