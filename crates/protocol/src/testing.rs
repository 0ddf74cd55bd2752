//! Test support: a small seeded RNG and the [`Random`] trait the generated `random.rs`
//! implements for every struct. Test-only (`cfg(test)`).

use bytes::Bytes;
use uuid::Uuid;

/// A value generator for a given version (only fields present in it are set).
pub(crate) trait Random: Sized {
    fn random(rng: &mut TestRng, version: i16) -> Self;
}

/// xorshift64*: deterministic per seed, good enough for test data.
#[derive(Debug, Clone)]
pub(crate) struct TestRng(u64);

const CHARS: &[char] = &[
    'a', 'z', 'K', '0', '-', '_', '.', ' ', 'é', 'ß', '日', '本', '🦀', 'Ω',
];

impl TestRng {
    pub(crate) fn new(seed: u64) -> Self {
        TestRng(seed ^ 0x9E37_79B9_7F4A_7C15 | 1)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }

    pub(crate) fn bool(&mut self) -> bool {
        self.next_u64() & 1 == 1
    }

    /// Edge values a quarter of the time, otherwise uniform.
    fn int(&mut self, edges: &[i64], uniform: i64) -> i64 {
        if self.below(4) == 0 {
            edges[self.below(edges.len() as u64) as usize]
        } else {
            uniform
        }
    }

    pub(crate) fn i8(&mut self) -> i8 {
        let u = self.next_u64() as i8;
        self.int(&[0, -1, 1, i8::MIN.into(), i8::MAX.into()], u.into()) as i8
    }
    pub(crate) fn i16(&mut self) -> i16 {
        let u = self.next_u64() as i16;
        self.int(&[0, -1, 1, i16::MIN.into(), i16::MAX.into()], u.into()) as i16
    }
    pub(crate) fn u16(&mut self) -> u16 {
        let u = self.next_u64() as u16;
        self.int(&[0, 1, u16::MAX.into()], u.into()) as u16
    }
    pub(crate) fn i32(&mut self) -> i32 {
        let u = self.next_u64() as i32;
        self.int(&[0, -1, 1, i32::MIN.into(), i32::MAX.into()], u.into()) as i32
    }
    pub(crate) fn u32(&mut self) -> u32 {
        let u = self.next_u64() as u32;
        self.int(&[0, 1, u32::MAX.into()], u.into()) as u32
    }
    pub(crate) fn i64(&mut self) -> i64 {
        let u = self.next_u64() as i64;
        self.int(&[0, -1, 1, i64::MIN, i64::MAX], u)
    }
    /// Finite floats only (NaN would break `PartialEq` round trips). No generated message has a
    /// `float64` field yet, but the generator emits calls to this for any that gets one.
    #[allow(dead_code)]
    pub(crate) fn f64(&mut self) -> f64 {
        match self.below(4) {
            0 => 0.0,
            1 => -1.5,
            2 => f64::MAX,
            _ => {
                let f = f64::from_bits(self.next_u64());
                if f.is_finite() { f } else { 0.25 }
            }
        }
    }
    pub(crate) fn uuid(&mut self) -> Uuid {
        if self.below(4) == 0 {
            Uuid::nil()
        } else {
            Uuid::from_u64_pair(self.next_u64(), self.next_u64())
        }
    }
    /// Unicode strings, often empty or short.
    pub(crate) fn string(&mut self) -> String {
        let len = if self.below(5) == 0 {
            0
        } else {
            self.below(12)
        };
        (0..len)
            .map(|_| CHARS[self.below(CHARS.len() as u64) as usize])
            .collect()
    }
    pub(crate) fn bytes(&mut self) -> Bytes {
        let len = match self.below(6) {
            0 => 0,
            1 => 200 + self.below(300),
            _ => self.below(24),
        };
        (0..len)
            .map(|_| self.next_u64() as u8)
            .collect::<Vec<u8>>()
            .into()
    }
    /// Short arrays (0-3 elements): used for arrays of structs.
    pub(crate) fn vec<T>(&mut self, mut f: impl FnMut(&mut Self) -> T) -> Vec<T> {
        let len = self.below(4);
        (0..len).map(|_| f(self)).collect()
    }
    /// Arrays of scalars: usually short, sometimes a few hundred elements.
    pub(crate) fn long_vec<T>(&mut self, mut f: impl FnMut(&mut Self) -> T) -> Vec<T> {
        let len = if self.below(8) == 0 {
            100 + self.below(200)
        } else {
            self.below(4)
        };
        (0..len).map(|_| f(self)).collect()
    }
    /// `None` a quarter of the time when `nullable`, else `Some`.
    pub(crate) fn maybe<T>(&mut self, nullable: bool, f: impl FnOnce(&mut Self) -> T) -> Option<T> {
        if nullable && self.below(4) == 0 {
            None
        } else {
            Some(f(self))
        }
    }
}
