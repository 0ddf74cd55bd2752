//! Turning one partition's Fetch answer into printable records, and printing them.
//!
//! Mental model: [`decode`] walks the batches of a Fetch response's records (any codec; the
//! record crate decompresses), skips control batches and, at read_committed, the batches of
//! aborted transactions (Kafka's consumer algorithm: an aborted transaction listed by the
//! response applies to its producer's batches from its first offset until that producer's
//! ABORT marker), drops records below the fetch offset (a batch may start earlier), and says
//! where the next fetch starts. [`render_template`] prints a record kcat-style and
//! [`JsonRecord`] is the `--format json` line.
//! Invariants: the next offset never goes backwards; a truncated trailing batch (the response
//! size limit cut it) is not an error, only where the next fetch starts; nothing here panics on
//! any bytes.

use std::collections::HashSet;

use serde::Serialize;
use skiff_record::{ControlType, records};

/// Largest decompressed records section accepted (Kafka's default max message is 1 MiB; a
/// broker's limit can be higher).
const MAX_DECOMPRESSED: usize = 256 * 1024 * 1024;

/// One consumed record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Consumed {
    pub partition: i32,
    pub offset: i64,
    pub timestamp: i64,
    pub timestamp_type: &'static str,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

/// What one partition's answer held.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Decoded {
    pub records: Vec<Consumed>,
    /// Where the next fetch starts (the fetch offset if nothing was complete).
    pub next_offset: i64,
}

/// Decodes `bytes` (one partition's records) fetched at `fetch_offset`. `aborted` lists
/// `(producer_id, first_offset)` of aborted transactions (read_committed only).
pub fn decode(
    bytes: &[u8],
    partition: i32,
    fetch_offset: i64,
    aborted: &[(i64, i64)],
    read_committed: bool,
) -> Result<Decoded, String> {
    let mut pending: Vec<(i64, i64)> = aborted.to_vec();
    pending.sort_by_key(|(_, first)| std::cmp::Reverse(*first));
    let mut aborting: HashSet<i64> = HashSet::new();
    let mut out = Decoded {
        records: Vec::new(),
        next_offset: fetch_offset,
    };
    for batch in skiff_record::batches(bytes) {
        let view = match batch {
            Ok((_, view)) => view,
            // A partial batch at the end: the size limit cut it; fetch it next time.
            Err(skiff_record::RecordError::Truncated { .. }) => break,
            Err(e) => return Err(format!("partition {partition}: bad batch: {e}")),
        };
        if view.next_offset() <= out.next_offset {
            continue;
        }
        out.next_offset = view.next_offset();
        if read_committed && view.is_transactional() {
            while pending
                .last()
                .is_some_and(|(_, f)| *f <= view.last_offset())
            {
                if let Some((pid, _)) = pending.pop() {
                    aborting.insert(pid);
                }
            }
        }
        if view.is_control() {
            if read_committed && is_abort_marker(&view) {
                aborting.remove(&view.producer_id());
            }
            continue;
        }
        if read_committed && view.is_transactional() && aborting.contains(&view.producer_id()) {
            continue;
        }
        let data = view
            .records_data(MAX_DECOMPRESSED)
            .map_err(|e| format!("partition {partition}: cannot decompress a batch: {e}"))?;
        let ts_type = view.timestamp_type().name();
        for rec in records(&data, view.records_count()) {
            let rec = rec.map_err(|e| format!("partition {partition}: bad record: {e}"))?;
            let offset = view.record_offset(&rec);
            if offset < fetch_offset {
                continue;
            }
            out.records.push(Consumed {
                partition,
                offset,
                timestamp: view.record_timestamp(&rec),
                timestamp_type: ts_type,
                key: rec.key.map(<[u8]>::to_vec),
                value: rec.value.map(<[u8]>::to_vec),
                headers: rec
                    .headers
                    .iter()
                    .map(|h| (h.key.to_vec(), h.value.map(<[u8]>::to_vec)))
                    .collect(),
            });
        }
    }
    Ok(out)
}

fn is_abort_marker(view: &skiff_record::BatchView<'_>) -> bool {
    matches!(
        skiff_record::parse_end_txn_marker(view),
        Ok(Some(m)) if m.control_type == ControlType::Abort
    )
}

