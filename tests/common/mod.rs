//! Shared helpers of the integration tests: ROOT's golden JSON readings and
//! the conversion of Arrow arrays into the same form (tests/data/README.md).

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrowPrimitiveType};
use arrow_schema::{DataType, Field};
use serde_json::{json, Map, Value};

use rntuple::arrow::metadata;

/// The directory of committed fixtures.
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// The directory of real files from ROOT, if present.
/// The `.root` files of `dir`, sorted; fails if there are none.
pub fn root_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "root"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .root files in {}", dir.display());
    files
}

pub fn corpus_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("RNTUPLE_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"));
    dir.is_dir().then_some(dir)
}

/// The JSON value of row `i` of `array`, whose Arrow field is `field`.
pub fn value_at(array: &dyn Array, i: usize, field: &Field) -> Value {
    if array.is_null(i) {
        return Value::Null;
    }
    let v = match array.data_type() {
        DataType::Boolean => json!(array.as_boolean().value(i)),
        DataType::Int8 => json!(array.as_primitive::<Int8Type>().value(i)),
        DataType::Int16 => json!(array.as_primitive::<Int16Type>().value(i)),
        DataType::Int32 => json!(array.as_primitive::<Int32Type>().value(i)),
        DataType::Int64 => json!(array.as_primitive::<Int64Type>().value(i)),
        DataType::UInt8 => json!(array.as_primitive::<UInt8Type>().value(i)),
        DataType::UInt16 => json!(array.as_primitive::<UInt16Type>().value(i)),
        DataType::UInt32 => json!(array.as_primitive::<UInt32Type>().value(i)),
        DataType::UInt64 => json!(array.as_primitive::<UInt64Type>().value(i)),
        DataType::Float32 => json!(format!(
            "0x{:08x}",
            array.as_primitive::<Float32Type>().value(i).to_bits()
        )),
        DataType::Float64 => json!(format!(
            "0x{:016x}",
            array.as_primitive::<Float64Type>().value(i).to_bits()
        )),
        DataType::Utf8 => json!(array.as_string::<i32>().value(i)),
        DataType::Binary => {
            let b = array.as_binary::<i32>().value(i);
            json!(b.iter().map(|x| format!("{x:02x}")).collect::<String>())
        }
        DataType::List(item) => {
            let list = array.as_list::<i32>().value(i);
            Value::Array(
                (0..list.len())
                    .map(|j| value_at(list.as_ref(), j, item))
                    .collect(),
            )
        }
        DataType::FixedSizeList(item, _) => {
            let list = array.as_fixed_size_list().value(i);
            Value::Array(
                (0..list.len())
                    .map(|j| value_at(list.as_ref(), j, item))
                    .collect(),
            )
        }
        DataType::Struct(fields) => {
            let s = array.as_struct();
            let mut m = Map::new();
            for (f, c) in fields.iter().zip(s.columns()) {
                m.insert(f.name().clone(), value_at(c.as_ref(), i, f));
            }
            Value::Object(m)
        }
        DataType::Map(entries, _) => {
            let DataType::Struct(kv) = entries.data_type() else {
                unreachable!()
            };
            let map = array.as_map();
            let e = map.value(i);
            Value::Array(
                (0..e.len())
                    .map(|j| {
                        json!([
                            value_at(e.column(0).as_ref(), j, &kv[0]),
                            value_at(e.column(1).as_ref(), j, &kv[1])
                        ])
                    })
                    .collect(),
            )
        }
        DataType::Union(fields, _) => {
            let u = array.as_union();
            let tag = u.type_id(i);
            let child = u.child(tag);
            let offset = u.value_offset(i);
            let field = fields
                .iter()
                .find(|(t, _)| *t == tag)
                .map(|(_, f)| f.clone())
                .unwrap();
            // No valid alternative: a null in an alternative whose own
            // values are never null (the reader's valueless slot).
            if child.is_null(offset) && !may_be_null(&field) {
                Value::Null
            } else {
                json!({"tag": tag, "value": value_at(child.as_ref(), offset, &field)})
            }
        }
        other => panic!("no JSON form for {other}"),
    };
    let _ = field;
    v
}

