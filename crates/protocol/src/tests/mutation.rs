//! Structured fuzzing: valid frames for every API and version (random values from the
//! generated generators), then mutated (byte flips, truncation, inserted bytes, huge varints),
//! must decode or fail cleanly and never panic. Unmutated frames must decode to the value.

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;

use crate::generated::random::{random_request, random_response};
use crate::testing::TestRng;
use crate::*;

fn mutate(rng: &mut TestRng, frame: &[u8]) -> Vec<u8> {
    let mut f = frame.to_vec();
    for _ in 0..=rng.below(3) {
        if f.is_empty() {
            break;
        }
        let i = rng.below(f.len() as u64) as usize;
        match rng.below(5) {
            0 => f[i] = rng.next_u64() as u8,
            1 => f[i] ^= 0x80,
            2 => f.truncate(i),
            3 => {
                let junk: Vec<u8> = (0..rng.below(6)).map(|_| 0xff).collect();
                f.splice(i..i, junk);
            }
            _ => f[i] = 0x7f,
        }
    }
    f
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn mutated_requests_never_panic(seed in any::<u64>()) {
        let mut rng = TestRng::new(seed);
        for &key in ApiKey::ALL {
            let (min, max) = key.supported_versions();
            for version in min..=max {
                let body = random_request(key, &mut rng, version);
                let header = RequestHeader {
                    request_api_key: key as i16,
                    request_api_version: version,
                    correlation_id: rng.i32(),
                    client_id: rng.maybe(true, TestRng::string),
                };
                let mut out = BytesMut::new();
                encode_request(&header, &body, &mut out).unwrap();
                let frame = out.freeze().slice(4..);
                let (h, b) = decode_request(frame.clone()).unwrap();
                prop_assert_eq!(&h, &header);
                prop_assert_eq!(&b, &body);
                for _ in 0..4 {
                    let _ = decode_request(Bytes::from(mutate(&mut rng, &frame)));
                }
            }
        }
    }

    #[test]
    fn mutated_responses_never_panic(seed in any::<u64>()) {
        let mut rng = TestRng::new(seed);
        for &key in ApiKey::ALL {
            let (min, max) = key.supported_versions();
            for version in min..=max {
                let body = random_response(key, &mut rng, version);
                let correlation_id = rng.i32();
                let mut out = BytesMut::new();
                encode_response(correlation_id, key, version, &body, &mut out).unwrap();
                let frame = out.freeze().slice(4..);
                let (h, b) = decode_response(key, version, frame.clone()).unwrap();
                prop_assert_eq!(h.correlation_id, correlation_id);
                prop_assert_eq!(&b, &body);
                for _ in 0..4 {
                    let _ = decode_response(key, version, Bytes::from(mutate(&mut rng, &frame)));
                }
            }
        }
    }
}
