//! The validated, immutable description of one RNTuple.
//!
//! ```text
//!  HeaderEnvelope ─┐
//!                  ├─ merge schema extension ─> Descriptor { fields (tree), columns,
//!  FooterEnvelope ─┘   validate IDs and tree        cluster groups, attribute sets }
//!  PageListEnvelope ── per cluster group, on demand ─> Vec<ClusterDescriptor>
//! ```
//!
//! Field IDs index [`Descriptor::fields`]; physical column IDs index
//! [`Descriptor::columns`]. Every parent comes before its children, so the
//! field tree has no cycles, and its depth is bounded by [`MAX_FIELD_DEPTH`].

// File input never panics: the parsers and decoders check every index and
// length instead (tests may unwrap).
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]

mod column_type;

pub use column_type::{ColumnType, Encoding};

use std::sync::Arc;

use crate::envelope::{
    AttributeSetRecord, ColumnPageRange, EnvelopeLink, ExtraTypeInfoRecord, FooterEnvelope,
    HeaderEnvelope, PageListEnvelope, PageRecord, SchemaDescription,
};
use crate::error::{Error, Result};

/// The deepest field tree accepted (vectors of vectors of ... records).
pub const MAX_FIELD_DEPTH: usize = 64;

/// The structural role of a field (spec: "Field description").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StructuralRole {
    /// A leaf, or a wrapper such as an enum or an atomic.
    Plain,
    Collection,
    Record,
    Variant,
    /// Objects serialised by the ROOT streamer.
    Streamer,
    /// A role this reader does not know; the top-level field is skipped.
    Unknown(u16),
}

impl StructuralRole {
    fn from_code(code: u16) -> Self {
        match code {
            0x00 => StructuralRole::Plain,
            0x01 => StructuralRole::Collection,
            0x02 => StructuralRole::Record,
            0x03 => StructuralRole::Variant,
            0x04 => StructuralRole::Streamer,
            other => StructuralRole::Unknown(other),
        }
    }
}

/// One field of the schema tree.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldDescriptor {
    pub id: u32,
    /// `None` for a top-level field.
    pub parent: Option<u32>,
    pub children: Vec<u32>,
    pub role: StructuralRole,
    pub name: String,
    pub type_name: String,
    pub type_alias: String,
    pub description: String,
    pub field_version: u32,
    pub type_version: u32,
    /// Number of repetitions of a fixed-size array (std::array, bitset).
    pub array_size: Option<u64>,
    /// For a projected field, the field it takes its columns from.
    pub projection_source: Option<u32>,
    pub type_checksum: Option<u32>,
    /// Flag 0x08: a struct-of-arrays collection.
    pub soa: bool,
    /// Column representations: `representations[r]` lists the physical
    /// column IDs of representation `r`, in order. Alias columns of a
    /// projected field appear here as the physical columns they alias.
    pub representations: Vec<Vec<u32>>,
    /// Whether the field came from the footer's schema extension.
    pub from_extension: bool,
}

impl FieldDescriptor {
    /// Whether the field is a projection of another field.
    pub fn is_projected(&self) -> bool {
        self.projection_source.is_some()
    }

    /// Number of columns in each representation.
    pub fn columns_per_representation(&self) -> usize {
        self.representations.first().map_or(0, Vec::len)
    }
}

/// One physical column.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnDescriptor {
    pub id: u32,
    pub field_id: u32,
    pub column_type: ColumnType,
    pub bits_on_storage: u16,
    pub representation_index: u16,
    /// Position of the column within its representation.
    pub index_in_representation: usize,
    /// For a deferred column, the index of its first element; negative
    /// values mean deferred and suppressed.
    pub first_element_index: Option<i64>,
    /// The inclusive range of values (Real32Quant).
    pub value_range: Option<(f64, f64)>,
    pub flags: u16,
}

/// A cluster group: an entry range and the link to its page list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterGroup {
    pub index: usize,
    pub min_entry: u64,
    pub entry_span: u64,
    pub n_clusters: u32,
    /// ID of the group's first cluster.
    pub first_cluster_id: u64,
    pub page_list: EnvelopeLink,
}

/// One cluster with the pages of every column, from a page list envelope.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterDescriptor {
    pub id: u64,
    pub first_entry: u64,
    pub n_entries: u64,
    /// `columns[physical id]`; columns added after the page list was
    /// written are missing at the end.
    pub columns: Vec<ColumnPageRange>,
}