/// Whether values of `field`'s RNTuple type can be null themselves: an
/// optional, a unique_ptr or a variant.
fn may_be_null(field: &Field) -> bool {
    field.metadata().get(metadata::TYPE).is_some_and(|t| {
        ["std::optional<", "std::unique_ptr<", "std::variant<"]
            .iter()
            .any(|p| t.starts_with(p))
    })
}

/// Whether `field` holds an unordered container, as its RNTuple type says:
/// optionals and unique_ptrs of one read as the container itself.
fn is_unordered(field: &Field) -> bool {
    field.metadata().get(metadata::TYPE).is_some_and(|t| {
        let mut t = t.as_str();
        while let Some(inner) = ["std::optional<", "std::unique_ptr<"]
            .iter()
            .find_map(|p| t.strip_prefix(p))
        {
            t = inner;
        }
        t.starts_with("std::unordered_")
    })
}

/// Sorts the unordered containers inside `v` (as the field's RNTuple type
/// says), so values compare as multisets.
pub fn normalize(v: &mut Value, field: &Field) {
    let unordered = is_unordered(field);
    match (field.data_type(), v) {
        (DataType::List(item) | DataType::FixedSizeList(item, _), Value::Array(items)) => {
            items.iter_mut().for_each(|x| normalize(x, item));
            if unordered {
                items.sort_by_key(|x| x.to_string());
            }
        }
        (DataType::Map(entries, _), Value::Array(items)) => {
            if let DataType::Struct(kv) = entries.data_type() {
                for pair in items.iter_mut() {
                    if let Value::Array(p) = pair {
                        if let [k, v] = p.as_mut_slice() {
                            normalize(k, &kv[0]);
                            normalize(v, &kv[1]);
                        }
                    }
                }
            }
            if unordered {
                items.sort_by_key(|x| x.to_string());
            }
        }
        (DataType::Struct(fields), Value::Object(m)) => {
            for f in fields {
                if let Some(x) = m.get_mut(f.name()) {
                    normalize(x, f);
                }
            }
        }
        (DataType::Union(fields, _), Value::Object(m)) => {
            let tag = m.get("tag").and_then(Value::as_i64).unwrap_or(-1);
            if let Some((_, f)) = fields.iter().find(|(t, _)| i64::from(*t) == tag) {
                if let Some(x) = m.get_mut("value") {
                    normalize(x, f);
                }
            }
        }
        _ => {}
    }
}

/// The expected values of one field: a plain array or runs of `[value, count]`.
struct Expected {
    values: Vec<Value>,
    rle: bool,
    position: usize,
    used_of_run: u64,
}

impl Expected {
    fn new(nt: &Value, name: &str) -> Option<Self> {
        if let Some(v) = nt["values"][name].as_array() {
            return Some(Self {
                values: v.clone(),
                rle: false,
                position: 0,
                used_of_run: 0,
            });
        }
        nt["values_rle"][name].as_array().map(|v| Self {
            values: v.clone(),
            rle: true,
            position: 0,
            used_of_run: 0,
        })
    }

    /// For runs of `[value, count]`: how many more items of the current run
    /// there are, with the value.
    fn current_run(&mut self) -> Option<(Value, u64)> {
        if !self.rle {
            return None;
        }
        loop {
            let run = self.values.get(self.position)?;
            let count = run[1].as_u64().unwrap_or(0);
            if self.used_of_run < count {
                return Some((run[0].clone(), count - self.used_of_run));
            }
            self.position += 1;
            self.used_of_run = 0;
        }
    }

    fn skip(&mut self, n: u64) {
        self.used_of_run += n;
    }

    fn next(&mut self) -> Option<Value> {
        if !self.rle {
            let v = self.values.get(self.position).cloned();
            self.position += 1;
            return v;
        }
        loop {
            let run = self.values.get(self.position)?;
            let count = run[1].as_u64().unwrap_or(0);
            if self.used_of_run < count {
                self.used_of_run += 1;
                return Some(run[0].clone());
            }
            self.position += 1;
            self.used_of_run = 0;
        }
    }
}

