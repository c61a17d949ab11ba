//! The counts README.md and docs/ give of the model, held to the code: the seeded bugs (how
//! many, and the table of them), the cells of the contract's two tables, and the `sometimes`
//! examples. A count copied into a page and left behind when the code moved fails here.

use std::path::{Path, PathBuf};

use retryq_model::Bug;
use retryq_model::checker::Kind;
use retryq_model::contract;
use retryq_model::properties;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// README.md and every page of docs/, each with its name.
fn pages() -> Vec<(String, String)> {
    let mut pages = vec![("README.md".to_owned(), read(&root().join("README.md")))];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    for path in docs {
        let name = format!("docs/{}", path.file_name().and_then(|n| n.to_str()).unwrap_or_default());
        pages.push((name, read(&path)));
    }
    pages
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Each number written right before `label` (`62 seeded bugs`, `188 + 175 cells`: the last
/// number), with the line it is on; but a table's first cell (`| 2 seeded bugs |`, a layer's
/// number) unless `in_tables`.
fn numbers_before<'a>(text: &'a str, label: &str, in_tables: bool) -> Vec<(u64, &'a str)> {
    let mut found = Vec::new();
    for line in text.lines() {
        for (at, _) in line.match_indices(label) {
            let head = line[..at].trim_end();
            let digits: String = head.chars().rev().take_while(char::is_ascii_digit).collect();
            let before = head[..head.len() - digits.len()].trim_end();
            if !in_tables && before.ends_with('|') {
                continue;
            }
            if let Ok(n) = digits.chars().rev().collect::<String>().parse() {
                found.push((n, line));
            }
        }
    }
    found
}

/// Each number written right after `label` (`seeded bug (62`, `runs all 62`).
fn numbers_after<'a>(text: &'a str, label: &str) -> Vec<(u64, &'a str)> {
    let mut found = Vec::new();
    for line in text.lines() {
        for (at, _) in line.match_indices(label) {
            let digits: String = line[at + label.len()..].chars().take_while(char::is_ascii_digit).collect();
            if let Ok(n) = digits.parse() {
                found.push((n, line));
            }
        }
    }
    found
}

#[test]
fn every_count_of_seeded_bugs_is_the_codes() {
    let bugs = Bug::ALL.len() as u64;
    let mut seen = 0;
    for (page, text) in pages() {
        let counts = [
            numbers_before(&text, " seeded bugs", false),
            numbers_after(&text, "seeded bug ("),
            numbers_after(&text, "a CLI test runs all "),
        ];
        for (n, line) in counts.into_iter().flatten() {
            assert_eq!(n, bugs, "{page}: the code has {bugs} seeded bugs, the page says {n}: {line}");
            seen += 1;
        }
    }
    assert!(seen >= 4, "the pages stopped counting the seeded bugs ({seen} counts found): update this test");
}

#[test]
fn the_table_of_seeded_bugs_lists_each_bug_as_the_code_describes_it() {
    let text = read(&root().join("docs/model.md"));
    let rows: Vec<Vec<&str>> = text
        .lines()
        .filter(|line| line.starts_with("| `") && line.matches(" | ").count() == 2)
        .map(|line| line.trim_matches('|').split(" | ").map(str::trim).collect())
        .filter(|cells: &Vec<&str>| cells[0].trim_matches('`').contains('-'))
        .collect();
    let named: Vec<&str> = rows.iter().map(|cells| cells[0].trim_matches('`')).collect();
    let code: Vec<&str> = Bug::ALL.iter().map(|bug| bug.name()).collect();
    assert_eq!(named, code, "docs/model.md's table of seeded bugs, in --list-bugs order");
    for (cells, bug) in rows.iter().zip(Bug::ALL) {
        assert_eq!(cells[1], bug.describe(), "{bug}: the table's description");
        // A property named by a SPEC section: the table gives that section.
        let section = bug.caught_by().split(' ').next().unwrap_or_default();
        if section.starts_with(|c: char| c.is_ascii_digit()) {
            assert!(
                cells[2].starts_with(&format!("{section} (")),
                "{bug}: caught by {section}, the table says {}",
                cells[2]
            );
        }
    }
}

#[test]
fn every_count_of_cells_and_examples_is_the_codes() {
    let (table, args) = (contract::cells().len() as u64, contract::arg_cells().len() as u64);
    let examples = properties::all().iter().filter(|p| p.kind == Kind::Sometimes).count() as u64;
    let (mut seen, mut examples_seen) = (0, 0);
    for (page, text) in pages() {
        for (n, line) in numbers_before(&text, " cells", true) {
            assert!(
                n == table || n == args,
                "{page}: {n} cells, but the tables have {table} and {args}: {line}"
            );
            seen += 1;
        }
        // "188 + 175 cells": the contract's table, then the argument table.
        for (n, line) in numbers_before(&text, &format!(" + {args} cells"), true) {
            assert_eq!(n, table, "{page}: {line}");
        }
        for (n, line) in numbers_before(&text, " examples | sometimes", true) {
            assert_eq!(n, examples, "{page}: the code has {examples} `sometimes` examples: {line}");
            examples_seen += 1;
        }
    }
    assert!(
        seen >= 3 && examples_seen >= 1,
        "the pages stopped counting cells or examples: update this test"
    );
}
