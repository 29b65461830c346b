//! What differs between SQLite's and PostgreSQL's SQL for the statements the providers
//! share: parameter marks, upserts, boolean tests, index hints and where a new row's id comes
//! from. Everything else is written once, in SQL both accept.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, PoisonError};

use super::encode::Table;

/// Statement texts built once per process, by (dialect mark, form, table or statement):
/// see [`Dialect::memo`].
type Texts = HashMap<(char, &'static str, &'static str), &'static str>;
static TEXTS: LazyLock<Mutex<Texts>> = LazyLock::new(Mutex::default);

/// One provider's SQL spelling.
pub(crate) struct Dialect {
    /// The character before a parameter's number (`?1`, `$1`).
    mark: char,
    /// SQLite replaces a conflicting row (`INSERT OR REPLACE`); PostgreSQL updates it in
    /// place (`ON CONFLICT … DO UPDATE`).
    replaces: bool,
    /// SQLite takes `INDEXED BY` hints, so a list is an index seek whatever the planner's
    /// statistics say; PostgreSQL has no hints.
    index_hints: bool,
    /// SQLite stores booleans as 0 / 1 (and its partial indexes say `= 0`).
    int_booleans: bool,
    /// SQLite keeps no index on the history's `revision` (two index entries fewer for
    /// every grant and write record): a range of revisions is found by position, since a
    /// record's `seq` rises with its revision (see `Statements::position_after`).
    /// PostgreSQL's `seq` comes from a sequence, so it reads ranges by its revision index.
    history_by_position: bool,
}

pub(crate) const SQLITE: Dialect = Dialect {
    mark: '?',
    replaces: true,
    index_hints: true,
    int_booleans: true,
    history_by_position: true,
};

pub(crate) const POSTGRES: Dialect = Dialect {
    mark: '$',
    replaces: false,
    index_hints: false,
    int_booleans: false,
    history_by_position: false,
};

impl Dialect {
    /// The text `build` makes for `form` of `name` in this dialect, built the first time it
    /// is asked for and kept for the process's life. A write names the same few statements
    /// for every row it writes, and formatting their text anew each time cost more than
    /// binding the row's values. The set is bounded (a few forms of each table and shared
    /// statement, per dialect), so keeping them is not a leak that grows. A table's forms
    /// are keyed by its name: one [`Table`] describes each table.
    pub(crate) fn memo(
        &self,
        form: &'static str,
        name: &'static str,
        build: impl FnOnce() -> String,
    ) -> &'static str {
        let key = (self.mark, form, name);
        if let Some(text) = lock(&TEXTS).get(&key) {
            return text;
        }
        // Built outside the lock: a form may be built from another (an upsert from the
        // insert).
        let built = build();
        lock(&TEXTS)
            .entry(key)
            .or_insert_with(|| Box::leak(built.into_boxed_str()))
    }

    /// `sql`, a shared statement written with SQLite's `?N` marks, in this dialect, as a text
    /// kept for the process's life (see [`Self::memo`]).
    pub(crate) fn text(&self, sql: &'static str) -> &'static str {
        if self.mark == SQLITE.mark {
            return sql;
        }
        self.memo("marks", sql, || self.marks(sql))
    }

    /// The row of `table` whose single-column key is the statement's only parameter.
    pub(crate) fn by_key(&self, table: &Table) -> &'static str {
        self.memo("by_key", table.name, || {
            format!(
                "SELECT * FROM {} WHERE {} = {}",
                table.name,
                table.key[0],
                self.param(1)
            )
        })
    }

    /// The mark of the `n`th parameter (from 1).
    pub(crate) fn param(&self, n: usize) -> String {
        format!("{}{n}", self.mark)
    }

    /// `sql`, written with SQLite's `?N` marks, in this dialect (the shared statements are
    /// written once, that way).
    pub(crate) fn marks(&self, sql: &str) -> String {
        let mut out = String::with_capacity(sql.len());
        let mut chars = sql.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '?' && chars.peek().is_some_and(char::is_ascii_digit) {
                let mut n = String::new();
                while let Some(digit) = chars.next_if(char::is_ascii_digit) {
                    n.push(digit);
                }
                out.push(self.mark);
                out.push_str(&n);
            } else {
                out.push(c);
            }
        }
        out
    }

    /// `?1, ?2, …` for `n` parameters.
    fn params(&self, n: usize) -> String {
        (1..=n)
            .map(|i| self.param(i))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// `table` with the hint to read it through `index`, where the dialect has hints.
    pub(crate) fn from(&self, table: &str, index: &str) -> String {
        if self.index_hints {
            format!("{table} INDEXED BY {index}")
        } else {
            table.to_owned()
        }
    }

    /// Whether history ranges are read by position rather than by a revision index (see
    /// the field's doc).
    pub(crate) fn history_by_position(&self) -> bool {
        self.history_by_position
    }

    /// A boolean column is true.
    pub(crate) fn is_true(&self, col: &str) -> String {
        if self.int_booleans {
            format!("{col} = 1")
        } else {
            col.to_owned()
        }
    }

    /// A boolean column is false.
    pub(crate) fn is_false(&self, col: &str) -> String {
        if self.int_booleans {
            format!("{col} = 0")
        } else {
            format!("NOT {col}")
        }
    }

    /// Inserts one row of `table`, parameters in its column order.
    pub(crate) fn insert(&self, table: &Table) -> &'static str {
        self.memo("insert", table.name, || {
            let names: Vec<_> = table.names().collect();
            format!(
                "INSERT INTO {} ({}) VALUES ({})",
                table.name,
                names.join(", "),
                self.params(names.len())
            )
        })
    }

    /// Inserts one row of `table`, or replaces the row with its key.
    pub(crate) fn upsert(&self, table: &Table) -> &'static str {
        self.memo("upsert", table.name, || {
            if self.replaces {
                format!("INSERT OR REPLACE{}", &self.insert(table)["INSERT".len()..])
            } else {
                format!("{} {}", self.insert(table), on_conflict_update(table))
            }
        })
    }

    /// Updates the row of `table` whose key is the first parameter, parameters in the
    /// table's column order (the key column first).
    pub(crate) fn update_by_key(&self, table: &Table) -> &'static str {
        self.memo("update_by_key", table.name, || {
            let set: Vec<String> = table
                .names()
                .enumerate()
                .skip(1)
                .map(|(i, c)| format!("{c} = {}", self.param(i + 1)))
                .collect();
            format!(
                "UPDATE {} SET {} WHERE {} = {}",
                table.name,
                set.join(", "),
                table.key[0],
                self.param(1)
            )
        })
    }

    /// Inserts one row of `table` whose first column is its integer id, taking the next id
    /// when the parameter is NULL (SQLite's rowid does; PostgreSQL takes max + 1, which is
    /// safe because writers are serialised).
    pub(crate) fn insert_with_id(&self, table: &Table) -> &'static str {
        let sql = self.insert(table);
        if self.replaces {
            return sql;
        }
        self.memo("insert_with_id", table.name, || {
            let first = self.param(1);
            let next = format!(
                "coalesce({first}, (SELECT coalesce(max(id), 0) + 1 FROM {}))",
                table.name
            );
            sql.replacen(&format!("VALUES ({first},"), &format!("VALUES ({next},"), 1)
        })
    }
}