impl ClusterDescriptor {
    /// The page range of a column, if the page list has it and the column is
    /// not suppressed in this cluster.
    pub fn column(&self, id: u32) -> Option<&ColumnPageRange> {
        self.columns
            .get(id as usize)
            .filter(|c| c.element_offset.is_some())
    }

    /// Total elements of a column in this cluster (0 if absent).
    pub fn n_elements(&self, id: u32) -> u64 {
        self.column(id)
            .map_or(0, |c| c.pages.iter().map(|p| u64::from(p.n_elements)).sum())
    }

    /// The stored byte ranges of column `id`'s pages that the entries
    /// `part` (counted from the cluster's first entry) reach if the
    /// column's elements are spread evenly over the cluster's entries:
    /// exact for a column of one element an entry (with the element before
    /// the part, where a collection's offsets start), a guess for
    /// collections' items, which their offsets confirm or correct.
    #[cfg(feature = "datafusion")]
    pub(crate) fn even_share_pages(
        &self,
        id: u32,
        part: &std::ops::Range<u64>,
    ) -> Vec<std::ops::Range<u64>> {
        let Some(column) = self.column(id) else {
            return Vec::new();
        };
        let entries = u128::from(self.n_entries.max(1));
        let total = u128::from(self.n_elements(id));
        let share = |entry: u64, up: bool| -> u128 {
            let scaled = total * u128::from(entry);
            scaled / entries + u128::from(up && scaled % entries != 0)
        };
        let (from, to) = (
            share(part.start, false).saturating_sub(1),
            share(part.end, true),
        );
        let mut ranges = Vec::new();
        let mut at = 0u128;
        for page in &column.pages {
            let next = at + u128::from(page.n_elements);
            if next > from && at < to {
                ranges.push(page.stored_range());
            }
            at = next;
        }
        ranges
    }

    /// Total compressed bytes of the cluster's pages.
    pub fn compressed_bytes(&self) -> u64 {
        self.columns
            .iter()
            .flat_map(|c| c.pages.iter())
            .map(|p: &PageRecord| p.locator.size)
            .sum()
    }
}

/// A list of a [`Descriptor`] that the descriptors of RNTuples with the same
/// schema share: a slice (`descriptor.fields[i]`, `.iter()`, `for f in
/// &descriptor.fields`), cheap to clone.
#[derive(Debug, Clone, PartialEq)]
pub struct Shared<T>(Arc<[T]>);

impl<T> Shared<T> {
    /// Whether `a` and `b` are the same list, not just equal ones.
    pub fn ptr_eq(a: &Self, b: &Self) -> bool {
        Arc::ptr_eq(&a.0, &b.0)
    }
}

impl<T> From<Vec<T>> for Shared<T> {
    fn from(items: Vec<T>) -> Self {
        Self(items.into())
    }
}

impl<T> std::ops::Deref for Shared<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        &self.0
    }
}

impl<T: PartialEq, const N: usize> PartialEq<[T; N]> for Shared<T> {
    fn eq(&self, other: &[T; N]) -> bool {
        self.0[..] == other[..]
    }
}

impl<T: PartialEq> PartialEq<Vec<T>> for Shared<T> {
    fn eq(&self, other: &Vec<T>) -> bool {
        self.0[..] == other[..]
    }
}

impl<'a, T> IntoIterator for &'a Shared<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

/// Everything the header and footer say about one RNTuple.
#[derive(Debug, Clone, PartialEq)]
pub struct Descriptor {
    pub name: String,
    pub description: String,
    pub writer: String,
    /// Format version from the anchor: epoch, major, minor, patch.
    pub version: [u16; 4],
    /// Feature flag bits of header and footer together.
    pub feature_flags: Vec<u64>,
    pub header_checksum: u64,
    /// The schema's parts are shared by the descriptors of RNTuples with the
    /// same header (see [`Descriptor::with_footer`]).
    pub fields: Shared<FieldDescriptor>,
    pub columns: Shared<ColumnDescriptor>,
    pub extra_type_info: Shared<ExtraTypeInfoRecord>,
    pub cluster_groups: Vec<ClusterGroup>,
    pub attribute_sets: Vec<AttributeSetRecord>,
    /// IDs of the top-level fields, in order.
    pub top_level: Shared<u32>,
    pub n_entries: u64,
    pub n_clusters: u64,
}

impl Descriptor {
    /// Links header and footer into one validated descriptor.
    pub fn new(
        header: HeaderEnvelope,
        mut footer: FooterEnvelope,
        version: [u16; 4],
    ) -> Result<Self> {
        let extension = std::mem::take(&mut footer.extension);
        Self::schema(header, extension, version)?.with_footer(footer)
    }

