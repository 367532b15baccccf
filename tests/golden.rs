//! The Arrow output of every committed fixture equals ROOT's own reading of
//! it (tests/data/*.json, written by tests/data/generate.py with ROOT).

mod common;

use std::collections::BTreeSet;

use common::{compare_with_golden, data_dir, load_golden};

fn files_with_extension(ext: &str) -> BTreeSet<String> {
    std::fs::read_dir(data_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(ext))
        .map(|n| n.trim_end_matches(ext).to_string())
        .collect()
}

#[test]
fn every_fixture_has_a_golden_and_every_golden_a_fixture() {
    let roots = files_with_extension(".root");
    let goldens = files_with_extension(".json");
    assert!(!roots.is_empty(), "no fixtures in tests/data");
    assert_eq!(roots, goldens, "fixtures and goldens must pair up");
}

#[test]
fn fixtures_agree_with_root() {
    let mut problems = Vec::new();
    // GOLDEN_ONLY=name restricts the run to one fixture while debugging.
    let only = std::env::var("GOLDEN_ONLY").ok();
    for name in files_with_extension(".json") {
        if only.as_ref().is_some_and(|o| *o != name) {
            continue;
        }
        let golden = load_golden(&data_dir().join(format!("{name}.json")));
        let file = golden["file"]
            .as_str()
            .map(String::from)
            .unwrap_or(format!("{name}.root"));
        problems.extend(compare_with_golden(&data_dir().join(file), &golden));
    }
    assert!(
        problems.is_empty(),
        "{} disagreements:\n{}",
        problems.len(),
        problems.join("\n")
    );
}
