//! Python's `random.Random(seed)` (MT19937 with Python's seeding), so filters and lookups
//! given a `seed` pick what Ansible picks: `random`, `shuffle`, the `password` lookup.

use minijinja::Value;
use sha2::Digest;

use super::py_str;

/// Python's MT19937 (`random.Random`), enough for `choice` after `seed(int or str)`.
pub(crate) struct PyRandom {
    mt: [u32; 624],
    index: usize,
}

impl PyRandom {
    fn init_genrand(s: u32) -> PyRandom {
        let mut mt = [0u32; 624];
        mt[0] = s;
        for i in 1..624 {
            mt[i] = 1812433253u32
                .wrapping_mul(mt[i - 1] ^ (mt[i - 1] >> 30))
                .wrapping_add(i as u32);
        }
        PyRandom { mt, index: 624 }
    }

    /// `init_by_array` with the 32-bit words of the seed, least significant first.
    fn from_key(key: &[u32]) -> PyRandom {
        let mut r = PyRandom::init_genrand(19650218);
        let key: Vec<u32> = if key.is_empty() {
            vec![0]
        } else {
            key.to_vec()
        };
        let (mut i, mut j) = (1usize, 0usize);
        let mut k = 624.max(key.len());
        while k > 0 {
            let prev = r.mt[i - 1];
            r.mt[i] = (r.mt[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1664525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= 624 {
                r.mt[0] = r.mt[623];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
            k -= 1;
        }
        k = 623;
        while k > 0 {
            let prev = r.mt[i - 1];
            r.mt[i] =
                (r.mt[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1566083941)).wrapping_sub(i as u32);
            i += 1;
            if i >= 624 {
                r.mt[0] = r.mt[623];
                i = 1;
            }
            k -= 1;
        }
        r.mt[0] = 0x8000_0000;
        r
    }

    /// `random.Random(seed)`: an int seeds with its absolute value; a str with the big
    /// integer of its UTF-8 bytes followed by their SHA-512 (seed version 2).
    pub(crate) fn seeded(seed: &Value) -> PyRandom {
        let bytes_be: Vec<u8> = match i64::try_from(seed.clone()) {
            Ok(n) if seed.is_integer() => n.unsigned_abs().to_be_bytes().to_vec(),
            _ => {
                let s = py_str(seed);
                let mut b = s.as_bytes().to_vec();
                b.extend_from_slice(&sha2::Sha512::digest(s.as_bytes()));
                b
            }
        };
        // Big-endian bytes to little-endian 32-bit words, leading zero words dropped.
        let mut words: Vec<u32> = bytes_be
            .rchunks(4)
            .map(|c| c.iter().fold(0u32, |acc, b| (acc << 8) | *b as u32))
            .collect();
        while words.len() > 1 && words.last() == Some(&0) {
            words.pop();
        }
        if words == [0] {
            words.clear();
        }
        PyRandom::from_key(&words)
    }

    pub(crate) fn next_u32(&mut self) -> u32 {
        if self.index >= 624 {
            for i in 0..624 {
                let y = (self.mt[i] & 0x8000_0000) | (self.mt[(i + 1) % 624] & 0x7fff_ffff);
                let mut v = self.mt[(i + 397) % 624] ^ (y >> 1);
                if y & 1 != 0 {
                    v ^= 0x9908_b0df;
                }
                self.mt[i] = v;
            }
            self.index = 0;
        }
        let mut y = self.mt[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `_randbelow_with_getrandbits(n)` for n below 2**32.
    pub(crate) fn below(&mut self, n: usize) -> usize {
        let k = usize::BITS - n.leading_zeros();
        loop {
            let r = (self.next_u32() >> (32 - k)) as usize;
            if r < n {
                return r;
            }
        }
    }
}

/// A random index below `n`: from `rng` when seeded, else from the system's source.
pub(crate) fn below(rng: &mut Option<PyRandom>, n: usize) -> Result<usize, minijinja::Error> {
    match rng {
        Some(r) => Ok(r.below(n)),
        None => {
            let mut buf = [0u8; 8];
            getrandom::getrandom(&mut buf)
                .map_err(|e| super::fail(format!("cannot read random bytes: {}", e)))?;
            Ok((u64::from_le_bytes(buf) % n.max(1) as u64) as usize)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_like_python() {
        // python3 -c "import random; r=random.Random(42); print([r.getrandbits(32) for _ in range(3)])"
        let mut r = PyRandom::seeded(&Value::from(42));
        assert_eq!(
            [r.next_u32(), r.next_u32(), r.next_u32()],
            [2746317213, 478163327, 107420369]
        );
        // python3 -c "import random; r=random.Random('foo'); print(''.join(r.choice('abcdefghij0123456789') for _ in range(10)))"
        let chars: Vec<char> = "abcdefghij0123456789".chars().collect();
        let mut r = PyRandom::seeded(&Value::from("foo"));
        let s: String = (0..10).map(|_| chars[r.below(chars.len())]).collect();
        assert_eq!(s, "4i1heh9465");
    }
}