    /// The descriptor of the schema alone: the header's fields and columns
    /// with the footer's schema extension, validated, and no clusters.
    /// [`with_footer`](Self::with_footer) completes it.
    pub fn schema(
        mut header: HeaderEnvelope,
        extension: SchemaDescription,
        version: [u16; 4],
    ) -> Result<Self> {
        let mut builder = SchemaBuilder::default();
        builder.add(std::mem::take(&mut header.schema), false)?;
        builder.add(extension, true)?;
        let SchemaBuilder {
            mut fields,
            mut columns,
            aliases,
            extra_type_info,
        } = builder;
        link_columns(&mut fields, &mut columns, &aliases)?;
        check_tree(&fields)?;
        let top_level = fields
            .iter()
            .filter(|f| f.parent.is_none())
            .map(|f| f.id)
            .collect::<Vec<_>>();
        Ok(Descriptor {
            name: header.name,
            description: header.description,
            writer: header.writer,
            version,
            feature_flags: header.feature_flags,
            header_checksum: header.checksum,
            fields: Shared::from(fields),
            columns: Shared::from(columns),
            extra_type_info: Shared::from(extra_type_info),
            cluster_groups: Vec::new(),
            attribute_sets: Vec::new(),
            top_level: Shared::from(top_level),
            n_entries: 0,
            n_clusters: 0,
        })
    }

    /// This schema (from [`schema`](Self::schema), whose extension was the
    /// footer's) with the footer's clusters and attribute sets. The copy
    /// shares the schema's fields and columns.
    pub fn with_footer(&self, footer: FooterEnvelope) -> Result<Self> {
        crate::error::verify_checksum(
            "header checksum in the footer",
            0,
            footer.header_checksum,
            self.header_checksum,
        )?;
        let mut feature_flags = self.feature_flags.clone();
        for bit in &footer.feature_flags {
            if !feature_flags.contains(bit) {
                feature_flags.push(*bit);
            }
        }
        crate::envelope::check_feature_flags(&feature_flags)?;

        let mut cluster_groups = Vec::with_capacity(footer.cluster_groups.len());
        let mut first_cluster_id = 0u64;
        let mut n_entries = 0u64;
        for (index, g) in footer.cluster_groups.iter().enumerate() {
            cluster_groups.push(ClusterGroup {
                index,
                min_entry: g.min_entry,
                entry_span: g.entry_span,
                n_clusters: g.n_clusters,
                first_cluster_id,
                page_list: g.page_list,
            });
            first_cluster_id += u64::from(g.n_clusters);
            let end = g.min_entry.checked_add(g.entry_span).ok_or_else(|| {
                Error::malformed(
                    "footer envelope",
                    0,
                    format!("cluster group {index} entry range overflows"),
                )
            })?;
            n_entries = n_entries.max(end);
        }

        Ok(Descriptor {
            feature_flags,
            cluster_groups,
            attribute_sets: footer.attribute_sets,
            n_entries,
            n_clusters: first_cluster_id,
            ..self.clone()
        })
    }

    /// The field with this ID.
    pub fn field(&self, id: u32) -> Option<&FieldDescriptor> {
        self.fields.get(id as usize)
    }

    /// The column with this physical ID.
    pub fn column(&self, id: u32) -> Option<&ColumnDescriptor> {
        self.columns.get(id as usize)
    }

    /// The field at a `.`-separated path of names, such as `Jet._0.pt`.
    pub fn find_field(&self, path: &str) -> Option<&FieldDescriptor> {
        let mut parts = path.split('.');
        let first = parts.next()?;
        let mut field = self
            .top_level
            .iter()
            .filter_map(|&id| self.field(id))
            .find(|f| f.name == first)?;
        for part in parts {
            field = field
                .children
                .iter()
                .filter_map(|&id| self.field(id))
                .find(|f| f.name == part)?;
        }
        Some(field)
    }

    /// The `.`-separated path of a field.
    pub fn field_path(&self, id: u32) -> String {
        let mut names = Vec::new();
        let mut current = self.field(id);
        while let Some(f) = current {
            names.push(f.name.as_str());
            current = f.parent.and_then(|p| self.field(p));
        }
        names.reverse();
        names.join(".")
    }

    /// The top-level ancestor of a field.
    pub fn top_level_of(&self, id: u32) -> u32 {
        let mut id = id;
        while let Some(parent) = self.field(id).and_then(|f| f.parent) {
            id = parent;
        }
        id
    }

