//! The layer rule of docs/ARCHITECTURE.md#layers, kept true: a layer uses only the layers
//! above it in the table, never one below.
//!
//! Every `.rs` file under `src/` belongs to the layer of its top module (`src/store/…` to
//! the store, `src/clock.rs` to the foundations); `src/lib.rs` and `src/main.rs` are the
//! crate root and the binary, above everything. A file's code names other modules through
//! `crate::<module>` (or `$crate::`, or `crate::{a::…, b::…}`, or a `super::` chain that
//! climbs to the crate root, or a name the crate root re-exports, such as `crate::Store`);
//! each such reference to a layer later in the table fails the test, naming the file, the
//! line and the rule it breaks. There is no exception list.
//!
//! Comments, doc comments and string literals are not code and are skipped: a doc comment
//! may point a reader at a layer below. Test code is code: a `#[cfg(test)]` module obeys
//! the layer of its file, because a test that needs a lower layer belongs to that layer
//! (or to `tests/`).
//!
//! The table here and the one in the document must name the same layers in the same order
//! (`the_document_draws_the_same_layers`), so neither can change alone.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The layers, first to last, with the top modules each holds: a layer may use its own
/// modules and those of the layers before it.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "Foundations",
        &["clock", "ids", "error", "canonical", "foundation"],
    ),
    ("Domain model", &["model"]),
    ("Coordination rules", &["rules"]),
    ("Store", &["store"]),
    ("Workflows", &["workflow"]),
    ("Checker", &["check"]),
    ("Authority runtime", &["authority"]),
    ("Embedded cluster", &["cluster"]),
    ("Operator vocabulary", &["ops"]),
    ("Conformance suite", &["testing"]),
    ("Surfaces", &["tui", "cli", "bench"]),
    ("Crate root and binary", &["lib", "main"]),
];

/// The index in [`LAYERS`] of the layer holding the top module `module`.
fn layer_of(module: &str) -> Option<usize> {
    LAYERS
        .iter()
        .position(|(_, modules)| modules.contains(&module))
}

/// `source` with every comment, string and character literal blanked (newlines kept), so
/// that what is left is code at the same lines.
fn code_of(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let ident = |c: Option<&char>| c.is_some_and(|c| c.is_alphanumeric() || *c == '_');
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < chars.len() {
        let (c, next) = (chars[i], chars.get(i + 1).copied());
        let start = i;
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == 'r'
            && !ident(
                i.checked_sub(1)
                    .and_then(|p| chars.get(p))
                    .filter(|p| **p != 'b'),
            )
            && matches!(next, Some('"' | '#'))
        {
            // A raw string, r"…" or r#"…"#: it ends at a quote followed by as many #.
            let hashes = chars[i + 1..].iter().take_while(|c| **c == '#').count();
            if chars.get(i + 1 + hashes) == Some(&'"') {
                i += hashes + 2;
                while i < chars.len()
                    && !(chars[i] == '"'
                        && chars[i + 1..]
                            .iter()
                            .take(hashes)
                            .filter(|c| **c == '#')
                            .count()
                            == hashes)
                {
                    i += 1;
                }
                i = (i + 1 + hashes).min(chars.len());
            } else {
                i += 1;
                out.push(c);
                continue;
            }
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i = (i + 1).min(chars.len());
        } else if c == '\'' && next == Some('\\') {
            // An escaped character literal: past the escaped character, to the closing quote.
            i += 3;
            while i < chars.len() && chars[i] != '\'' {
                i += 1;
            }
            i = (i + 1).min(chars.len());
        } else if c == '\'' && chars.get(i + 2) == Some(&'\'') {
            i += 3;
        } else {
            // Code, a lifetime's quote included.
            out.push(c);
            i += 1;
            continue;
        }
        out.extend(chars[start..i].iter().map(|c| blank(*c)));
    }
    out
}

/// One token of code and the line it is on.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Token {
    text: String,
    line: usize,
}

/// Identifiers, `::` and single punctuation, with their lines.
fn tokens(code: &str) -> Vec<Token> {
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            let text = if c.is_alphanumeric() || c == '_' {
                let word: String = chars[i..]
                    .iter()
                    .take_while(|c| c.is_alphanumeric() || **c == '_')
                    .collect();
                i += word.chars().count();
                word
            } else if c == ':' && chars.get(i + 1) == Some(&':') {
                i += 2;
                "::".to_owned()
            } else {
                i += 1;
                if c.is_whitespace() {
                    continue;
                }
                c.to_string()
            };
            out.push(Token { text, line: n + 1 });
        }
    }
    out
}