/// `--template`: `%t` topic, `%p` partition, `%o` offset, `%k` key, `%v` value, `%T`
/// timestamp (ms), `%h` headers (`k=v` comma-separated), `%K`/`%S` key/value size (-1 for
/// null), `%%` a percent sign; escapes `\n`, `\t`, `\r`, `\\`. Unknown `%x` stays as is.
pub fn render_template(template: &str, topic: &str, r: &Consumed, out: &mut Vec<u8>) {
    let mut chars = template.chars().peekable();
    let size = |b: &Option<Vec<u8>>| b.as_ref().map_or(-1, |v| v.len() as i64);
    while let Some(c) = chars.next() {
        match c {
            '%' => match chars.next() {
                Some('t') => out.extend_from_slice(topic.as_bytes()),
                Some('p') => out.extend_from_slice(r.partition.to_string().as_bytes()),
                Some('o') => out.extend_from_slice(r.offset.to_string().as_bytes()),
                Some('k') => out.extend_from_slice(r.key.as_deref().unwrap_or_default()),
                Some('v') => out.extend_from_slice(r.value.as_deref().unwrap_or_default()),
                Some('T') => out.extend_from_slice(r.timestamp.to_string().as_bytes()),
                Some('K') => out.extend_from_slice(size(&r.key).to_string().as_bytes()),
                Some('S') => out.extend_from_slice(size(&r.value).to_string().as_bytes()),
                Some('h') => {
                    for (i, (k, v)) in r.headers.iter().enumerate() {
                        if i > 0 {
                            out.push(b',');
                        }
                        out.extend_from_slice(k);
                        out.push(b'=');
                        out.extend_from_slice(v.as_deref().unwrap_or_default());
                    }
                }
                Some('%') => out.push(b'%'),
                Some(other) => {
                    out.push(b'%');
                    push_char(out, other);
                }
                None => out.push(b'%'),
            },
            '\\' => match chars.next() {
                Some('n') => out.push(b'\n'),
                Some('t') => out.push(b'\t'),
                Some('r') => out.push(b'\r'),
                Some('\\') => out.push(b'\\'),
                Some(other) => {
                    out.push(b'\\');
                    push_char(out, other);
                }
                None => out.push(b'\\'),
            },
            c => push_char(out, c),
        }
    }
}

fn push_char(out: &mut Vec<u8>, c: char) {
    let mut buf = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
}

/// A header in a JSON line.
#[derive(Debug, Serialize)]
pub struct JsonHeader {
    pub key: String,
    pub value: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub value_base64: bool,
}

/// One `consume --format json` line. Keys, values and header values are UTF-8 strings, or
/// base64 with the matching `*_base64: true` flag when the bytes are not UTF-8.
#[derive(Debug, Serialize)]
pub struct JsonRecord<'a> {
    pub topic: &'a str,
    pub partition: i32,
    pub offset: i64,
    pub timestamp: i64,
    pub timestamp_type: &'static str,
    pub key: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub key_base64: bool,
    pub value: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub value_base64: bool,
    pub headers: Vec<JsonHeader>,
}

/// Bytes as a UTF-8 string, or base64 (`true`) when they are not UTF-8.
fn text_or_base64(b: Option<&[u8]>) -> (Option<String>, bool) {
    match b {
        None => (None, false),
        Some(b) => match std::str::from_utf8(b) {
            Ok(s) => (Some(s.to_owned()), false),
            Err(_) => (Some(base64(b)), true),
        },
    }
}