    /// Validates a parsed page list of cluster group `group` and returns its clusters.
    pub fn clusters_from_page_list(
        &self,
        group: &ClusterGroup,
        page_list: PageListEnvelope,
    ) -> Result<Vec<ClusterDescriptor>> {
        let what = "page list envelope";
        let at = group.page_list.locator.offset;
        crate::error::verify_checksum(
            "header checksum in the page list",
            at,
            page_list.header_checksum,
            self.header_checksum,
        )?;
        if page_list.clusters.len() != group.n_clusters as usize {
            return Err(Error::malformed(
                what,
                at,
                format!(
                    "cluster group {} declares {} clusters, its page list has {}",
                    group.index,
                    group.n_clusters,
                    page_list.clusters.len()
                ),
            ));
        }
        let mut out = Vec::with_capacity(page_list.clusters.len());
        for (i, (summary, columns)) in page_list
            .clusters
            .into_iter()
            .zip(page_list.columns)
            .enumerate()
        {
            let id = group.first_cluster_id + i as u64;
            if summary.flags & 0x01 != 0 {
                return Err(Error::unsupported(format!(
                    "sharded cluster {id} (cluster flag 0x01)"
                )));
            }
            if summary.n_entries == 0 {
                return Err(Error::malformed(what, at, format!("cluster {id} is empty")));
            }
            if summary
                .first_entry
                .checked_add(summary.n_entries)
                .is_none_or(|end| end > self.n_entries)
            {
                return Err(Error::malformed(
                    what,
                    at,
                    format!(
                        "cluster {id} covers entries {}+{}, past the {} entries of the ntuple",
                        summary.first_entry, summary.n_entries, self.n_entries
                    ),
                ));
            }
            if columns.len() > self.columns.len() {
                return Err(Error::malformed(
                    what,
                    at,
                    format!(
                        "cluster {id} lists {} columns, the schema has {}",
                        columns.len(),
                        self.columns.len()
                    ),
                ));
            }
            out.push(ClusterDescriptor {
                id,
                first_entry: summary.first_entry,
                n_entries: summary.n_entries,
                columns,
            });
        }
        Ok(out)
    }
}

#[derive(Default)]
struct SchemaBuilder {
    fields: Vec<FieldDescriptor>,
    columns: Vec<ColumnDescriptor>,
    aliases: Vec<(u32, u32)>,
    extra_type_info: Vec<ExtraTypeInfoRecord>,
}

impl SchemaBuilder {
    /// Adds the fields and columns of `schema`, taking its strings.
    fn add(&mut self, schema: SchemaDescription, from_extension: bool) -> Result<()> {
        let what = if from_extension {
            "schema extension"
        } else {
            "header envelope"
        };
        self.fields.reserve(schema.fields.len());
        for record in schema.fields {
            let id = u32::try_from(self.fields.len())
                .map_err(|_| Error::malformed(what, 0, "too many fields"))?;
            let parent = if record.parent_id == id {
                None
            } else {
                Some(record.parent_id)
            };
            if let Some(p) = parent {
                if p >= id {
                    return Err(Error::malformed(
                        what,
                        0,
                        format!(
                            "field {id} ({}) names parent {p}, which does not come before it",
                            record.name
                        ),
                    ));
                }
            }
            self.fields.push(FieldDescriptor {
                id,
                parent,
                children: Vec::new(),
                role: StructuralRole::from_code(record.structural_role),
                name: record.name,
                type_name: record.type_name,
                type_alias: record.type_alias,
                description: record.description,
                field_version: record.field_version,
                type_version: record.type_version,
                array_size: record.array_size,
                projection_source: record.source_field_id,
                type_checksum: record.type_checksum,
                soa: record.flags & 0x08 != 0,
                representations: Vec::new(),
                from_extension,
            });
            if let Some(p) = parent {
                if let Some(parent) = self.fields.get_mut(p as usize) {
                    parent.children.push(id);
                }
            }
        }
        self.columns.reserve(schema.columns.len());
        for record in &schema.columns {
            let id = u32::try_from(self.columns.len())
                .map_err(|_| Error::malformed(what, 0, "too many columns"))?;
            let column_type = ColumnType::from_code(record.column_type);
            if let Some((lo, hi)) = column_type.bits_range() {
                if record.bits_on_storage < lo || record.bits_on_storage > hi {
                    return Err(Error::malformed(
                        what,
                        0,
                        format!(
                            "column {id} of type {column_type} has {} bits on storage",
                            record.bits_on_storage
                        ),
                    ));
                }
            }
            if column_type == ColumnType::Real32Quant && record.value_range.is_none() {
                return Err(Error::malformed(
                    what,
                    0,
                    format!("Real32Quant column {id} has no value range"),
                ));
            }
            if let Some((min, max)) = record.value_range {
                if !min.is_finite() || !max.is_finite() || min > max {
                    return Err(Error::malformed(
                        what,
                        0,
                        format!("column {id} has value range [{min}, {max}]"),
                    ));
                }
            }
            self.columns.push(ColumnDescriptor {
                id,
                field_id: record.field_id,
                column_type,
                bits_on_storage: record.bits_on_storage,
                representation_index: record.representation_index,
                index_in_representation: 0,
                first_element_index: record.first_element_index,
                value_range: record.value_range,
                flags: record.flags,
            });
        }
        self.aliases.extend(
            schema
                .alias_columns
                .iter()
                .map(|a| (a.physical_column_id, a.field_id)),
        );
        self.extra_type_info.extend(schema.extra_type_info);
        Ok(())
    }
}

