//! From DataFusion's projection expressions to the field paths the reader reads.
//!
//! ```text
//!  [get_field(Jet, 'pt'), MET_pt, get_field(get_field(s, 'a'), 'b')]
//!        └─> ["Jet.pt", "MET_pt", "s.a.b"]      (file columns in schema order)
//! ```
//!
//! A column used only through `get_field` chains on structs is read as
//! those sub-fields: the reader keeps the struct, with only the members
//! asked for, so `get_field` still finds them by name. A column used in
//! any other way is read whole.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_schema::{DataType, Schema};
use datafusion::common::ScalarValue;
use datafusion::physical_expr::expressions::{Column, Literal};
use datafusion::physical_expr::{PhysicalExpr, ScalarFunctionExpr};

/// What is read of one file column.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Need {
    Whole,
    /// Paths below the column (each a list of member names).
    Parts(Vec<Vec<String>>),
}

/// The reader paths for `file_indices` of `schema`, given the expressions
/// that use them. `file_indices` are the columns in the order the reader
/// must return them.
pub(crate) fn reader_paths(
    schema: &Schema,
    file_indices: &[usize],
    exprs: &[Arc<dyn PhysicalExpr>],
) -> Vec<String> {
    let mut needs: BTreeMap<usize, Need> = BTreeMap::new();
    for expr in exprs {
        collect(expr, schema, &mut needs);
    }
    let mut out = Vec::new();
    for &i in file_indices {
        let Some(field) = schema.fields().get(i) else {
            continue;
        };
        let name = field.name();
        match needs.get(&i) {
            Some(Need::Parts(parts)) if !parts.is_empty() => {
                for p in parts {
                    out.push(
                        std::iter::once(name.as_str())
                            .chain(p.iter().map(String::as_str))
                            .collect::<Vec<_>>()
                            .join("."),
                    );
                }
            }
            _ => out.push(name.clone()),
        }
    }
    out
}

fn collect(expr: &Arc<dyn PhysicalExpr>, schema: &Schema, needs: &mut BTreeMap<usize, Need>) {
    if let Some((index, path)) = field_chain(expr, schema) {
        let entry = needs
            .entry(index)
            .or_insert_with(|| Need::Parts(Vec::new()));
        if let Need::Parts(parts) = entry {
            if path.is_empty() {
                *entry = Need::Whole;
            } else if !parts.contains(&path) {
                parts.push(path);
            }
        }
        return;
    }
    if let Some(col) = expr.downcast_ref::<Column>() {
        needs.insert(col.index(), Need::Whole);
        return;
    }
    for child in expr.children() {
        collect(child, schema, needs);
    }
}

/// `get_field(get_field(col, 'a'), 'b')` (or `get_field(col, 'a', 'b')`)
/// on structs -> (column index, ["a", "b"]). Keys that do not name a struct
/// member (map lookups, list access) end the path.
fn field_chain(expr: &Arc<dyn PhysicalExpr>, schema: &Schema) -> Option<(usize, Vec<String>)> {
    let func = expr.downcast_ref::<ScalarFunctionExpr>()?;
    if func.name() != "get_field" {
        return None;
    }
    let (base, keys) = func.args().split_first()?;
    let (index, mut path) = match base.downcast_ref::<Column>() {
        Some(col) => (col.index(), Vec::new()),
        None => field_chain(base, schema)?,
    };
    let mut dt = schema.fields().get(index)?.data_type().clone();
    for p in &path {
        dt = member(&dt, p)?;
    }
    for key in keys {
        let lit = key.downcast_ref::<Literal>()?;
        let name = match lit.value() {
            ScalarValue::Utf8(Some(s))
            | ScalarValue::LargeUtf8(Some(s))
            | ScalarValue::Utf8View(Some(s)) => s.clone(),
            _ => return Some((index, Vec::new())),
        };
        match member(&dt, &name) {
            Some(next) => {
                dt = next;
                path.push(name);
            }
            // Not a struct member: the rest is evaluated on what is read.
            None => return Some((index, path)),
        }
    }
    Some((index, path))
}

fn member(dt: &DataType, name: &str) -> Option<DataType> {
    match dt {
        DataType::Struct(fields) => fields
            .iter()
            .find(|f| f.name() == name)
            .map(|f| f.data_type().clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::{Field, Fields};

    fn schema() -> Schema {
        let s = DataType::Struct(Fields::from(vec![
            Field::new("a", DataType::Int32, false),
            Field::new("b", DataType::Float32, false),
        ]));
        Schema::new(vec![
            Field::new("x", DataType::Int32, false),
            Field::new("s", s, false),
        ])
    }

    #[test]
    fn plain_columns_are_read_whole() {
        let schema = schema();
        let exprs: Vec<Arc<dyn PhysicalExpr>> =
            vec![Arc::new(Column::new("s", 1)), Arc::new(Column::new("x", 0))];
        assert_eq!(reader_paths(&schema, &[0, 1], &exprs), vec!["x", "s"]);
    }
}
