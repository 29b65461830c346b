//! A statement assembled at run time from constants: conditions and their bound values,
//! with the dialect's parameter marks. The only SQL assembled at run time is the choice of
//! table, index, filter columns and value lists for the paged lists.

use super::dialect::Dialect;
use super::value::SqlValue;

/// Conditions joined by `AND`, and the values they bind, in order.
pub(crate) struct Query {
    dialect: &'static Dialect,
    conds: Vec<String>,
    values: Vec<SqlValue>,
}

impl Query {
    pub(crate) fn new(dialect: &'static Dialect) -> Self {
        Self {
            dialect,
            conds: Vec::new(),
            values: Vec::new(),
        }
    }

    /// Binds a value and returns its mark.
    pub(crate) fn bind(&mut self, value: impl Into<SqlValue>) -> String {
        self.values.push(value.into());
        self.dialect.param(self.values.len())
    }

    /// Adds the condition `{lhs} {mark}`, e.g. `cond("status =", …)`.
    pub(crate) fn cond(&mut self, lhs: &str, value: impl Into<SqlValue>) {
        let mark = self.bind(value);
        self.conds.push(format!("{lhs} {mark}"));
    }

    /// Adds `{col} IN (…)` over `values`.
    pub(crate) fn cond_in(&mut self, col: &str, values: &[&str]) {
        let marks: Vec<String> = values.iter().map(|v| self.bind(*v)).collect();
        self.conds.push(format!("{col} IN ({})", marks.join(", ")));
    }

    /// Adds a condition that binds nothing (a literal the planner must see, such as a
    /// partial index's own condition).
    pub(crate) fn literal(&mut self, cond: &str) {
        self.conds.push(cond.to_owned());
    }

    /// ` WHERE a AND b`, or nothing.
    pub(crate) fn filter(&self) -> String {
        if self.conds.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", self.conds.join(" AND "))
        }
    }

    pub(crate) fn values(&self) -> &[SqlValue] {
        &self.values
    }
}
