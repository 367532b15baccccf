//! The page list envelope (spec: "Page list envelope").

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use super::frame::{read_list_frame, read_locator, read_record_frame, Locator};
use super::{open_envelope, EnvelopeType};
use crate::error::{Error, Result};

/// One cluster of a cluster group: its entry range and flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClusterSummary {
    pub first_entry: u64,
    pub n_entries: u64,
    /// The high 8 bits; 0x01 (sharded) is refused by the descriptor.
    pub flags: u8,
}

/// One page: its element count, locator and whether an XXH3 checksum of
/// the compressed bytes follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRecord {
    pub n_elements: u32,
    pub has_checksum: bool,
    pub locator: Locator,
}

impl PageRecord {
    /// The page's stored bytes in the file, with the checksum that follows
    /// them.
    pub fn stored_range(&self) -> std::ops::Range<u64> {
        let len = self.locator.size + if self.has_checksum { 8 } else { 0 };
        self.locator.offset..self.locator.offset.saturating_add(len)
    }
}

/// The pages of one column in one cluster, as a slice: a run of the page
/// records that all columns of a page list share, so that a page list of
/// thousands of columns is one allocation, not one a column. Cheap to clone.
#[derive(Clone, Default)]
pub struct Pages {
    records: Arc<[PageRecord]>,
    start: u32,
    end: u32,
}

impl Deref for Pages {
    type Target = [PageRecord];

    fn deref(&self) -> &[PageRecord] {
        self.records
            .get(self.start as usize..self.end as usize)
            .unwrap_or_default()
    }
}

impl<'a> IntoIterator for &'a Pages {
    type Item = &'a PageRecord;
    type IntoIter = std::slice::Iter<'a, PageRecord>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl From<Vec<PageRecord>> for Pages {
    fn from(records: Vec<PageRecord>) -> Self {
        let end = u32::try_from(records.len()).unwrap_or(u32::MAX);
        Self {
            records: records.into(),
            start: 0,
            end,
        }
    }
}

impl fmt::Debug for Pages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl PartialEq for Pages {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for Pages {}

/// The pages of one column in one cluster.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ColumnPageRange {
    pub pages: Pages,
    /// Index of the column's first element in this cluster; `None` for a
    /// suppressed column (a negative offset on disk).
    pub element_offset: Option<u64>,
    /// Compression settings (algorithm * 100 + level); absent when suppressed.
    pub compression: Option<u32>,
}

/// The parsed page list envelope of one cluster group.
#[derive(Debug, Clone, PartialEq)]
pub struct PageListEnvelope {
    pub header_checksum: u64,
    pub clusters: Vec<ClusterSummary>,
    /// `columns[cluster][physical column]`.
    pub columns: Vec<Vec<ColumnPageRange>>,
}

