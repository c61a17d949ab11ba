//! The README's one library snippet is a region of an example, which `cargo test` compiles
//! and runs (`tests/orders_example.rs`): a snippet edited in the README alone, or an example
//! changed under it, fails here.

use std::path::Path;

/// The first ```rust block of the README's "## The library" section.
fn readme_snippet(readme: &str) -> Option<String> {
    let section = readme.split("\n## The library\n").nth(1)?;
    let section = section.split("\n## ").next()?;
    let block = section.split("```rust\n").nth(1)?;
    Some(block.split("```").next()?.to_owned())
}

/// The lines between `// ANCHOR: readme` and `// ANCHOR_END: readme`.
fn anchored_region(example: &str) -> Option<String> {
    let region = example.split("// ANCHOR: readme\n").nth(1)?;
    Some(region.split("// ANCHOR_END: readme\n").next()?.to_owned())
}

#[test]
fn the_readme_snippet_is_the_examples_region() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("../README.md")).expect("README.md");
    let example = std::fs::read_to_string(root.join("examples/orders.rs")).expect("example");
    let snippet = readme_snippet(&readme).expect("a ```rust block under ## The library");
    let region = anchored_region(&example).expect("an ANCHOR: readme region in orders.rs");
    assert!(region.contains("tx.enqueue") && region.contains("run_async"), "{region}");
    assert_eq!(snippet, region, "README.md's library snippet differs from worker/examples/orders.rs");
}

#[test]
fn a_changed_snippet_is_noticed() {
    let readme = "x\n## The library\n\ntext\n\n```rust\nfn a() {}\n```\n\n## Next\n```rust\nfn b() {}\n```\n";
    assert_eq!(readme_snippet(readme).as_deref(), Some("fn a() {}\n"));
    let example = "fn main() {}\n// ANCHOR: readme\nfn a() {}\n// ANCHOR_END: readme\n";
    assert_eq!(anchored_region(example).as_deref(), Some("fn a() {}\n"));
    let edited = readme.replace("fn a() {}", "fn a() { 1 }");
    assert_ne!(readme_snippet(&edited), anchored_region(example));
}
