//! From the RNTuple field tree to the Arrow schema (the mapping table of
//! the README), through an intermediate tree of [`FieldNode`]s.
//!
//! ```text
//!  FieldDescriptor tree ──> FieldNode tree ──> arrow Schema
//!   (types, roles,           (Arrow field +      (what users see)
//!    columns)                 how to read it)
//! ```
//!
//! Each node knows its Arrow field and which columns of which field it
//! reads; [`crate::arrow::assemble`] walks the same tree for every batch.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow_schema::{DataType, Field, FieldRef, Fields, Schema, UnionFields, UnionMode};

use crate::descriptor::{ColumnType, Descriptor, FieldDescriptor, StructuralRole};
use crate::error::{Error, Result};

/// Metadata keys on Arrow fields and schemas.
pub mod metadata {
    pub const TYPE: &str = "rntuple.type";
    pub const ALIAS: &str = "rntuple.alias";
    pub const DESCRIPTION: &str = "rntuple.description";
    pub const NAME: &str = "rntuple.name";
    pub const WRITER: &str = "rntuple.writer";
    pub const VERSION: &str = "rntuple.version";
}

/// A fundamental C++ type and the Arrow primitive it becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leaf {
    Bool,
    Int8,
    UInt8,
    Int16,
    UInt16,
    Int32,
    UInt32,
    Int64,
    UInt64,
    Float32,
    Float64,
}

impl Leaf {
    /// The leaf for a normalised C++ type name.
    pub fn from_type_name(name: &str) -> Option<Leaf> {
        Some(match name {
            "bool" => Leaf::Bool,
            "char" | "std::int8_t" | "signed char" => Leaf::Int8,
            "std::uint8_t" | "std::byte" | "unsigned char" => Leaf::UInt8,
            "std::int16_t" => Leaf::Int16,
            "std::uint16_t" => Leaf::UInt16,
            "std::int32_t" => Leaf::Int32,
            "std::uint32_t" => Leaf::UInt32,
            "std::int64_t" => Leaf::Int64,
            "std::uint64_t" => Leaf::UInt64,
            "float" => Leaf::Float32,
            "double" | "Double32_t" => Leaf::Float64,
            _ => return None,
        })
    }

    /// The Arrow type of the leaf.
    pub fn data_type(self) -> DataType {
        match self {
            Leaf::Bool => DataType::Boolean,
            Leaf::Int8 => DataType::Int8,
            Leaf::UInt8 => DataType::UInt8,
            Leaf::Int16 => DataType::Int16,
            Leaf::UInt16 => DataType::UInt16,
            Leaf::Int32 => DataType::Int32,
            Leaf::UInt32 => DataType::UInt32,
            Leaf::Int64 => DataType::Int64,
            Leaf::UInt64 => DataType::UInt64,
            Leaf::Float32 => DataType::Float32,
            Leaf::Float64 => DataType::Float64,
        }
    }
}

/// How a node's arrays are built.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeKind {
    /// A fundamental type: one value column.
    Primitive(Leaf),
    /// std::string: an index column and a char column.
    String,
    /// A ROOT-streamed object: an index column and a byte column.
    Streamed,
    /// A variable-size collection: an index column and one child.
    List(Box<FieldNode>),
    /// std::array<T, N>: no columns, N child elements per value.
    FixedSizeList(Box<FieldNode>, usize),
    /// `std::bitset<N>`: one bit column, N bits per value.
    Bitset(usize),
    /// A record: children read over the same range.
    Struct(Vec<FieldNode>),
    /// A map: an index column and a pair child whose members are key and value.
    Map(Box<FieldNode>, Box<FieldNode>),
    /// std::variant: a switch column and one child per alternative.
    Union(Vec<FieldNode>),
    /// optional / unique_ptr: an index column and one child, nullable.
    Nullable(Box<FieldNode>),
    /// RNTupleCardinality: collection sizes from an index column.
    Cardinality { wide: bool },
    /// `atomic<T>` or an enum: the child's values under this field's name.
    Wrapper(Box<FieldNode>),
}

