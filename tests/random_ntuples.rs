//! RNTuples of random nested schemas written by ROOT
//! (`tests/data/random_ntuples.py DIR`), in the directory
//! `$RNTUPLE_RANDOM_DIR`: each agrees with ROOT's reading of it, and reads
//! alike in batches of any size, with lanes running ahead or not.

mod common;

use arrow::compute::concat_batches;
use arrow_array::RecordBatch;
use common::{compare_with_golden, load_golden, root_files};
use rntuple::RNTupleFile;

/// The whole RNTuple read `size` entries at a time, concatenated.
fn read(file: &RNTupleFile, size: usize, ahead: Option<usize>) -> rntuple::Result<RecordBatch> {
    let mut builder = file.reader_builder(None)?.with_batch_size(size);
    if let Some(n) = ahead {
        builder = builder.with_batches_ahead(n);
    }
    let schema = builder.schema().clone();
    let batches = builder.build()?.collect_batches()?;
    Ok(concat_batches(&schema, &batches)?)
}

#[test]
fn random_ntuples_agree_with_root() {
    let Some(dir) = std::env::var_os("RNTUPLE_RANDOM_DIR") else {
        eprintln!(
            "RNTUPLE_RANDOM_DIR not set: skipping the random RNTuples \
             (write them with tests/data/random_ntuples.py DIR)"
        );
        return;
    };
    let files = root_files(std::path::Path::new(&dir));
    let mut problems = Vec::new();
    for path in &files {
        let golden = path.with_extension("json");
        let found = compare_with_golden(path, &load_golden(&golden));
        problems.extend(found.into_iter().take(3));
        let file = RNTupleFile::open(path).unwrap();
        let Ok(whole) = read(&file, 1 << 20, None) else {
            continue; // reported by the comparison
        };
        for size in [1, 3, 17, 100, 999] {
            for ahead in [None, Some(0), Some(3)] {
                match read(&file, size, ahead) {
                    Ok(batches) if batches == whole => {}
                    Ok(_) => problems.push(format!(
                        "{}: batches of {size} (ahead {ahead:?}) read other values",
                        path.display()
                    )),
                    Err(e) => problems.push(format!(
                        "{}: batches of {size} (ahead {ahead:?}): {e}",
                        path.display()
                    )),
                }
            }
        }
    }
    eprintln!("{} random RNTuples read", files.len());
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}