fn lock(texts: &Mutex<Texts>) -> std::sync::MutexGuard<'_, Texts> {
    // The map only ever gains complete entries: a panic elsewhere cannot leave it torn.
    texts.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `ON CONFLICT (key) DO UPDATE SET c = EXCLUDED.c, …` over every non-key column (both
/// dialects accept it).
pub(crate) fn on_conflict_update(table: &Table) -> String {
    let set: Vec<String> = table
        .non_key()
        .map(|c| format!("{c} = EXCLUDED.{c}"))
        .collect();
    format!(
        "ON CONFLICT ({}) DO UPDATE SET {}",
        table.key.join(", "),
        set.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sql::encode::{AUDIT, IDEMPOTENCY};

    #[test]
    fn an_upsert_replaces_on_sqlite_and_updates_in_place_on_postgres() {
        assert_eq!(
            SQLITE.upsert(&IDEMPOTENCY),
            "INSERT OR REPLACE INTO idempotency (key, answer, at) VALUES (?1, ?2, ?3)"
        );
        assert_eq!(
            POSTGRES.upsert(&IDEMPOTENCY),
            "INSERT INTO idempotency (key, answer, at) VALUES ($1, $2, $3) \
             ON CONFLICT (key) DO UPDATE SET answer = EXCLUDED.answer, at = EXCLUDED.at"
        );
    }

    #[test]
    fn numbered_marks_follow_the_dialect() {
        let sql = "SELECT * FROM t WHERE a = ?1 AND b > ?12 AND c = '?'";
        assert_eq!(SQLITE.marks(sql), sql);
        assert_eq!(
            POSTGRES.marks(sql),
            "SELECT * FROM t WHERE a = $1 AND b > $12 AND c = '?'"
        );
    }

    #[test]
    fn an_update_by_key_sets_every_other_column() {
        assert_eq!(
            POSTGRES.update_by_key(&IDEMPOTENCY),
            "UPDATE idempotency SET answer = $2, at = $3 WHERE key = $1"
        );
    }

    #[test]
    fn booleans_read_as_each_database_indexes_them() {
        assert_eq!(SQLITE.is_false("accepted"), "accepted = 0");
        assert_eq!(POSTGRES.is_false("accepted"), "NOT accepted");
        assert_eq!(
            SQLITE.from("work", "work_claim"),
            "work INDEXED BY work_claim"
        );
        assert_eq!(POSTGRES.from("work", "work_claim"), "work");
    }

    #[test]
    fn a_missing_id_is_the_next_one() {
        assert_eq!(
            SQLITE.insert_with_id(&AUDIT),
            "INSERT INTO audit (id, at, actor, action, target, outcome) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
        );
        assert_eq!(
            POSTGRES.insert_with_id(&AUDIT),
            "INSERT INTO audit (id, at, actor, action, target, outcome) VALUES \
             (coalesce($1, (SELECT coalesce(max(id), 0) + 1 FROM audit)), $2, $3, $4, $5, $6)"
        );
    }
}