/// One node of the tree between the RNTuple schema and the Arrow schema.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldNode {
    /// The field whose columns this node reads.
    pub field_id: u32,
    /// The Arrow field (name, type, nullability, metadata).
    pub arrow: FieldRef,
    pub kind: NodeKind,
    /// Number of values of this node per entry, when that is fixed (the
    /// product of the array sizes above it); `None` under a collection or
    /// a variant. Deferred columns are placed with it.
    pub per_entry: Option<u64>,
}

impl FieldNode {
    /// Visits this node and all nodes below it.
    pub fn visit<'a>(&'a self, f: &mut impl FnMut(&'a FieldNode)) {
        f(self);
        match &self.kind {
            NodeKind::List(c)
            | NodeKind::FixedSizeList(c, _)
            | NodeKind::Nullable(c)
            | NodeKind::Wrapper(c) => c.visit(f),
            NodeKind::Map(k, v) => {
                k.visit(f);
                v.visit(f);
            }
            NodeKind::Struct(children) | NodeKind::Union(children) => {
                children.iter().for_each(|c| c.visit(f))
            }
            NodeKind::Primitive(_)
            | NodeKind::String
            | NodeKind::Streamed
            | NodeKind::Bitset(_)
            | NodeKind::Cardinality { .. } => {}
        }
    }
}

/// A top-level field left out of the schema, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedField {
    pub name: String,
    pub type_name: String,
    pub reason: String,
}

/// The Arrow view of a descriptor: the schema, the nodes of its top-level
/// fields, and the fields that could not be mapped.
#[derive(Debug, Clone)]
pub struct ArrowMapping {
    pub schema: Arc<Schema>,
    pub nodes: Vec<FieldNode>,
    pub skipped: Vec<SkippedField>,
}

/// Maps every top-level field of `descriptor` to Arrow. A field this reader
/// cannot read (unknown column type, role or C++ type) is skipped and
/// listed in [`ArrowMapping::skipped`], never an error.
pub fn map_descriptor(descriptor: &Descriptor) -> ArrowMapping {
    let mut nodes = Vec::new();
    let mut skipped = Vec::new();
    for &id in &descriptor.top_level {
        let Some(field) = descriptor.field(id) else {
            continue;
        };
        match build_node(descriptor, field, None, Some(1), 0) {
            Ok(node) => nodes.push(node),
            Err(reason) => skipped.push(SkippedField {
                name: field.name.clone(),
                type_name: field.type_name.clone(),
                reason,
            }),
        }
    }
    // A projected field whose source was skipped is skipped too.
    let skipped_ids: Vec<u32> = descriptor
        .top_level
        .iter()
        .copied()
        .filter(|&id| {
            descriptor
                .field(id)
                .is_some_and(|f| skipped.iter().any(|s| s.name == f.name))
        })
        .collect();
    nodes.retain(|node| {
        let mut depends_on_skipped = None;
        node.visit(&mut |n| {
            if let Some(src) = descriptor
                .field(n.field_id)
                .and_then(|f| f.projection_source)
            {
                let top = descriptor.top_level_of(src);
                if skipped_ids.contains(&top) {
                    depends_on_skipped = descriptor.field(top).map(|f| f.name.clone());
                }
            }
        });
        match depends_on_skipped {
            Some(source) => {
                skipped.push(SkippedField {
                    name: node.arrow.name().clone(),
                    type_name: descriptor
                        .field(node.field_id)
                        .map(|f| f.type_name.clone())
                        .unwrap_or_default(),
                    reason: format!("projected from skipped field {source}"),
                });
                false
            }
            None => true,
        }
    });

    let metadata = HashMap::from([
        (metadata::NAME.to_string(), descriptor.name.clone()),
        (
            metadata::DESCRIPTION.to_string(),
            descriptor.description.clone(),
        ),
        (metadata::WRITER.to_string(), descriptor.writer.clone()),
        (
            metadata::VERSION.to_string(),
            descriptor.version.map(|v| v.to_string()).join("."),
        ),
    ]);
    let fields: Vec<FieldRef> = nodes.iter().map(|n| n.arrow.clone()).collect();
    ArrowMapping {
        schema: Arc::new(Schema::new_with_metadata(fields, metadata)),
        nodes,
        skipped,
    }
}

