//! What each fuzz target does with its input, shared with the regression
//! tests (`tests/fuzz_regressions.rs` includes this file), so that a crash
//! input replays exactly in `cargo test`.

use bytes::Bytes;
use rntuple::compression::decompress_to_vec;
use rntuple::descriptor::{ColumnType, Descriptor};
use rntuple::encoding::{
    decode_bits, decode_bits_in, decode_index, decode_switch, decode_values, decode_values_in,
    BitVec, ColumnCoding,
};
use rntuple::envelope::{parse_footer, parse_header, parse_page_list};
use rntuple::{RNTupleFile, RNTupleReaderBuilder};
use xxhash_rust::xxh3::xxh3_64;

/// `open_read`: the bytes opened as a ROOT file; every RNTuple listed, every
/// linked attribute set opened, every batch of every field read. An input
/// of odd length is read in batches of 7 entries, so that batches take
/// parts of pages; an even one in the default batch size. Pages and batches
/// are limited to 64 and 256 MiB.
pub fn open_read(data: &[u8]) {
    let batch_size = if data.len() % 2 == 1 { 7 } else { 65_536 };
    let Ok(file) = RNTupleFile::from_bytes(Bytes::copy_from_slice(data)) else {
        return;
    };
    // Limits well below the fuzzer's memory limit: a claim the limits allow
    // is not a bug, one that gets past them is.
    let file = file.with_limits(rntuple::Limits {
        max_page_bytes: 64 << 20,
        max_batch_bytes: 256 << 20,
    });
    for info in file.ntuples() {
        let Ok(ntuple) = file.ntuple(Some(&info.path)) else {
            continue;
        };
        for set in ntuple.attribute_sets() {
            let _ = ntuple.attribute_set(&set.name);
        }
        let Ok(reader) = RNTupleReaderBuilder::new(ntuple)
            .with_batch_size(batch_size)
            .build()
        else {
            continue;
        };
        for batch in reader {
            if batch.is_err() {
                break;
            }
        }
    }
}

