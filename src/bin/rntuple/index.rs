//! `rntuple index`: write the sidecar index of each file (per-cluster min,
//! max and null counts of scalar fields, and of the lengths of list and map
//! fields) that SQL scans use to skip clusters.

use rntuple::datafusion::index::write_index_for;

use crate::util::{print, CliError, CliResult};
use crate::IndexArgs;

pub fn index(args: &IndexArgs, quiet: bool) -> CliResult {
    let columns: Vec<&str> = args.columns.iter().map(String::as_str).collect();
    for file in &args.files {
        let written = write_index_for(file, args.ntuple.as_deref(), &columns)
            .map_err(|e| CliError::from(e).context(file.display()))?;
        if !quiet {
            print(&format!("{}\n", written.display()))?;
        }
    }
    Ok(())
}