/// The alternative of a variant whose child holds a null for each entry
/// without a valid alternative: the first alternative whose own values are
/// never null (not an optional, a unique_ptr or a variant), so that a null
/// there means no valid alternative and a null in an optional alternative
/// means that alternative, empty. The first alternative if every one can be
/// null.
pub(crate) fn valueless_slot<'a>(alternatives: impl IntoIterator<Item = &'a NodeKind>) -> usize {
    alternatives
        .into_iter()
        .position(|kind| !matches!(kind, NodeKind::Nullable(_) | NodeKind::Union(_)))
        .unwrap_or(0)
}

fn field_metadata(field: &FieldDescriptor) -> HashMap<String, String> {
    let mut m = HashMap::with_capacity(3);
    m.insert(metadata::TYPE.to_string(), field.type_name.clone());
    if !field.type_alias.is_empty() {
        m.insert(metadata::ALIAS.to_string(), field.type_alias.clone());
    }
    if !field.description.is_empty() {
        m.insert(metadata::DESCRIPTION.to_string(), field.description.clone());
    }
    m
}

fn children<'a>(d: &'a Descriptor, field: &FieldDescriptor) -> Vec<&'a FieldDescriptor> {
    field
        .children
        .iter()
        .filter_map(|&id| d.field(id))
        .collect()
}

fn only_child<'a>(
    d: &'a Descriptor,
    field: &FieldDescriptor,
) -> std::result::Result<&'a FieldDescriptor, String> {
    match children(d, field).as_slice() {
        [child] => Ok(child),
        other => Err(format!(
            "field {} has {} subfields, expected 1",
            field.name,
            other.len()
        )),
    }
}

/// Checks that every representation of `field` has `expected` columns, of
/// known types accepted by `accept`.
fn check_columns(
    d: &Descriptor,
    field: &FieldDescriptor,
    expected: usize,
    accept: &[fn(ColumnType) -> bool],
) -> std::result::Result<(), String> {
    if field.representations.is_empty() && expected > 0 {
        return Err(format!("field {} has no columns", field.name));
    }
    for rep in &field.representations {
        if rep.len() != expected {
            return Err(format!(
                "field {} has {} columns, expected {expected}",
                field.name,
                rep.len()
            ));
        }
        for (k, &col) in rep.iter().enumerate() {
            let Some(column) = d.column(col) else {
                return Err(format!("field {} names missing column {col}", field.name));
            };
            if !column.column_type.is_known() {
                return Err(format!(
                    "column {col} has unknown type {}",
                    column.column_type
                ));
            }
            if let Some(ok) = accept.get(k) {
                if !ok(column.column_type) {
                    return Err(format!(
                        "field {} cannot be read from a {} column",
                        field.name, column.column_type
                    ));
                }
            }
        }
    }
    Ok(())
}

fn is_index(t: ColumnType) -> bool {
    t.is_index()
}

fn is_byte_like(t: ColumnType) -> bool {
    matches!(
        t,
        ColumnType::Char | ColumnType::Byte | ColumnType::Int8 | ColumnType::UInt8
    )
}

fn is_switch(t: ColumnType) -> bool {
    t == ColumnType::Switch
}

fn is_bit(t: ColumnType) -> bool {
    t == ColumnType::Bit
}