/// For an integer column: the first index in `range` whose value is not
/// `expected` (`Some(None)` when all match); `None` for other types.
fn first_mismatch(
    array: &dyn Array,
    range: std::ops::Range<usize>,
    expected: &Value,
) -> Option<Option<usize>> {
    fn scan<T: ArrowPrimitiveType>(
        array: &dyn Array,
        range: std::ops::Range<usize>,
        want: Option<T::Native>,
    ) -> Option<Option<usize>> {
        let want = want?;
        let values = array.as_primitive::<T>().values();
        Some(range.clone().find(|&j| values[j] != want))
    }
    if array.null_count() > 0 {
        return None;
    }
    let (i, u) = (expected.as_i64(), expected.as_u64());
    match array.data_type() {
        DataType::Int8 => scan::<Int8Type>(array, range, i.and_then(|v| v.try_into().ok())),
        DataType::Int16 => scan::<Int16Type>(array, range, i.and_then(|v| v.try_into().ok())),
        DataType::Int32 => scan::<Int32Type>(array, range, i.and_then(|v| v.try_into().ok())),
        DataType::Int64 => scan::<Int64Type>(array, range, i),
        DataType::UInt8 => scan::<UInt8Type>(array, range, u.and_then(|v| v.try_into().ok())),
        DataType::UInt16 => scan::<UInt16Type>(array, range, u.and_then(|v| v.try_into().ok())),
        DataType::UInt32 => scan::<UInt32Type>(array, range, u.and_then(|v| v.try_into().ok())),
        DataType::UInt64 => scan::<UInt64Type>(array, range, u),
        _ => None,
    }
}

