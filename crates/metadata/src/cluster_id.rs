//! Cluster ids as Kafka writes and reads them: a 16-byte UUID in URL-safe base64 without
//! padding (`Uuid.toString`), 22 characters.
//!
//! Mental model: [`parse`] is Kafka's `Uuid.fromString` (at most 24 characters, decoded by
//! Java's URL-safe decoder, exactly 16 bytes), with Kafka's messages. Java's decoder is lenient
//! in two ways that `kafka-storage.sh format -t` inherits and Skiff keeps: padding may be
//! present or absent, and the unused low bits of the last character are not checked (so
//! `...Q` and `...R` can name the same id). [`random`] is `Uuid.randomUuid`: never a reserved
//! id (zero, one) and never a string that starts with `-` (which a command line would take
//! for a flag).
//!
//! Invariants: pure apart from [`random`]'s randomness; [`display`] of a parsed id is the
//! canonical 22-character form.

use base64::Engine as _;
use base64::alphabet::URL_SAFE;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use uuid::Uuid;

/// Java's `Base64.getUrlDecoder()`: URL-safe alphabet, padding optional, trailing bits free.
const JAVA_URL_DECODER: GeneralPurpose = GeneralPurpose::new(
    &URL_SAFE,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

/// Kafka's `Base64.getUrlEncoder().withoutPadding()`.
const KAFKA_ENCODER: GeneralPurpose = GeneralPurpose::new(
    &URL_SAFE,
    GeneralPurposeConfig::new().with_encode_padding(false),
);

/// The canonical string of `id` (what Kafka prints).
pub fn display(id: &Uuid) -> String {
    KAFKA_ENCODER.encode(id.as_bytes())
}

/// Kafka's `Uuid.fromString`, with its messages.
pub fn parse(s: &str) -> Result<Uuid, String> {
    if s.chars().count() > 24 {
        let prefix: String = s.chars().take(24).collect();
        return Err(format!(
            "Input string with prefix `{prefix}` is too long to be decoded as a base64 UUID"
        ));
    }
    // Padding, when present, must complete the last unit exactly (Java's rule; the crate's
    // indifferent mode would take `AQ=`).
    let body = s.trim_end_matches('=');
    let pads = s.len() - body.len();
    if pads > 0 && !body.contains('=') {
        let rem = body.len() % 4;
        if rem == 1 {
            return Err("Last unit does not have enough valid bits".to_string());
        }
        if rem == 0 || pads != 4 - rem {
            return Err("Input byte array has wrong 4-byte ending unit".to_string());
        }
    }
    let bytes = JAVA_URL_DECODER
        .decode(s)
        .map_err(|e| java_decoder_message(&e))?;
    let Ok(array) = <[u8; 16]>::try_from(bytes.as_slice()) else {
        return Err(format!(
            "Input string `{s}` decoded as {} bytes, which is not equal to the expected 16 bytes of a base64-encoded UUID",
            bytes.len()
        ));
    };
    Ok(Uuid::from_bytes(array))
}

/// The message Java's decoder gives for the same failure.
fn java_decoder_message(e: &base64::DecodeError) -> String {
    match e {
        // Misplaced padding: Java names the unit it cuts short.
        base64::DecodeError::InvalidByte(at, b'=') if at % 4 == 1 => {
            "Last unit does not have enough valid bits".to_string()
        }
        base64::DecodeError::InvalidByte(_, b'=') => {
            "Input byte array has wrong 4-byte ending unit".to_string()
        }
        base64::DecodeError::InvalidByte(_, b) => format!("Illegal base64 character {b:x}"),
        base64::DecodeError::InvalidLength(_) | base64::DecodeError::InvalidLastSymbol(..) => {
            "Last unit does not have enough valid bits".to_string()
        }
        base64::DecodeError::InvalidPadding => {
            "Input byte array has wrong 4-byte ending unit".to_string()
        }
    }
}

/// A fresh cluster id as `Uuid.randomUuid` draws it (see the module docs).
pub fn random() -> String {
    loop {
        let id = Uuid::new_v4();
        let s = display(&id);
        if id != Uuid::nil() && id.as_u128() != 1 && !s.starts_with('-') {
            return s;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_canonical_form() {
        for _ in 0..200 {
            let s = random();
            assert_eq!(s.len(), 22);
            assert!(!s.starts_with('-'), "{s}");
            assert_eq!(display(&parse(&s).unwrap()), s);
        }
        // Kafka's own example id from its quickstart docs.
        let id = parse("MkU3OEVBNTcwNTJENDM2Qk").unwrap();
        assert_eq!(display(&id), "MkU3OEVBNTcwNTJENDM2Qg");
    }

    #[test]
    fn lenient_as_javas_decoder() {
        let canonical = "AAAAAAAAAAAAAAAAAAAAAQ";
        let id = parse(canonical).unwrap();
        assert_eq!(id.as_u128(), 1);
        // Padding is allowed; unused trailing bits are ignored.
        assert_eq!(parse("AAAAAAAAAAAAAAAAAAAAAQ==").unwrap(), id);
        assert_eq!(parse("AAAAAAAAAAAAAAAAAAAAAR").unwrap(), id);
    }

    #[test]
    fn refusals_with_kafkas_messages() {
        let cases = [
            (
                "AAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                "Input string with prefix `AAAAAAAAAAAAAAAAAAAAAAAA` is too long to be decoded as a base64 UUID",
            ),
            (
                "AAAAAAAAAAAAAAAAAAAA",
                "Input string `AAAAAAAAAAAAAAAAAAAA` decoded as 15 bytes, which is not equal to the expected 16 bytes of a base64-encoded UUID",
            ),
            (
                "",
                "Input string `` decoded as 0 bytes, which is not equal to the expected 16 bytes of a base64-encoded UUID",
            ),
            ("AAAAAAAAAAAAAAAAAAAA+Q", "Illegal base64 character 2b"),
            ("bad cluster", "Illegal base64 character 20"),
            (
                "AAAAAAAAAAAAAAAAAAAAA",
                "Last unit does not have enough valid bits",
            ),
            (
                "AAAAAAAAAAAAAAAAAAAAA=",
                "Last unit does not have enough valid bits",
            ),
            (
                "AAAAAAAAAAAAAAAAAAAA=A",
                "Input byte array has wrong 4-byte ending unit",
            ),
            (
                "AAAAAAAAAAAAAAAAAAAAAQ=",
                "Input byte array has wrong 4-byte ending unit",
            ),
        ];
        // Every row checked against Kafka 4.1.1's `Uuid.fromString` (a javac probe).
        for (input, want) in cases {
            assert_eq!(parse(input).unwrap_err(), want, "{input:?}");
        }
    }
}