/// Wraps a payload into an envelope with the right type, length and XXH3.
pub fn envelope(type_id: u16, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u64 + 16;
    let mut out = Vec::with_capacity(payload.len() + 16);
    out.extend_from_slice(&((len << 16) | u64::from(type_id)).to_le_bytes());
    out.extend_from_slice(payload);
    let sum = xxh3_64(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// The input of `envelopes` for three envelope payloads.
pub fn envelopes_input(header: &[u8], footer: &[u8], page_list: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&(header.len() as u32).to_le_bytes());
    out.extend_from_slice(&(footer.len() as u32).to_le_bytes());
    out.extend_from_slice(header);
    out.extend_from_slice(footer);
    out.extend_from_slice(page_list);
    out
}

/// `envelopes`: a header, a footer and a page list envelope parsed, the
/// descriptor and Arrow mapping built from them, and the clusters of the
/// page list checked against the first cluster group.
///
/// Input: `u32 LE` header payload length, `u32 LE` footer payload length,
/// the header payload, the footer payload, and the page list payload (the
/// rest). Each payload is wrapped into an envelope with the right type,
/// length and checksum, so the fuzzer explores the parsers behind the
/// checksum; the footer's and page list's copies of the header checksum are
/// set to match for the same reason.
pub fn envelopes(data: &[u8]) {
    let Some((head, rest)) = data.split_first_chunk::<8>() else {
        return;
    };
    let h = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
    let f = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
    let (header, rest) = rest.split_at(h.min(rest.len()));
    let (footer, page_list) = rest.split_at(f.min(rest.len()));

    let header = parse_header(&envelope(0x01, header), 0);
    let footer = parse_footer(&envelope(0x02, footer), 0);
    let page_list = parse_page_list(&envelope(0x03, page_list), 0);
    let (Ok(header), Ok(mut footer)) = (header, footer) else {
        return;
    };
    footer.header_checksum = header.checksum;
    let checksum = header.checksum;
    let Ok(descriptor) = Descriptor::new(header, footer, [1, 0, 0, 0]) else {
        return;
    };
    for id in 0..descriptor.fields.len() as u32 {
        let _ = descriptor.field_path(id);
        let _ = descriptor.top_level_of(id);
    }
    let _ = rntuple::arrow::map_descriptor(&descriptor);
    if let (Ok(mut page_list), Some(group)) = (page_list, descriptor.cluster_groups.first()) {
        page_list.header_checksum = checksum;
        let _ = descriptor.clusters_from_page_list(group, page_list);
    }
}

/// Mode bit of `pages`: take the element count from the page size.
pub const PAGE_COUNT_FROM_SIZE: u8 = 1;
/// Mode bit of `pages`: the page bytes are a compression block.
pub const PAGE_COMPRESSED: u8 = 2;

/// Real32Quant value ranges `pages` picks from.
const RANGES: [(f64, f64); 4] = [(-1.0, 1.0), (0.0, 0.0), (-1e30, 1e30), (f64::MIN, f64::MAX)];

/// The input of `pages` for one page.
pub fn pages_input(column_type: u16, bits: u16, mode: u8, n: u32, page: &[u8]) -> Vec<u8> {
    let mut out = vec![column_type as u8, bits as u8, mode];
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(page);
    out
}

/// `pages`: one page decoded as every value type, as offsets, as booleans
/// and as a switch column, optionally behind a compression block.
///
/// Input: column type code (u8, modulo 32: codes 0x1E and 0x1F stand for
/// unknown types), bits on storage (u8; 0: the type's natural width), mode
/// (u8), element count (u32 LE), then the page bytes. Mode bit 0 takes the
/// element count from the page size instead, so that most inputs have a
/// consistent size; bit 1 inflates the page from a ROOT compression block
/// first (the element count, modulo 2^20, fixes the uncompressed size);
/// bits 2-3 pick one of four Real32Quant value ranges.
pub fn pages(data: &[u8]) {
    let Some((head, page)) = data.split_first_chunk::<7>() else {
        return;
    };
    let column_type = ColumnType::from_code(u16::from(head[0] % 32));
    let natural = ColumnCoding::new(column_type).bits_on_storage;
    let bits = match u16::from(head[1]) {
        0 => natural,
        b => b,
    };
    let mode = head[2];
    let (min, max) = RANGES[usize::from(mode >> 2) & 3];
    let coding = ColumnCoding::new(column_type)
        .with_bits_on_storage(bits)
        .with_value_range(min, max);
    let declared = u32::from_le_bytes([head[3], head[4], head[5], head[6]]) as usize;

    let inflated;
    let (page, n) = if mode & PAGE_COMPRESSED != 0 {
        let n = declared % (1 << 20);
        let Some(len) = coding.page_len(n) else {
            return;
        };
        match decompress_to_vec(page, len, 0) {
            Ok(v) => {
                inflated = v;
                (inflated.as_slice(), n)
            }
            Err(_) => return,
        }
    } else if mode & PAGE_COUNT_FROM_SIZE != 0 {
        let bits = usize::from(coding.bits_on_storage).max(1);
        (page, page.len() * 8 / bits)
    } else {
        (page, declared)
    };

    let _ = decode_values::<f32>(&coding, page, n, 0, &mut Vec::new());
    let _ = decode_values::<f64>(&coding, page, n, 0, &mut Vec::new());
    let _ = decode_values::<i8>(&coding, page, n, 0, &mut Vec::new());
    let _ = decode_values::<u16>(&coding, page, n, 0, &mut Vec::new());
    let _ = decode_values::<i32>(&coding, page, n, 0, &mut Vec::new());
    let _ = decode_values::<u64>(&coding, page, n, 0, &mut Vec::new());
    let _ = decode_index(&coding, page, n, 0, &mut Vec::new());
    let _ = decode_switch(&coding, page, n, 0, &mut Vec::new(), &mut Vec::new());

    // A part of a page decodes to the same part of the whole page.
    let sub = n / 3..n - n / 5;
    let mut whole = Vec::new();
    if decode_values::<f64>(&coding, page, n, 0, &mut whole).is_ok() {
        let mut part = Vec::new();
        let decoded = decode_values_in::<f64>(&coding, page, n, sub.clone(), 0, &mut part);
        assert!(decoded.is_ok(), "a part of a page that decodes whole");
        let expected = whole.get(sub.clone()).unwrap_or_default();
        assert!(part
            .iter()
            .map(|v| v.to_bits())
            .eq(expected.iter().map(|v| v.to_bits())));
    }
    let mut whole = BitVec::new();
    if decode_bits(&coding, page, n, 0, &mut whole).is_ok() {
        let mut part = BitVec::new();
        let decoded = decode_bits_in(&coding, page, n, sub.clone(), 0, &mut part);
        assert!(
            decoded.is_ok(),
            "a part of a boolean page that decodes whole"
        );
        assert!(part.iter().eq(whole.iter().skip(sub.start).take(sub.len())));
    }
}
