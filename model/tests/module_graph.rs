//! The modules of `model/src` form a DAG: no import cycle, so each layer uses only the ones
//! below it (the oracle never depends on the checker that hunts its bugs). The same holds for
//! every workspace crate's `src/`: a cycle in any of them fails the test.
//!
//! The graph is read from the source text, not from the compiler: every `use` (including `{…}`
//! groups) and every path in code that starts with `crate::`, `self::`, `super::` or a child
//! module's name is an edge from the file's module to the longest module prefix of that path.
//! A name the crate root re-exports (`pub use x::Name` in `lib.rs`) resolves to the module that
//! defines it; the root's own re-exports and `mod` declarations are not edges. Comments
//! (intra-doc links included) and literals are ignored. Inline modules (`mod tests { … }`)
//! count as their file's module, so `use super::*` in a test module is no edge.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// A module, by its path from the crate root (the root is empty).
type Module = Vec<String>;

/// Where an edge was seen: the file and line.
#[derive(Clone, Debug)]
struct Seen {
    file: String,
    line: usize,
}

/// The module graph of one crate: for each module, the modules it uses, with one place each
/// edge was seen.
#[derive(Debug, Default)]
struct Graph {
    modules: BTreeSet<Module>,
    edges: BTreeMap<Module, BTreeMap<Module, Seen>>,
}

fn name(module: &Module) -> String {
    if module.is_empty() { "crate".into() } else { module.join("::") }
}

/// The module a file under `src/` is: `lib.rs`/`main.rs` the root, `a.rs` and `a/mod.rs` `a`,
/// `a/b.rs` `a::b`. `None` for files that are crate roots of their own (`src/bin/`).
fn module_of(relative: &Path) -> Option<Module> {
    let mut parts: Vec<String> = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if parts.first().is_some_and(|p| p == "bin") {
        return None;
    }
    let file = parts.pop()?;
    let stem = file.strip_suffix(".rs")?;
    match stem {
        "lib" | "main" if parts.is_empty() => {}
        "mod" => {}
        _ => parts.push(stem.to_string()),
    }
    Some(parts)
}

/// The text with comments and the contents of string and character literals blanked out,
/// newlines kept (so line numbers stay right).
fn strip(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if (c == 'r' || (c == 'b' && next == Some('r'))) && !(i > 0 && ident(chars[i - 1])) && {
            let start = if c == 'b' { i + 2 } else { i + 1 };
            let hashes = chars[start..].iter().take_while(|&&h| h == '#').count();
            chars.get(start + hashes) == Some(&'"')
        } {
            // A raw string: r"…", r#"…"#, br"…".
            let start = if c == 'b' { i + 2 } else { i + 1 };
            let hashes = chars[start..].iter().take_while(|&&h| h == '#').count();
            let close: String = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
            let body = start + hashes + 1;
            let end = chars[body..]
                .windows(close.len())
                .position(|w| w.iter().copied().eq(close.chars()))
                .map_or(chars.len(), |p| body + p + close.len());
            for &ch in &chars[i..end] {
                out.push(blank(ch));
            }
            i = end;
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if let Some(&ch) = chars.get(i) {
                    out.push(blank(ch));
                }
                i += 1;
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{…}') or a lifetime ('a), which stays.
            let end = if next == Some('\\') {
                chars[i + 2..].iter().position(|&ch| ch == '\'').map(|p| i + 2 + p + 1)
            } else if chars.get(i + 2) == Some(&'\'') {
                Some(i + 3)
            } else {
                None
            };
            match end {
                Some(end) => {
                    for _ in i..end.min(chars.len()) {
                        out.push(' ');
                    }
                    i = end;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Ident(String),
    PathSep,
    Punct(char),
}

fn tokens(text: &str) -> Vec<(Token, usize)> {
    let mut out = Vec::new();
    let mut line = 1;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\n' {
            line += 1;
        } else if c.is_alphabetic() || c == '_' {
            let mut word = String::from(c);
            while let Some(&n) = chars.peek().filter(|n| n.is_alphanumeric() || **n == '_') {
                word.push(n);
                chars.next();
            }
            out.push((Token::Ident(word), line));
        } else if c == ':' && chars.peek() == Some(&':') {
            chars.next();
            out.push((Token::PathSep, line));
        } else if !c.is_whitespace() {
            out.push((Token::Punct(c), line));
        }
    }
    out
}