/// Attaches physical and alias columns to their fields, grouped by representation.
fn link_columns(
    fields: &mut [FieldDescriptor],
    columns: &mut [ColumnDescriptor],
    aliases: &[(u32, u32)],
) -> Result<()> {
    let what = "schema description";
    let n_fields = fields.len();
    for column in columns.iter_mut() {
        let field = fields.get_mut(column.field_id as usize).ok_or_else(|| {
            Error::malformed(
                what,
                0,
                format!(
                    "column {} belongs to field {}, of {n_fields}",
                    column.id, column.field_id
                ),
            )
        })?;
        if field.is_projected() {
            return Err(Error::malformed(
                what,
                0,
                format!(
                    "physical column {} belongs to projected field {}",
                    column.id, field.name
                ),
            ));
        }
        let r = column.representation_index as usize;
        if r > field.representations.len() {
            return Err(Error::malformed(
                what,
                0,
                format!(
                    "column {} has representation {r} before representation {}",
                    column.id,
                    field.representations.len()
                ),
            ));
        }
        if r == field.representations.len() {
            field.representations.push(Vec::new());
        }
        if let Some(rep) = field.representations.get_mut(r) {
            column.index_in_representation = rep.len();
            rep.push(column.id);
        }
    }
    for &(physical, field_id) in aliases {
        let column = columns.get(physical as usize).ok_or_else(|| {
            Error::malformed(
                what,
                0,
                format!(
                    "alias column names physical column {physical}, of {}",
                    columns.len()
                ),
            )
        })?;
        let field = fields.get_mut(field_id as usize).ok_or_else(|| {
            Error::malformed(
                what,
                0,
                format!("alias column names field {field_id}, of {n_fields}"),
            )
        })?;
        if !field.is_projected() {
            return Err(Error::malformed(
                what,
                0,
                format!(
                    "alias column attached to field {}, which is not projected",
                    field.name
                ),
            ));
        }
        let r = column.representation_index as usize;
        while field.representations.len() <= r {
            field.representations.push(Vec::new());
        }
        if let Some(rep) = field.representations.get_mut(r) {
            rep.push(physical);
        }
    }
    for field in fields.iter() {
        let n = field.columns_per_representation();
        if field.representations.iter().any(|r| r.len() != n) {
            return Err(Error::malformed(
                what,
                0,
                format!(
                    "field {} has representations with different numbers of columns",
                    field.name
                ),
            ));
        }
        if let Some(source) = field.projection_source {
            match fields.get(source as usize) {
                Some(s) if !s.is_projected() => {}
                _ => {
                    return Err(Error::malformed(
                        what,
                        0,
                        format!("projected field {} names source field {source}, which is missing or projected", field.name),
                    ))
                }
            }
        }
    }
    Ok(())
}

/// Bounds the depth of the field tree (parents precede children, so it has no cycles).
fn check_tree(fields: &[FieldDescriptor]) -> Result<()> {
    let mut depth = vec![0usize; fields.len()];
    for field in fields {
        let d = match field.parent {
            None => 0,
            Some(p) => depth.get(p as usize).copied().unwrap_or(0) + 1,
        };
        if d > MAX_FIELD_DEPTH {
            return Err(Error::malformed(
                "schema description",
                0,
                format!(
                    "field {} is nested {d} levels deep, more than {MAX_FIELD_DEPTH}",
                    field.name
                ),
            ));
        }
        if let Some(slot) = depth.get_mut(field.id as usize) {
            *slot = d;
        }
    }
    Ok(())
}