fn accepts_leaf(leaf: Leaf) -> fn(ColumnType) -> bool {
    use ColumnType::*;
    match leaf {
        Leaf::Float32 | Leaf::Float64 => |t| {
            matches!(
                t,
                Real16
                    | Real32
                    | Real64
                    | SplitReal16
                    | SplitReal32
                    | SplitReal64
                    | Real32Trunc
                    | Real32Quant
            )
        },
        Leaf::Bool => |t| matches!(t, Bit),
        _ => |t| {
            matches!(
                t,
                Char | Byte
                    | Int8
                    | UInt8
                    | Int16
                    | UInt16
                    | Int32
                    | UInt32
                    | Int64
                    | UInt64
                    | SplitInt16
                    | SplitUInt16
                    | SplitInt32
                    | SplitUInt32
                    | SplitInt64
                    | SplitUInt64
            )
        },
    }
}

fn starts_with_any(name: &str, prefixes: &[&str]) -> bool {
    prefixes.iter().any(|p| name.starts_with(p))
}

/// The node of `field`. Its Arrow field is named `name` (a list's item is
/// "item") or, by default, as the field.
fn build_node(
    d: &Descriptor,
    field: &FieldDescriptor,
    name: Option<&str>,
    per_entry: Option<u64>,
    depth: usize,
) -> std::result::Result<FieldNode, String> {
    if depth > crate::descriptor::MAX_FIELD_DEPTH {
        return Err(format!("field {} is nested too deeply", field.name));
    }
    let type_name = field.type_name.as_str();
    let child_node =
        |child: &FieldDescriptor, per: Option<u64>| build_node(d, child, None, per, depth + 1);
    let item_node = |child: &FieldDescriptor, per: Option<u64>| {
        build_node(d, child, Some("item"), per, depth + 1)
    };
    let mut nullable = false;
    let (kind, data_type) = match field.role {
        StructuralRole::Unknown(code) => return Err(format!("unknown structural role {code:#x}")),
        StructuralRole::Streamer => {
            check_columns(d, field, 2, &[is_index, is_byte_like])?;
            (NodeKind::Streamed, DataType::Binary)
        }
        StructuralRole::Variant => {
            check_columns(d, field, 1, &[is_switch])?;
            let alternatives = children(d, field);
            if alternatives.is_empty() || alternatives.len() > 125 {
                return Err(format!(
                    "variant {} has {} alternatives",
                    field.name,
                    alternatives.len()
                ));
            }
            let mut nodes = Vec::with_capacity(alternatives.len());
            for alt in &alternatives {
                nodes.push(child_node(alt, None)?);
            }
            let slot = valueless_slot(nodes.iter().map(|n| &n.kind));
            if let Some(node) = nodes.get_mut(slot) {
                node.arrow = Arc::new(node.arrow.as_ref().clone().with_nullable(true));
            }
            let union_fields = UnionFields::try_new(
                (0..nodes.len()).map(|i| i as i8),
                nodes.iter().map(|n| n.arrow.clone()),
            )
            .map_err(|e| e.to_string())?;
            let dt = DataType::Union(union_fields, UnionMode::Dense);
            // A union has no validity of its own, but its slots can be null
            // through its children (no valid alternative, an optional
            // alternative): lists and structs holding it must allow nulls.
            nullable = true;
            (NodeKind::Union(nodes), dt)
        }
        StructuralRole::Record => {
            check_columns(d, field, 0, &[])?;
            let mut nodes = Vec::new();
            for child in children(d, field) {
                nodes.push(child_node(child, per_entry)?);
            }
            let fields: Fields = nodes.iter().map(|n| n.arrow.clone()).collect();
            (NodeKind::Struct(nodes), DataType::Struct(fields))
        }
        StructuralRole::Collection => {
            check_columns(d, field, 1, &[is_index])?;
            let child = only_child(d, field)?;
            if starts_with_any(
                type_name,
                &[
                    "std::map<",
                    "std::unordered_map<",
                    "std::multimap<",
                    "std::unordered_multimap<",
                ],
            ) {
                let pair = children(d, child);
                let [key, value] = pair.as_slice() else {
                    return Err(format!("map {} has no key/value pair", field.name));
                };
                let key = child_node(key, None)?;
                let value = child_node(value, None)?;
                let entries = Field::new(
                    "entries",
                    DataType::Struct(Fields::from(vec![
                        key.arrow
                            .as_ref()
                            .clone()
                            .with_name("key")
                            .with_nullable(false),
                        value.arrow.as_ref().clone().with_name("value"),
                    ])),
                    false,
                );
                let dt = DataType::Map(Arc::new(entries), false);
                (NodeKind::Map(Box::new(key), Box::new(value)), dt)
            } else if starts_with_any(type_name, &["std::optional<", "std::unique_ptr<"]) {
                let child = child_node(child, None)?;
                nullable = true;
                let dt = child.arrow.data_type().clone();
                (NodeKind::Nullable(Box::new(child)), dt)
            } else {
                let child = item_node(child, None)?;
                let dt = DataType::List(child.arrow.clone());
                (NodeKind::List(Box::new(child)), dt)
            }
        }
        StructuralRole::Plain => {
            if type_name.starts_with("ROOT::RNTupleCardinality<") {
                check_columns(d, field, 1, &[is_index])?;
                let wide = type_name.contains("64");
                let dt = if wide {
                    DataType::UInt64
                } else {
                    DataType::UInt32
                };
                (NodeKind::Cardinality { wide }, dt)
            } else if type_name == "std::string" {
                check_columns(d, field, 2, &[is_index, is_byte_like])?;
                (NodeKind::String, DataType::Utf8)
            } else if let Some(n) = field.array_size {
                let n_usize = usize::try_from(n)
                    .ok()
                    .filter(|&n| n > 0 && n <= i32::MAX as usize);
                let Some(n_usize) = n_usize else {
                    return Err(format!("array {} has size {n}", field.name));
                };
                let per = per_entry.and_then(|p| p.checked_mul(n));
                if field.children.is_empty() {
                    // std::bitset<N>: one bit column.
                    check_columns(d, field, 1, &[is_bit])?;
                    let item = Field::new("item", DataType::Boolean, false);
                    (
                        NodeKind::Bitset(n_usize),
                        DataType::FixedSizeList(Arc::new(item), n as i32),
                    )
                } else {
                    check_columns(d, field, 0, &[])?;
                    let child = item_node(only_child(d, field)?, per)?;
                    let dt = DataType::FixedSizeList(child.arrow.clone(), n as i32);
                    (NodeKind::FixedSizeList(Box::new(child), n_usize), dt)
                }
            } else if let Some(leaf) = Leaf::from_type_name(type_name) {
                check_columns(d, field, 1, &[accepts_leaf(leaf)])?;
                (NodeKind::Primitive(leaf), leaf.data_type())
            } else if field.children.len() == 1 && field.representations.is_empty() {
                // std::atomic<T> or an enum: one child holding the value.
                let child = child_node(only_child(d, field)?, per_entry)?;
                let dt = child.arrow.data_type().clone();
                (NodeKind::Wrapper(Box::new(child)), dt)
            } else {
                return Err(format!("unknown type {type_name:?}"));
            }
        }
    };
    let name = name.map_or_else(|| field.name.clone(), str::to_string);
    let arrow = Field::new(name, data_type, nullable).with_metadata(field_metadata(field));
    Ok(FieldNode {
        field_id: field.id,
        arrow: Arc::new(arrow),
        kind,
        per_entry,
    })
}

