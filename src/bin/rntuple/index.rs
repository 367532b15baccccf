//! `rntuple index`: write the sidecar index of each file (per-cluster min,
//! max and null counts of scalar fields, and of the lengths of list and map
//! fields) that SQL scans use to skip clusters.

use std::sync::Arc;

use rntuple::datafusion::index::write_index_with_cache;
use rntuple::SchemaCache;

use crate::inspect::remote_url;
use crate::util::{print, CliError, CliResult};
use crate::IndexArgs;

pub fn index(args: &IndexArgs, quiet: bool) -> CliResult {
    let columns: Vec<&str> = args.columns.iter().map(String::as_str).collect();
    // The files of a dataset share their schema: build it once.
    let schemas = Arc::new(SchemaCache::new());
    for file in &args.files {
        if let Some(url) = remote_url(file) {
            return Err(CliError::new(format!(
                "{url}: the index is written next to the file, so only local files can be indexed"
            )));
        }
        let written = write_index_with_cache(file, args.ntuple.as_deref(), &columns, &schemas)
            .map_err(|e| CliError::from(e).context(file.display()))?;
        if !quiet {
            print(&format!("{}\n", written.display()))?;
        }
    }
    Ok(())
}
