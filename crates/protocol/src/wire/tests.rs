//! Wire primitive tests: exact encodings, null handling, bounds.

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;

use super::*;
use crate::{DecodeError, EncodeError, Records};

fn encoded(f: impl FnOnce(&mut BytesMut) -> Result<(), EncodeError>) -> Vec<u8> {
    let mut out = BytesMut::new();
    f(&mut out).unwrap();
    out.to_vec()
}

#[test]
fn strings_classic_and_compact() {
    assert_eq!(
        encoded(|o| write_string(o, "ab", false, "f")),
        [0, 2, b'a', b'b']
    );
    assert_eq!(
        encoded(|o| write_string(o, "ab", true, "f")),
        [3, b'a', b'b']
    );
    assert_eq!(
        encoded(|o| write_nullable_string(o, None, false, true, "f")),
        [0xff, 0xff]
    );
    assert_eq!(
        encoded(|o| write_nullable_string(o, None, true, true, "f")),
        [0]
    );
    assert_eq!(
        write_nullable_string(&mut BytesMut::new(), None, true, false, "f"),
        Err(EncodeError::NullNotAllowed { field: "f" })
    );
    let long = "x".repeat(i16::MAX as usize + 1);
    assert!(matches!(
        write_string(&mut BytesMut::new(), &long, true, "f"),
        Err(EncodeError::TooLong { .. })
    ));
    assert_eq!(string_size("ab", false), 4);
    assert_eq!(string_size("ab", true), 3);
    assert_eq!(nullable_string_size(None, false), 2);
}

#[test]
fn decode_rejects_null_where_not_nullable_and_bad_lengths() {
    let mut b = Bytes::from_static(&[0xff, 0xff]);
    assert_eq!(
        read_string(&mut b, false, "f"),
        Err(DecodeError::UnexpectedNull { field: "f" })
    );
    let mut b = Bytes::from_static(&[0xff, 0xfe]);
    assert_eq!(
        read_nullable_string(&mut b, false, true, "f"),
        Err(DecodeError::InvalidLength {
            field: "f",
            length: -2
        })
    );
    let mut b = Bytes::from_static(&[0, 5, b'a']);
    assert!(matches!(
        read_string(&mut b, false, "f"),
        Err(DecodeError::LengthExceedsInput { .. })
    ));
    let mut b = Bytes::from_static(&[3, 0xff, 0xfe]);
    assert_eq!(
        read_string(&mut b, true, "f"),
        Err(DecodeError::InvalidUtf8 { field: "f" })
    );
    let mut b = Bytes::from_static(&[0xff, 0xff, 0xff, 0xff]);
    assert_eq!(read_nullable_bytes(&mut b, false, true, "f"), Ok(None));
}

#[test]
fn bytes_and_records_are_zero_copy() {
    let frame = Bytes::from_static(&[0, 0, 0, 3, 1, 2, 3, 9]);
    let mut cursor = frame.clone();
    let r = read_records(&mut cursor, false, "f").unwrap();
    let Records::Bytes(b) = &r else { panic!() };
    assert_eq!(&b[..], &[1, 2, 3]);
    assert_eq!(b.as_ptr(), frame[4..].as_ptr());
    assert_eq!(&cursor[..], &[9]);
}

#[test]
fn arrays_check_count_against_remaining_bytes() {
    let mut b = Bytes::from_static(&[0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 2]);
    assert_eq!(read_array(&mut b, false, "f", read_i32), Ok(vec![1, 2]));
    let mut b = Bytes::from_static(&[0x7f, 0xff, 0xff, 0xff, 0]);
    assert!(matches!(
        read_array(&mut b, false, "f", read_i32),
        Err(DecodeError::LengthExceedsInput { .. })
    ));
    let mut b = Bytes::from_static(&[0]);
    assert_eq!(
        read_nullable_array(&mut b, true, true, "f", read_i32),
        Ok(None)
    );
    let mut b = Bytes::from_static(&[0]);
    assert_eq!(
        read_array(&mut b, true, "f", read_i32),
        Err(DecodeError::UnexpectedNull { field: "f" })
    );
}

#[test]
fn tagged_fields_skip_unknown_and_check_known_sizes() {
    let mut b = Bytes::from_static(&[2, 5, 1, 0xaa, 7, 0, 0x42]);
    skip_tagged_fields(&mut b).unwrap();
    assert_eq!(&b[..], &[0x42]);
    let mut b = Bytes::from_static(&[1, 3]);
    assert!(skip_tagged_fields(&mut b).is_err());
    assert_eq!(
        finish_tagged_field(&Bytes::from_static(&[1]), "f"),
        Err(DecodeError::TaggedFieldSize {
            field: "f",
            extra: 1
        })
    );
}

#[test]
fn file_regions_are_refused_by_in_memory_sinks() {
    let region = crate::FileRegion {
        file: std::sync::Arc::new(std::fs::File::open("/dev/null").unwrap()),
        position: 0,
        len: 10,
    };
    let r = Records::File(region);
    assert_eq!(
        BytesMut::new().put_records(&r),
        Err(EncodeError::FileRegionInMemoryEncoder)
    );
    assert_eq!(
        Vec::new().put_records(&r),
        Err(EncodeError::FileRegionInMemoryEncoder)
    );
}

proptest! {
    #[test]
    fn uvarint_round_trip(v in any::<u32>()) {
        let mut out = BytesMut::new();
        out.put_uvarint(v);
        prop_assert_eq!(out.len(), uvarint_size(v));
        prop_assert_eq!(read_uvarint(&mut out.freeze()), Ok(v));
    }

    #[test]
    fn uvarlong_and_zigzag_round_trip(v in any::<u64>(), s in any::<i32>(), l in any::<i64>()) {
        let mut out = BytesMut::new();
        out.put_uvarlong(v);
        out.put_varint(s);
        out.put_varlong(l);
        let mut b = out.freeze();
        prop_assert_eq!(read_uvarlong(&mut b), Ok(v));
        prop_assert_eq!(read_varint(&mut b), Ok(s));
        prop_assert_eq!(read_varlong(&mut b), Ok(l));
        prop_assert!(b.is_empty());
    }

    #[test]
    fn nullable_strings_round_trip(s in proptest::option::of(".{0,40}"), compact in any::<bool>()) {
        let mut out = BytesMut::new();
        write_nullable_string(&mut out, s.as_deref(), compact, true, "f").unwrap();
        prop_assert_eq!(out.len(), nullable_string_size(s.as_deref(), compact));
        prop_assert_eq!(read_nullable_string(&mut out.freeze(), compact, true, "f"), Ok(s));
    }
}