/// Selects the top-level nodes (or nested parts of them) named by `paths`,
/// such as `"Muon_pt"` or `"Jet.pt"`. A nested path keeps the tree down to
/// that field and only it, so only its columns are read.
pub fn project(
    mapping: &ArrowMapping,
    descriptor: &Descriptor,
    paths: &[String],
) -> Result<Vec<FieldNode>> {
    let tops = TopLevel::new(&mapping.nodes, paths.len());
    let mut out: Vec<FieldNode> = Vec::new();
    let mut out_at: HashMap<String, usize> = HashMap::new();
    for path in paths {
        let mut parts = path.split('.');
        let first = parts.next().unwrap_or_default();
        let Some(top) = tops.get(first) else {
            let reason = mapping
                .skipped
                .iter()
                .find(|s| s.name == first)
                .map(|s| format!(" (skipped: {})", s.reason))
                .unwrap_or_default();
            return Err(Error::InvalidArgument(format!(
                "no field {first:?} in ntuple {}{reason}",
                descriptor.name
            )));
        };
        let rest: Vec<&str> = parts.collect();
        let node = prune(top, &rest).ok_or_else(|| {
            Error::InvalidArgument(format!("no field {path:?} in ntuple {}", descriptor.name))
        })?;
        match out_at.get(node.arrow.name()).and_then(|&k| out.get_mut(k)) {
            Some(existing) => *existing = merge(existing, &node),
            None => {
                out_at.insert(node.arrow.name().clone(), out.len());
                out.push(node);
            }
        }
    }
    Ok(out)
}