/// Expands the use tree starting at `tokens[*at]` under `prefix` into full paths; leaves `*at`
/// after the tree.
fn use_tree(tokens: &[(Token, usize)], at: &mut usize, prefix: Vec<String>, paths: &mut Vec<Vec<String>>) {
    let mut path = prefix;
    loop {
        match tokens.get(*at).map(|t| &t.0) {
            Some(Token::Ident(word)) if word == "as" => {
                *at += 2;
                break;
            }
            Some(Token::Ident(word)) => {
                path.push(word.clone());
                *at += 1;
            }
            Some(Token::PathSep) => *at += 1,
            Some(Token::Punct('{')) => {
                *at += 1;
                loop {
                    match tokens.get(*at).map(|t| &t.0) {
                        Some(Token::Punct('}')) => {
                            *at += 1;
                            return;
                        }
                        Some(Token::Punct(',')) => *at += 1,
                        None => return,
                        _ => use_tree(tokens, at, path.clone(), paths),
                    }
                }
            }
            Some(Token::Punct('*')) => {
                *at += 1;
                break;
            }
            _ => break,
        }
    }
    paths.push(path);
}

/// What one file says: its module, the child modules it declares, the paths it uses (with
/// their line and the module they are used from), and (for a crate root) what it re-exports.
struct FileUses {
    module: Module,
    file: String,
    children: BTreeSet<String>,
    /// (module the path is written in, path, line, whether the root re-exports it).
    paths: Vec<(Module, Vec<String>, usize, bool)>,
}