/// The first name of each item of the brace group opening at `tokens[open]`
/// (`{a::x, b::{y, z}}` → `a`, `b`).
fn group_heads(tokens: &[Token], open: usize) -> Vec<&Token> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut at_item = true;
    for token in &tokens[open..] {
        match token.text.as_str() {
            "{" => {
                depth += 1;
                at_item = depth == 1;
            }
            "}" => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            "," if depth == 1 => at_item = true,
            _ if at_item && depth == 1 => {
                heads.push(token);
                at_item = false;
            }
            _ => {}
        }
    }
    heads
}

/// The crate-root names a file at module depth `depth` uses (`src/store/work.rs` is at
/// depth 2, `src/clock.rs` at 1, `src/lib.rs` at 0): `(line, name)` for every path that
/// starts at the crate root in its code.
fn references(source: &str, depth: usize) -> Vec<(usize, String)> {
    let tokens = tokens(&code_of(source));
    let text = |i: usize| tokens.get(i).map_or("", |t| t.text.as_str());
    let mut found = Vec::new();
    // The brace depth at which each inline `mod name {` opened, innermost last.
    let mut inline: Vec<usize> = Vec::new();
    let mut braces = 0;
    for i in 0..tokens.len() {
        match text(i) {
            "{" => {
                if text(i.wrapping_sub(2)) == "mod" {
                    inline.push(braces);
                }
                braces += 1;
                continue;
            }
            "}" => {
                braces -= 1;
                if inline.last() == Some(&braces) {
                    inline.pop();
                }
                continue;
            }
            _ => {}
        }
        if text(i.wrapping_sub(1)) == "::" {
            continue; // Not the start of a path.
        }
        let after = match text(i) {
            "crate" if text(i + 1) == "::" => i + 2,
            "super" => {
                let mut climbed = 0;
                let mut j = i;
                while text(j) == "super" && text(j + 1) == "::" {
                    climbed += 1;
                    j += 2;
                }
                if climbed != depth + inline.len() {
                    continue;
                }
                j
            }
            _ => continue,
        };
        match text(after) {
            "{" => found.extend(
                group_heads(&tokens, after)
                    .into_iter()
                    .map(|t| (t.line, t.text.clone())),
            ),
            "" => {}
            _ => found.push((tokens[after].line, tokens[after].text.clone())),
        }
    }
    found
}

/// The names the crate root re-exports (`pub use store::Store;` → `Store` → `store`).
fn root_exports(lib: &str) -> BTreeMap<String, String> {
    let tokens = tokens(&code_of(lib));
    let mut out = BTreeMap::new();
    for (i, t) in tokens.iter().enumerate() {
        if t.text != "use" || tokens.get(i + 2).map(|t| t.text.as_str()) != Some("::") {
            continue;
        }
        let module = &tokens[i + 1].text;
        match tokens.get(i + 3) {
            Some(open) if open.text == "{" => {
                for head in group_heads(&tokens, i + 3) {
                    out.insert(head.text.clone(), module.clone());
                }
            }
            Some(name) => {
                out.insert(name.text.clone(), module.clone());
            }
            None => {}
        }
    }
    out
}

/// The macros a file exports (`#[macro_export] macro_rules! name`): they are named at the
/// crate root (`crate::name`) but belong to the top module of the file defining them.
fn exported_macros(relative: &Path, source: &str) -> Vec<(String, String)> {
    let (top, _) = place(relative);
    let mut lines = source.lines().map(str::trim);
    let mut out = Vec::new();
    while let Some(line) = lines.next() {
        if line != "#[macro_export]" {
            continue;
        }
        if let Some(name) = lines
            .next()
            .and_then(|l| l.strip_prefix("macro_rules!"))
            .and_then(|rest| rest.split_whitespace().next())
        {
            out.push((name.trim_end_matches('{').to_owned(), top.clone()));
        }
    }
    out
}

/// A file's top module and its module depth, from its path under `src/`.
fn place(relative: &Path) -> (String, usize) {
    let parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let top = parts[0].trim_end_matches(".rs").to_owned();
    let depth = match parts.last().map(String::as_str) {
        _ if parts.len() == 1 && matches!(top.as_str(), "lib" | "main") => 0,
        Some("mod.rs") => parts.len() - 1,
        _ => parts.len(),
    };
    (top, depth)
}