/// Loads a golden JSON file (plain or gzip).
pub fn load_golden(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let text = if path.extension().is_some_and(|e| e == "gz") {
        use std::io::Read;
        let mut s = String::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_string(&mut s)
            .unwrap();
        s
    } else {
        String::from_utf8(bytes).unwrap()
    };
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Compares every RNTuple of `root_file` with the golden reading; returns
/// a list of disagreements (empty when all agree).
pub fn compare_with_golden(root_file: &Path, golden: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let file = match rntuple::RNTupleFile::open(root_file) {
        Ok(f) => f,
        Err(e) => return vec![format!("{}: cannot open: {e}", root_file.display())],
    };
    let listed: Vec<String> = file.ntuples().into_iter().map(|n| n.path).collect();
    let expected: Vec<String> = golden["ntuples"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|nt| nt["path"].as_str().map(String::from))
        .collect();
    let file_name = root_file
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    if listed != expected {
        problems.push(format!(
            "{file_name}: lists RNTuples {listed:?}, ROOT has {expected:?}"
        ));
    }
    for nt in golden["ntuples"].as_array().into_iter().flatten() {
        let path = nt["path"].as_str().unwrap_or_default();
        let label = format!("{file_name}:{path}");
        match file.ntuple(Some(path)) {
            Ok(ntuple) => compare_ntuple(&label, &ntuple, nt, &mut problems),
            Err(e) => problems.push(format!("{label}: cannot open: {e}")),
        }
    }
    problems
}

/// Compares one RNTuple (or attribute set) with its golden reading.
pub fn compare_ntuple(
    label: &str,
    ntuple: &rntuple::RNTuple,
    nt: &Value,
    problems: &mut Vec<String>,
) {
    let unchecked = nt["unchecked"].as_object().cloned().unwrap_or_default();
    // Fields whose reading failed in ROOT are left out of the read; the
    // ones ROOT reads but does not give as values (streamed objects of
    // classes it lacks, fields of unknown types) stay in.
    let unread: Vec<&String> = unchecked
        .iter()
        .filter(|(_, why)| {
            why.as_str()
                .is_some_and(|w| !w.starts_with("ROOT-streamed") && !w.starts_with("invalid field"))
        })
        .map(|(name, _)| name)
        .collect();
    let mut builder = rntuple::RNTupleReaderBuilder::new(ntuple.clone()).with_batch_size(1000);
    if !unread.is_empty() {
        let read: Vec<String> = nt["fields"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f["name"].as_str())
            .filter(|name| !unread.iter().any(|u| u.as_str() == *name))
            .map(str::to_string)
            .collect();
        builder = match builder.with_projection(&read) {
            Ok(b) => b,
            Err(e) => {
                problems.push(format!("{label}: cannot project {read:?}: {e}"));
                return;
            }
        };
    }
    let schema = builder.schema().clone();
    let reader = match builder.build() {
        Ok(r) => r,
        Err(e) => {
            problems.push(format!("{label}: read failed: {e}"));
            return;
        }
    };
    let mut fields = Vec::new();
    for f in nt["fields"].as_array().into_iter().flatten() {
        let name = f["name"].as_str().unwrap_or_default().to_string();
        if unchecked.contains_key(&name) {
            continue;
        }
        let Some(expected) = Expected::new(nt, &name) else {
            problems.push(format!("{label}: golden has no values for field {name}"));
            continue;
        };
        match schema.column_with_name(&name) {
            Some((index, field)) => fields.push((name, index, field.clone(), expected, false)),
            None => problems.push(format!(
                "{label}: field {name} ({}) missing from the Arrow schema",
                f["type"]
            )),
        }
    }
    let mut n_rows = 0u64;
    for batch in reader {
        let batch = match batch {
            Ok(b) => b,
            Err(e) => {
                problems.push(format!("{label}: read failed after {n_rows} entries: {e}"));
                return;
            }
        };
        for (name, index, field, expected, failed) in fields.iter_mut() {
            if *failed {
                continue;
            }
            let column = batch.column(*index);
            let mut i = 0;
            // Runs of one value in a flat column: compare the run at once.
            while !column.data_type().is_nested() && i < column.len() {
                let Some((value, count)) = expected.current_run() else {
                    break;
                };
                let n = (count as usize).min(column.len() - i);
                let mut e = value.clone();
                normalize(&mut e, field);
                let mismatch = match first_mismatch(column.as_ref(), i..i + n, &e) {
                    Some(found) => found,
                    None => (i..i + n).find(|&j| value_at(column.as_ref(), j, field) != e),
                };
                if let Some(j) = mismatch {
                    let a = value_at(column.as_ref(), j, field);
                    problems.push(format!(
                        "{label}: field {name} entry {}: read {a}, ROOT has {e}",
                        n_rows + j as u64
                    ));
                    *failed = true;
                    break;
                }
                expected.skip(n as u64);
                i += n;
            }
            if *failed {
                continue;
            }
            for i in i..column.len() {
                let mut a = value_at(column.as_ref(), i, field);
                let Some(mut e) = expected.next() else {
                    problems.push(format!(
                        "{label}: field {name}: more entries read than ROOT has"
                    ));
                    *failed = true;
                    break;
                };
                normalize(&mut a, field);
                normalize(&mut e, field);
                if a != e {
                    problems.push(format!(
                        "{label}: field {name} entry {}: read {a}, ROOT has {e}",
                        n_rows + i as u64
                    ));
                    *failed = true;
                    break;
                }
            }
        }
        n_rows += batch.num_rows() as u64;
    }
    if nt["entries"].as_u64() != Some(n_rows) {
        problems.push(format!(
            "{label}: {n_rows} entries read, ROOT has {}",
            nt["entries"]
        ));
    }
    let sets = ntuple.attribute_sets();
    for set in nt["attribute_sets"].as_array().into_iter().flatten() {
        let name = set["name"].as_str().unwrap_or_default();
        let sub = format!("{label}@{name}");
        if !sets.iter().any(|s| s.name == name) {
            problems.push(format!("{sub}: attribute set not listed"));
            continue;
        }
        match ntuple.attribute_set(name) {
            Ok(a) => compare_ntuple(&sub, &a, set, problems),
            Err(e) => problems.push(format!("{sub}: cannot open: {e}")),
        }
    }
}

/// The text of `EXPLAIN <sql>` in `ctx`: its logical and physical plans.
#[cfg(feature = "datafusion")]
pub async fn explain(ctx: &datafusion::prelude::SessionContext, sql: &str) -> String {
    let plan = ctx
        .sql(&format!("EXPLAIN {sql}"))
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    arrow::util::pretty::pretty_format_batches(&plan)
        .unwrap()
        .to_string()
}

/// The `rntuple` command of this build, without the caller's
/// `RUST_BACKTRACE` (errors must be one line).
#[cfg(feature = "cli")]
pub fn rntuple_command() -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("rntuple").expect("the rntuple binary is built");
    cmd.env_remove("RUST_BACKTRACE");
    cmd
}