fn read_file(module: Module, file: String, text: &str) -> FileUses {
    let toks = tokens(&strip(text));
    let mut uses = FileUses { module: module.clone(), file, children: BTreeSet::new(), paths: Vec::new() };
    // Inline modules: (name, brace depth inside it).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let here = |inline: &[(String, usize)]| {
        let mut m = module.clone();
        m.extend(inline.iter().map(|(n, _)| n.clone()));
        m
    };
    let mut i = 0;
    while i < toks.len() {
        let (tok, line) = (&toks[i].0, toks[i].1);
        let word = |k: usize| match toks.get(k).map(|t| &t.0) {
            Some(Token::Ident(w)) => Some(w.as_str()),
            _ => None,
        };
        match tok {
            Token::Punct('{') => depth += 1,
            Token::Punct('}') => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth -= 1;
            }
            Token::Ident(w) if w == "mod" => {
                if let Some(child) = word(i + 1) {
                    match toks.get(i + 2).map(|t| &t.0) {
                        Some(Token::Punct(';')) if inline.is_empty() => {
                            uses.children.insert(child.to_string());
                        }
                        Some(Token::Punct('{')) => {
                            inline.push((child.to_string(), depth + 1));
                        }
                        _ => {}
                    }
                }
            }
            Token::Ident(w) if w == "use" => {
                // `pub use` / `pub(crate) use` in the crate root re-exports.
                let public = i >= 1 && (word(i - 1) == Some("pub") || toks[i - 1].0 == Token::Punct(')'));
                let reexport = public && module.is_empty() && inline.is_empty();
                let mut at = i + 1;
                let mut paths = Vec::new();
                use_tree(&toks, &mut at, Vec::new(), &mut paths);
                for path in paths {
                    uses.paths.push((here(&inline), path, line, reexport));
                }
                i = at;
                continue;
            }
            Token::Ident(first) if toks.get(i + 1).map(|t| &t.0) == Some(&Token::PathSep) => {
                let after_sep = i >= 1 && toks[i - 1].0 == Token::PathSep;
                if !after_sep {
                    let mut path = vec![first.clone()];
                    let mut at = i + 1;
                    while toks.get(at).map(|t| &t.0) == Some(&Token::PathSep) {
                        match word(at + 1) {
                            Some(w) => path.push(w.to_string()),
                            None => break,
                        }
                        at += 2;
                    }
                    uses.paths.push((here(&inline), path, line, false));
                    i = at;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    uses
}

/// Builds the graph of one crate from its files: (path relative to `src/`, text).
fn graph(files: &[(PathBuf, String)]) -> Graph {
    let read: Vec<FileUses> = files
        .iter()
        .filter_map(|(path, text)| {
            let module = module_of(path)?;
            Some(read_file(module, path.display().to_string(), text))
        })
        .collect();
    let mut g = Graph::default();
    for f in &read {
        g.modules.insert(f.module.clone());
    }
    // The root's re-exports: name → the path it stands for.
    let mut reexports: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for f in read.iter().filter(|f| f.module.is_empty()) {
        for (_, path, _, reexport) in &f.paths {
            if *reexport && let Some(last) = path.last() {
                let mut path = path.clone();
                if path.first().is_some_and(|p| p == "self" || p == "crate") {
                    path.remove(0);
                }
                reexports.insert(last.clone(), path);
            }
        }
    }
    let children_of = |module: &Module| -> BTreeSet<String> {
        read.iter().filter(|f| &f.module == module).flat_map(|f| f.children.iter().cloned()).collect()
    };
    for f in &read {
        let children = children_of(&f.module);
        for (written_in, path, line, reexport) in &f.paths {
            if *reexport {
                continue;
            }
            let children = if *written_in == f.module { &children } else { &BTreeSet::new() };
            let Some(absolute) = absolute(written_in, path, children) else { continue };
            let mut target = longest_module(&g.modules, &absolute);
            if target.is_empty()
                && let Some(item) = absolute.first()
                && let Some(real) = reexports.get(item)
            {
                target = longest_module(&g.modules, real);
            }
            if target != f.module {
                g.edges
                    .entry(f.module.clone())
                    .or_default()
                    .entry(target)
                    .or_insert_with(|| Seen { file: f.file.clone(), line: *line });
            }
        }
    }
    g
}

/// `path`, written in module `from`, from the crate root; `None` if it leaves the crate.
/// `children` are the modules `from` declares, which its paths may name without `self::`.
fn absolute(from: &Module, path: &[String], children: &BTreeSet<String>) -> Option<Vec<String>> {
    let first = path.first()?;
    let mut at: Vec<String>;
    let mut rest = path;
    match first.as_str() {
        "crate" => {
            at = Vec::new();
            rest = &path[1..];
        }
        "self" => {
            at = from.clone();
            rest = &path[1..];
        }
        "super" => {
            at = from.clone();
            while rest.first().is_some_and(|s| s == "super") {
                at.pop()?;
                rest = &rest[1..];
            }
        }
        // A child module of the file, named without `self::`.
        name if children.contains(name) => at = from.clone(),
        _ => return None,
    }
    at.extend(rest.iter().cloned());
    Some(at)
}

/// The longest prefix of `path` that is a module.
fn longest_module(modules: &BTreeSet<Module>, path: &[String]) -> Module {
    (0..=path.len()).rev().map(|n| path[..n].to_vec()).find(|m| modules.contains(m)).unwrap_or_default()
}

/// Every import cycle: one per strongly connected component of more than one module, shown as
/// a closed walk through it with where each edge is.
fn cycles(g: &Graph) -> Vec<String> {
    let nodes: Vec<&Module> = g.modules.iter().collect();
    let index: BTreeMap<&Module, usize> = nodes.iter().enumerate().map(|(i, m)| (*m, i)).collect();
    let succ: Vec<Vec<usize>> = nodes
        .iter()
        .map(|m| {
            g.edges.get(*m).map_or(Vec::new(), |e| e.keys().filter_map(|t| index.get(t).copied()).collect())
        })
        .collect();
    // Kosaraju: finish order on the graph, then components on the reversed graph.
    let n = nodes.len();
    let mut order = Vec::new();
    let mut seen = vec![false; n];
    for start in 0..n {
        if seen[start] {
            continue;
        }
        let mut stack = vec![(start, 0)];
        seen[start] = true;
        while let Some((v, k)) = stack.pop() {
            if let Some(&w) = succ[v].get(k) {
                stack.push((v, k + 1));
                if !seen[w] {
                    seen[w] = true;
                    stack.push((w, 0));
                }
            } else {
                order.push(v);
            }
        }
    }
    let mut pred = vec![Vec::new(); n];
    for (v, ws) in succ.iter().enumerate() {
        for &w in ws {
            pred[w].push(v);
        }
    }
    let mut component = vec![usize::MAX; n];
    let mut components: Vec<Vec<usize>> = Vec::new();
    for &v in order.iter().rev() {
        if component[v] != usize::MAX {
            continue;
        }
        let c = components.len();
        let mut members = vec![v];
        component[v] = c;
        let mut stack = vec![v];
        while let Some(x) = stack.pop() {
            for &p in &pred[x] {
                if component[p] == usize::MAX {
                    component[p] = c;
                    members.push(p);
                    stack.push(p);
                }
            }
        }
        components.push(members);
    }
    let mut found = Vec::new();
    for members in components.iter().filter(|m| m.len() > 1) {
        let c = component[members[0]];
        let mut names: Vec<String> = members.iter().map(|&m| name(nodes[m])).collect();
        names.sort();
        // A shortest walk from the first member back to itself, inside the component.
        let start = *members.iter().min().unwrap_or(&members[0]);
        let mut parent = vec![usize::MAX; n];
        let mut queue = std::collections::VecDeque::from([start]);
        let mut back = None;
        while let Some(v) = queue.pop_front() {
            for &w in &succ[v] {
                if component[w] != c {
                    continue;
                }
                if w == start {
                    back = Some(v);
                    break;
                }
                if parent[w] == usize::MAX {
                    parent[w] = v;
                    queue.push_back(w);
                }
            }
            if back.is_some() {
                break;
            }
        }
        let mut walk = vec![start];
        let mut v = back.unwrap_or(start);
        while v != start {
            walk.push(v);
            v = parent[v];
        }
        walk[1..].reverse();
        walk.push(start);
        let steps: Vec<String> = walk
            .windows(2)
            .map(|pair| {
                let (a, b) = (nodes[pair[0]], nodes[pair[1]]);
                let seen = &g.edges[a][b];
                format!("{} -> {} ({}:{})", name(a), name(b), seen.file, seen.line)
            })
            .collect();
        found.push(format!("cycle among {{{}}}: {}", names.join(", "), steps.join("; ")));
    }
    found
}

/// Every `.rs` file under `src`, relative to it.
fn sources(src: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs")
                && let (Ok(text), Ok(relative)) = (fs::read_to_string(&path), path.strip_prefix(src))
            {
                out.push((relative.to_path_buf(), text));
            }
        }
    }
    out.sort();
    out
}