/// Every broken rule in the file at `relative` (under `src/`) holding `source`, one line
/// each: `src/FILE:LINE: …`.
fn violations(relative: &Path, source: &str, exports: &BTreeMap<String, String>) -> Vec<String> {
    let (top, depth) = place(relative);
    let shown = Path::new("src").join(relative);
    let Some(own) = layer_of(&top) else {
        return vec![format!(
            "{}: the top module `{top}` is in no layer: add it to the table in docs/ARCHITECTURE.md#layers and to LAYERS here",
            shown.display()
        )];
    };
    let mut out = Vec::new();
    for (line, name) in references(source, depth) {
        let module = exports.get(&name).cloned().unwrap_or(name.clone());
        match layer_of(&module) {
            Some(used) if used <= own => {}
            Some(used) => out.push(format!(
                "{}:{line}: `crate::{name}` — {} ({top}) may not use {} ({module}), a layer below it: a layer uses only the layers above it (docs/ARCHITECTURE.md#layers)",
                shown.display(),
                LAYERS[own].0,
                LAYERS[used].0,
            )),
            None => out.push(format!(
                "{}:{line}: `crate::{name}` names no module of any layer",
                shown.display()
            )),
        }
    }
    out
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).expect("readable source tree") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

fn source_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_layer_uses_only_the_layers_above_it() {
    let src = source_dir();
    let files = rust_files(&src);
    assert!(files.len() > 100, "the source tree was found");
    let mut exports = root_exports(&read(&src.join("lib.rs")));
    for path in &files {
        let relative = path.strip_prefix(&src).expect("under src/");
        exports.extend(exported_macros(relative, &read(path)));
    }
    let broken: Vec<String> = files
        .iter()
        .flat_map(|path| {
            let relative = path.strip_prefix(&src).expect("under src/");
            violations(relative, &read(path), &exports)
        })
        .collect();
    assert!(
        broken.is_empty(),
        "{} reference(s) break the layer rule:\n{}",
        broken.len(),
        broken.join("\n")
    );
}

/// The `src/` names in the "Where" column of each row of the document's layer table.
fn documented_layers(document: &str) -> Vec<Vec<String>> {
    let section = document
        .split("\n## ")
        .find(|s| s.starts_with("Layers\n"))
        .expect("docs/ARCHITECTURE.md has a Layers section");
    section
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| Layer |") && !l.starts_with("| ---"))
        .filter_map(|row| row.split('|').nth(2))
        .map(|place| {
            place
                .split("`src/")
                .skip(1)
                .map(|p| {
                    p.chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect()
                })
                .collect()
        })
        .collect()
}

#[test]
fn the_document_draws_the_same_layers() {
    let document = read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/ARCHITECTURE.md"));
    let drawn = documented_layers(&document);
    let here: Vec<Vec<String>> = LAYERS
        .iter()
        .filter(|(name, _)| *name != "Crate root and binary")
        .map(|(_, modules)| modules.iter().map(|m| (*m).to_owned()).collect())
        .collect();
    assert_eq!(drawn, here, "docs/ARCHITECTURE.md#layers and LAYERS differ");
}

#[test]
fn the_parser_finds_a_path_below_and_skips_what_is_not_code() {
    let source = r##"//! Links to [`crate::cli`] are documentation.
/// So is crate::ops in a doc comment.
use crate::ops::x; // crate::tui
const S: &str = "crate::bench";
const R: &str = r#"crate::bench " crate::tui"#;
/* crate::cluster /* nested crate::cli */ still a comment crate::ops */
use crate::{model::a, store::{b, c}};
fn f<'a>(c: char, s: &'a str) -> bool { c == '"' && s.is_empty() && c != '\'' && c != '{' }
use super::super::check::y;
mod tests {
    use super::super::super::authority::z;
    use super::super::helper;
}
fn g() -> crate::Store { todo!() }
"##;
    let found = references(source, 2);
    let names: Vec<(usize, &str)> = found.iter().map(|(l, n)| (*l, n.as_str())).collect();
    assert_eq!(
        names,
        [
            (3, "ops"),
            (7, "model"),
            (7, "store"),
            (9, "check"),
            (11, "authority"),
            (14, "Store")
        ]
    );

    let exports = root_exports("pub use error::{Error, Result};\npub use store::Store;\n");
    assert_eq!(exports.get("Store").map(String::as_str), Some("store"));
    let broken = violations(Path::new("rules/example.rs"), source, &exports);
    let lines: Vec<&str> = broken
        .iter()
        .map(|b| b.split(": ").next().unwrap_or_default())
        .collect();
    assert_eq!(
        lines,
        [
            "src/rules/example.rs:3",
            "src/rules/example.rs:7",
            "src/rules/example.rs:9",
            "src/rules/example.rs:11",
            "src/rules/example.rs:14"
        ],
        "{broken:#?}"
    );
    assert!(broken[0].contains("Coordination rules (rules) may not use Operator vocabulary (ops)"));
    assert!(
        violations(
            Path::new("ops/example.rs"),
            "use crate::store::Store;\n",
            &exports
        )
        .is_empty()
    );
    assert_eq!(
        violations(Path::new("stray.rs"), "", &exports).len(),
        1,
        "a file of no layer is named"
    );
}