impl<'a> JsonRecord<'a> {
    pub fn new(topic: &'a str, r: &Consumed) -> JsonRecord<'a> {
        let (key, key_base64) = text_or_base64(r.key.as_deref());
        let (value, value_base64) = text_or_base64(r.value.as_deref());
        JsonRecord {
            topic,
            partition: r.partition,
            offset: r.offset,
            timestamp: r.timestamp,
            timestamp_type: r.timestamp_type,
            key,
            key_base64,
            value,
            value_base64,
            headers: r
                .headers
                .iter()
                .map(|(k, v)| {
                    let (value, value_base64) = text_or_base64(v.as_deref());
                    JsonHeader {
                        key: String::from_utf8_lossy(k).into_owned(),
                        value,
                        value_base64,
                    }
                })
                .collect(),
        }
    }
}

/// Standard base64 (RFC 4648, padded).
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let sextets = [(n >> 18) & 63, (n >> 12) & 63, (n >> 6) & 63, n & 63];
        for (i, s) in sextets.iter().enumerate() {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[*s as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use skiff_record::{BatchBuilder, BatchOptions, Compression, Header, set_base_offset};

    use super::*;

    fn batch(base: i64, pid: i64, txn: bool, values: &[&str], codec: Compression) -> Vec<u8> {
        let mut b = BatchBuilder::new(BatchOptions {
            base_offset: base,
            compression: codec,
            is_transactional: txn,
            producer_id: pid,
            producer_epoch: if pid >= 0 { 0 } else { -1 },
            base_sequence: if pid >= 0 { 0 } else { -1 },
            ..Default::default()
        });
        for (i, v) in values.iter().enumerate() {
            let h = [Header {
                key: b"h",
                value: Some(b"1"),
            }];
            b.append(1000 + i as i64, Some(b"k"), Some(v.as_bytes()), &h);
        }
        b.build().unwrap()
    }

    fn marker(base: i64, pid: i64, kind: ControlType) -> Vec<u8> {
        let mut m = skiff_record::build_end_txn_marker(pid, 0, 0, kind, 1000).unwrap();
        set_base_offset(&mut m, base);
        m
    }

    fn values(d: &Decoded) -> Vec<(i64, String)> {
        d.records
            .iter()
            .map(|r| {
                (
                    r.offset,
                    String::from_utf8(r.value.clone().unwrap()).unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn decodes_every_codec_and_skips_below_the_fetch_offset() {
        for codec in Compression::ALL {
            let bytes = batch(5, -1, false, &["a", "b", "c"], codec);
            let d = decode(&bytes, 0, 6, &[], false).unwrap();
            assert_eq!(values(&d), [(6, "b".into()), (7, "c".into())], "{codec:?}");
            assert_eq!(d.next_offset, 8);
            assert_eq!(d.records[0].headers, [(b"h".to_vec(), Some(b"1".to_vec()))]);
            assert_eq!(d.records[0].timestamp, 1001);
        }
    }

    #[test]
    fn read_committed_drops_aborted_batches_and_markers() {
        let mut bytes = batch(0, 7, true, &["aborted"], Compression::None);
        bytes.extend(marker(1, 7, ControlType::Abort));
        bytes.extend(batch(2, 8, true, &["committed"], Compression::Zstd));
        bytes.extend(marker(3, 8, ControlType::Commit));
        bytes.extend(batch(4, -1, false, &["plain"], Compression::Lz4));
        let committed = decode(&bytes, 0, 0, &[(7, 0)], true).unwrap();
        assert_eq!(
            values(&committed),
            [(2, "committed".into()), (4, "plain".into())]
        );
        assert_eq!(committed.next_offset, 5);
        let all = decode(&bytes, 0, 0, &[(7, 0)], false).unwrap();
        assert_eq!(
            values(&all),
            [
                (0, "aborted".into()),
                (2, "committed".into()),
                (4, "plain".into())
            ]
        );
    }

    #[test]
    fn a_truncated_tail_is_where_the_next_fetch_starts() {
        let mut bytes = batch(0, -1, false, &["a"], Compression::None);
        let second = batch(1, -1, false, &["b"], Compression::None);
        bytes.extend_from_slice(&second[..second.len() - 3]);
        let d = decode(&bytes, 0, 0, &[], false).unwrap();
        assert_eq!(values(&d), [(0, "a".into())]);
        assert_eq!(d.next_offset, 1);
    }

    #[test]
    fn templates_render_like_kcat() {
        let r = Consumed {
            partition: 2,
            offset: 9,
            timestamp: 1234,
            timestamp_type: "CreateTime",
            key: Some(b"k1".to_vec()),
            value: Some(b"v1".to_vec()),
            headers: vec![(b"a".to_vec(), Some(b"1".to_vec())), (b"b".to_vec(), None)],
        };
        let cases = [
            ("%v\\n", "v1\n"),
            ("%t %p %o %k %v %T %h\\n", "t 2 9 k1 v1 1234 a=1,b=\n"),
            ("%K/%S %% %x\\t|", "2/2 % %x\t|"),
        ];
        for (template, want) in cases {
            let mut out = Vec::new();
            render_template(template, "t", &r, &mut out);
            assert_eq!(String::from_utf8(out).unwrap(), want, "{template}");
        }
    }

    #[test]
    fn json_lines_flag_non_utf8_as_base64() {
        let r = Consumed {
            partition: 0,
            offset: 1,
            timestamp: 5,
            timestamp_type: "CreateTime",
            key: None,
            value: Some(vec![0xff, 0x00, 0x61]),
            headers: vec![],
        };
        let line = serde_json::to_string(&JsonRecord::new("t", &r)).unwrap();
        assert_eq!(
            line,
            r#"{"topic":"t","partition":0,"offset":1,"timestamp":5,"timestamp_type":"CreateTime","key":null,"value":"/wBh","value_base64":true,"headers":[]}"#
        );
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }
}