/// Parses a decompressed page list envelope.
pub fn parse_page_list(data: &[u8], file_offset: u64) -> Result<PageListEnvelope> {
    let (mut c, _) = open_envelope(data, EnvelopeType::PageList, file_offset)?;
    let header_checksum = c.u64_le()?;

    let (mut list, n) = read_list_frame(&mut c, 8 + 16)?;
    let mut clusters = Vec::with_capacity(n);
    for _ in 0..n {
        let mut r = read_record_frame(&mut list)?;
        let first_entry = r.u64_le()?;
        let packed = r.u64_le()?;
        clusters.push(ClusterSummary {
            first_entry,
            n_entries: packed & ((1 << 56) - 1),
            flags: (packed >> 56) as u8,
        });
    }

    // Outer list: clusters; middle: columns; inner: pages + element offset.
    let (mut outer, n_clusters) = read_list_frame(&mut c, 12)?;
    if n_clusters != clusters.len() {
        return Err(Error::malformed(
            "page list envelope",
            file_offset,
            format!(
                "{} cluster summaries but page locations for {n_clusters} clusters",
                clusters.len()
            ),
        ));
    }
    // Every page of the envelope in one list; each column a run of it.
    let mut records = Vec::new();
    let mut runs = Vec::with_capacity(n_clusters);
    for _ in 0..n_clusters {
        let (mut middle, n_columns) = read_list_frame(&mut outer, 12 + 8)?;
        let mut cluster_runs = Vec::with_capacity(n_columns);
        for _ in 0..n_columns {
            // A page item: i32 element count (sign: checksum) and a 12-byte locator.
            let (mut inner, n_pages) = read_list_frame(&mut middle, 4 + 12)?;
            let start = records.len();
            records.reserve(n_pages);
            for _ in 0..n_pages {
                let count = inner.i32_le()?;
                let locator = read_locator(&mut inner)?;
                records.push(PageRecord {
                    n_elements: count.unsigned_abs(),
                    has_checksum: count < 0,
                    locator,
                });
            }
            let offset = inner.i64_le()?;
            let (element_offset, compression) = if offset < 0 {
                (None, None)
            } else {
                (Some(offset as u64), Some(inner.u32_le()?))
            };
            cluster_runs.push((start, records.len(), element_offset, compression));
        }
        runs.push(cluster_runs);
    }
    if u32::try_from(records.len()).is_err() {
        return Err(Error::malformed(
            "page list envelope",
            file_offset,
            "more than 2^32 pages",
        ));
    }
    let records: Arc<[PageRecord]> = records.into();
    let columns = runs
        .into_iter()
        .map(|cluster_runs| {
            cluster_runs
                .into_iter()
                .map(
                    |(start, end, element_offset, compression)| ColumnPageRange {
                        // Both within the records, whose count fits (above).
                        pages: Pages {
                            records: records.clone(),
                            start: start as u32,
                            end: end as u32,
                        },
                        element_offset,
                        compression,
                    },
                )
                .collect()
        })
        .collect();
    Ok(PageListEnvelope {
        header_checksum,
        clusters,
        columns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::test_util::{envelope, Writer};

    #[test]
    fn parses_pages_checksums_and_suppressed_columns() {
        let mut w = Writer::default();
        w.u64(0xABC);
        w.list(1, |w| {
            w.record(|w| {
                w.u64(10).u64(5 | (0x80 << 56));
            });
        });
        w.list(1, |w| {
            w.list(2, |w| {
                w.list(2, |w| {
                    w.i32(3).i32(12).u64(1000);
                    w.i32(-2).i32(8).u64(1020);
                    w.i64(40).u32(505);
                });
                w.list(0, |w| {
                    w.i64(i64::MIN);
                });
            });
        });
        let p = parse_page_list(&envelope(0x03, &w.buf), 0).unwrap();
        assert_eq!(
            p.clusters[0],
            ClusterSummary {
                first_entry: 10,
                n_entries: 5,
                flags: 0x80
            }
        );
        let col = &p.columns[0][0];
        assert_eq!(col.element_offset, Some(40));
        assert_eq!(col.compression, Some(505));
        assert_eq!(col.pages[1].n_elements, 2);
        assert!(col.pages[1].has_checksum && !col.pages[0].has_checksum);
        assert_eq!(p.columns[0][1].element_offset, None);
    }

    /// Every column's pages are its own run of one list of page records
    /// that all columns of all clusters share.
    #[test]
    fn columns_are_runs_of_one_list_of_pages() {
        let mut w = Writer::default();
        w.u64(0);
        w.list(2, |w| {
            w.record(|w| {
                w.u64(0).u64(5);
            });
            w.record(|w| {
                w.u64(5).u64(5);
            });
        });
        let mut offset = 0;
        w.list(2, |w| {
            for _ in 0..2 {
                w.list(3, |w| {
                    for n_pages in [2u64, 0, 3] {
                        w.list(n_pages as u32, |w| {
                            for k in 0..n_pages {
                                offset += 100;
                                w.i32(k as i32 + 1).i32(10).u64(offset);
                            }
                            w.i64(0).u32(505);
                        });
                    }
                });
            }
        });
        let p = parse_page_list(&envelope(0x03, &w.buf), 0).unwrap();
        let offsets: Vec<Vec<Vec<u64>>> = p
            .columns
            .iter()
            .map(|cluster| {
                let pages =
                    |c: &ColumnPageRange| c.pages.iter().map(|p| p.locator.offset).collect();
                cluster.iter().map(pages).collect()
            })
            .collect();
        assert_eq!(
            offsets,
            [
                [vec![100, 200], vec![], vec![300, 400, 500]],
                [vec![600, 700], vec![], vec![800, 900, 1000]]
            ]
        );
        let shared = &p.columns[0][0].pages.records;
        assert_eq!(shared.len(), 10);
        for column in p.columns.iter().flatten() {
            assert!(Arc::ptr_eq(shared, &column.pages.records));
        }
        let copy = p.columns[1][2].pages.clone();
        assert_eq!(copy, Pages::from(copy.to_vec()));
        assert_eq!(copy.len(), 3);
    }

    #[test]
    fn huge_page_count_in_small_envelope_is_refused() {
        let mut w = Writer::default();
        w.u64(0);
        w.list(1, |w| {
            w.record(|w| {
                w.u64(0).u64(1);
            });
        });
        w.list(1, |w| {
            w.list(1, |w| {
                w.i64(-(12 + 8)).u32(u32::MAX).i64(0);
            });
        });
        assert!(matches!(
            parse_page_list(&envelope(0x03, &w.buf), 0),
            Err(Error::Malformed { .. })
        ));
    }
}