fn model_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The `src/` directory of every workspace member with one, and of the root package.
fn workspace_srcs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut srcs = vec![root.join("src")];
    if let Ok(entries) = fs::read_dir(&root) {
        let mut members: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.join("Cargo.toml").is_file() && p.join("src").is_dir())
            .map(|p| p.join("src"))
            .collect();
        members.sort();
        srcs.extend(members);
    }
    srcs.into_iter().filter(|s| s.is_dir()).collect()
}

fn file(path: &str, text: &str) -> (PathBuf, String) {
    (PathBuf::from(path), text.to_string())
}

/// The reader finds a cycle through `use` groups, `super::`, a root re-export and a path in
/// code, and none through comments, strings, test modules or the root's own declarations.
#[test]
fn the_reader_finds_cycles_and_only_cycles() {
    let files = [
        file("lib.rs", "pub mod a;\npub mod b;\npub mod c;\npub mod d;\npub use c::Thing;\n"),
        file("a.rs", "use crate::{b::{self, X}, d};\n"),
        file("b.rs", "//! [`crate::d`]\nfn f() -> crate::Thing { todo!() }\nconst S: &str = \"crate::a\";\n"),
        file(
            "c.rs",
            "pub struct Thing;\nfn g() { super::a::h(); }\n#[cfg(test)]\nmod tests { use super::*; }\n",
        ),
        file("d.rs", "/* crate::a */ fn f(x: &'static str) -> char { 'a' }\n"),
    ];
    let g = graph(&files);
    let found = cycles(&g);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("cycle among {a, b, c}: a -> b (a.rs:1); b -> c (b.rs:2); c -> a (c.rs:2)"),
        "{}",
        found[0]
    );
    let d = vec!["d".to_string()];
    assert!(!g.edges.contains_key(&d), "d uses nothing: {:?}", g.edges.get(&d));
    let nested = [
        file("main.rs", "mod cmd;\nfn main() { cmd::run::go(); }\n"),
        file("cmd/mod.rs", "pub mod run;\npub struct E;\n"),
        file("cmd/run.rs", "use super::E;\npub fn go() {}\n"),
    ];
    let g = graph(&nested);
    assert!(cycles(&g).is_empty());
    let from_root = &g.edges[&Vec::<String>::new()];
    assert!(from_root.contains_key(&vec!["cmd".to_string(), "run".to_string()]), "{from_root:?}");
    assert!(g.edges[&vec!["cmd".to_string(), "run".to_string()]].contains_key(&vec!["cmd".to_string()]));
}