/// The top-level nodes of a mapping by name. A few names are found by a
/// scan; many (a projection of every field of a NanoAOD file, about a
/// thousand) through a map, or the lookups grow as the square of the fields.
enum TopLevel<'a> {
    Scan(&'a [FieldNode]),
    Map(HashMap<&'a str, &'a FieldNode>),
}

impl<'a> TopLevel<'a> {
    /// Lookups up to this many scan.
    const SCAN_UP_TO: usize = 16;

    fn new(nodes: &'a [FieldNode], lookups: usize) -> Self {
        if lookups <= Self::SCAN_UP_TO {
            return Self::Scan(nodes);
        }
        // Reversed, so that the first of equal names is kept, as by a scan.
        Self::Map(
            nodes
                .iter()
                .rev()
                .map(|n| (n.arrow.name().as_str(), n))
                .collect(),
        )
    }

    fn get(&self, name: &str) -> Option<&'a FieldNode> {
        match self {
            Self::Scan(nodes) => nodes.iter().find(|n| n.arrow.name() == name),
            Self::Map(map) => map.get(name).copied(),
        }
    }
}

/// The node restricted to the subfield at `path` (names below it; `_0` of
/// collections may be left out: `Jet.pt` means `Jet._0.pt`). A `_0` that
/// could name a collection's item or the first member of a tuple below it
/// names the item unless the rest of the path then leads nowhere.
fn prune(node: &FieldNode, path: &[&str]) -> Option<FieldNode> {
    prune_in(node, path, &mut HashSet::new())
}

/// [`prune`], remembering the (node, rest of the path) pairs that led
/// nowhere: each `_0` may be tried two ways, and without them a path of
/// many `_0`s through many optionals would be tried in exponentially many.
fn prune_in(
    node: &FieldNode,
    path: &[&str],
    failed: &mut HashSet<(*const FieldNode, usize)>,
) -> Option<FieldNode> {
    let key = (node as *const FieldNode, path.len());
    if failed.contains(&key) {
        return None;
    }
    let found = prune_once(node, path, failed);
    if found.is_none() {
        failed.insert(key);
    }
    found
}

