//! Every real file of the corpus (../shared/corpus, or $RNTUPLE_CORPUS)
//! opens, reads completely, and agrees with ROOT's reading of it
//! (tests/data/corpus/*.json.gz).

mod common;

use common::{compare_with_golden, corpus_dir, data_dir, load_golden, root_files};

#[test]
fn corpus_files_agree_with_root() {
    let Some(dir) = corpus_dir() else {
        eprintln!("corpus not found (set RNTUPLE_CORPUS or place it at ../shared/corpus): skipping the corpus comparison");
        return;
    };
    let files = root_files(&dir);
    let mut problems = Vec::new();
    let only = std::env::var("CORPUS_ONLY").ok();
    for path in &files {
        if only
            .as_ref()
            .is_some_and(|o| !path.to_string_lossy().contains(o.as_str()))
        {
            continue;
        }
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let golden_path = data_dir().join("corpus").join(format!("{stem}.json.gz"));
        if !golden_path.exists() {
            problems.push(format!("{stem}: no golden reading in tests/data/corpus"));
            continue;
        }
        let started = std::time::Instant::now();
        let found = compare_with_golden(path, &load_golden(&golden_path));
        eprintln!(
            "{stem}: {} disagreements ({:.1} s)",
            found.len(),
            started.elapsed().as_secs_f64()
        );
        problems.extend(found);
    }
    assert!(
        problems.is_empty(),
        "{} disagreements:\n{}",
        problems.len(),
        problems.join("\n")
    );
}