/// `model/src` has no import cycle.
#[test]
fn model_has_no_import_cycle() {
    let g = graph(&sources(&model_src()));
    assert!(g.modules.len() > 10, "read {} modules of {}", g.modules.len(), model_src().display());
    let found = cycles(&g);
    assert!(found.is_empty(), "model/src has import cycles:\n{}", found.join("\n"));
}

/// The oracle — the reference store and what it uses — reaches nothing of the world, the
/// properties or the checker.
#[test]
fn the_oracle_uses_only_the_vocabulary_and_the_bugs() {
    let g = graph(&sources(&model_src()));
    let mut reached = BTreeSet::new();
    let mut stack = vec![vec!["reference".to_string()]];
    while let Some(m) = stack.pop() {
        for next in g.edges.get(&m).into_iter().flat_map(|e| e.keys()) {
            if reached.insert(next.clone()) {
                stack.push(next.clone());
            }
        }
    }
    let reached: BTreeSet<String> = reached.iter().map(name).collect();
    let allowed: BTreeSet<String> =
        ["crate", "bug", "delay", "op", "response", "validate"].into_iter().map(String::from).collect();
    assert!(reached.contains("bug") && reached.contains("validate"), "{reached:?}");
    assert!(reached.is_subset(&allowed), "the reference store reaches {reached:?}");
}

/// No workspace crate's `src/` has an import cycle either: a cycle anywhere fails the test,
/// naming every cycle of every crate (not only the first crate's).
#[test]
fn no_workspace_crate_has_an_import_cycle() {
    let srcs = workspace_srcs();
    assert!(srcs.len() > 3, "found the workspace crates: {srcs:?}");
    let mut failures = Vec::new();
    for src in srcs {
        let src = src.canonicalize().unwrap_or(src);
        let g = graph(&sources(&src));
        assert!(!g.modules.is_empty(), "read no module of {}", src.display());
        let found = cycles(&g);
        println!("{}: {} modules, {} import cycle(s)", src.display(), g.modules.len(), found.len());
        for cycle in found {
            failures.push(format!("{}: {cycle}", src.display()));
        }
    }
    assert!(failures.is_empty(), "import cycles:\n{}", failures.join("\n"));
}