fn prune_once(
    node: &FieldNode,
    path: &[&str],
    failed: &mut HashSet<(*const FieldNode, usize)>,
) -> Option<FieldNode> {
    let Some((&name, rest)) = path.split_first() else {
        return Some(node.clone());
    };
    let rebuild = |kind: NodeKind, dt: DataType| {
        let arrow = node.arrow.as_ref().clone().with_data_type(dt);
        FieldNode {
            field_id: node.field_id,
            arrow: Arc::new(arrow),
            kind,
            per_entry: node.per_entry,
        }
    };
    match &node.kind {
        NodeKind::Struct(children) => {
            let child = children.iter().find(|c| c.arrow.name() == name)?;
            let child = prune_in(child, rest, failed)?;
            let dt = DataType::Struct(Fields::from(vec![child.arrow.clone()]));
            Some(rebuild(NodeKind::Struct(vec![child]), dt))
        }
        NodeKind::List(child)
        | NodeKind::FixedSizeList(child, _)
        | NodeKind::Nullable(child)
        | NodeKind::Wrapper(child) => {
            let inner = if name == "_0" {
                prune_in(child, rest, failed).or_else(|| prune_in(child, path, failed))?
            } else {
                prune_in(child, path, failed)?
            };
            let (kind, dt) = match &node.kind {
                // A list's item node is named "item" already.
                NodeKind::List(_) => {
                    let dt = DataType::List(inner.arrow.clone());
                    (NodeKind::List(Box::new(inner)), dt)
                }
                NodeKind::FixedSizeList(_, n) => {
                    let dt = DataType::FixedSizeList(inner.arrow.clone(), *n as i32);
                    (NodeKind::FixedSizeList(Box::new(inner), *n), dt)
                }
                NodeKind::Nullable(_) => {
                    let dt = inner.arrow.data_type().clone();
                    (NodeKind::Nullable(Box::new(inner)), dt)
                }
                _ => {
                    let dt = inner.arrow.data_type().clone();
                    (NodeKind::Wrapper(Box::new(inner)), dt)
                }
            };
            Some(rebuild(kind, dt))
        }
        _ => None,
    }
}

/// Two projections of the same top-level field, united (`Jet.pt` and `Jet.eta`).
fn merge(a: &FieldNode, b: &FieldNode) -> FieldNode {
    match (&a.kind, &b.kind) {
        (NodeKind::Struct(ca), NodeKind::Struct(cb)) => {
            let mut children = ca.clone();
            for c in cb {
                match children
                    .iter_mut()
                    .find(|x| x.arrow.name() == c.arrow.name())
                {
                    Some(x) => *x = merge(x, c),
                    None => children.push(c.clone()),
                }
            }
            let dt = DataType::Struct(children.iter().map(|c| c.arrow.clone()).collect());
            FieldNode {
                field_id: a.field_id,
                arrow: Arc::new(a.arrow.as_ref().clone().with_data_type(dt)),
                kind: NodeKind::Struct(children),
                per_entry: a.per_entry,
            }
        }
        (NodeKind::List(x), NodeKind::List(y)) => {
            let inner = merge(x, y);
            let dt = DataType::List(inner.arrow.clone());
            FieldNode {
                field_id: a.field_id,
                arrow: Arc::new(a.arrow.as_ref().clone().with_data_type(dt)),
                kind: NodeKind::List(Box::new(inner)),
                per_entry: a.per_entry,
            }
        }
        _ => b.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `depth` optionals around an empty struct.
    fn optionals(depth: usize) -> FieldNode {
        let mut node = FieldNode {
            field_id: 0,
            arrow: Arc::new(Field::new("s", DataType::Struct(Fields::empty()), true)),
            kind: NodeKind::Struct(Vec::new()),
            per_entry: None,
        };
        for _ in 0..depth {
            let arrow = node.arrow.clone();
            node = FieldNode {
                field_id: 0,
                arrow,
                kind: NodeKind::Nullable(Box::new(node)),
                per_entry: None,
            };
        }
        node
    }

    /// Every `_0` of a path may name an optional's item or a member below;
    /// a path of 60 of them that leads nowhere is refused at once, not
    /// after 2^60 tries.
    #[test]
    fn a_path_of_many_ambiguous_names_is_resolved_in_linear_time() {
        let node = optionals(60);
        let mut path = vec!["_0"; 60];
        assert!(prune(&node, &path).is_some());
        path.push("missing");
        assert!(prune(&node, &path).is_none());
    }
}
