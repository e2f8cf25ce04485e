//! JSON kept compressed: how the API server's store and the engine's caches keep objects at rest
//! (issue 58). An LZ4 block packs a Deployment's JSON to about half and a ConfigMap of repeated text to a
//! fifth, in ~1 µs per KB, and unpacks it in less; objects written or read last stay plain (the store's
//! hot window, the engine's newest trees), so the reads that follow a write pay nothing.

/// An object's JSON, compressed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packed {
    bytes: Box<[u8]>,
    len: u32,
}

/// JSON is packed only if that saves at least this share of it (an eighth): what barely compresses stays
/// plain, and costs no unpacking on read.
const SAVING: usize = 8;

/// JSON up to this size is packed with the thread's [`Scratch`]; larger JSON (rare: a big ConfigMap) with
/// buffers of its own, so that no thread holds more than this for packing.
const SCRATCH_MAX: usize = 64 * 1024;

/// What packing needs besides the JSON, kept per thread: LZ4's hash table (8 KB, cleared per use) and
/// room for the compressed bytes, instead of both allocated zeroed per object (4 % of packing's
/// instructions, docs/benchmarks.md step 11).
#[derive(Default)]
struct Scratch {
    table: lz4_flex::block::CompressTable,
    out: Vec<u8>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

impl Packed {
    /// `json` packed, if that saves enough (and it is under 4 GiB).
    pub fn of(json: &[u8]) -> Option<Packed> {
        let len = u32::try_from(json.len()).ok()?;
        let saves = |packed: usize| packed + json.len() / SAVING <= json.len();
        if json.len() > SCRATCH_MAX {
            let bytes = lz4_flex::block::compress(json);
            return saves(bytes.len()).then(|| Packed { bytes: bytes.into(), len });
        }
        SCRATCH.with_borrow_mut(|Scratch { table, out }| {
            let room = lz4_flex::block::get_maximum_output_size(json.len());
            if out.len() < room {
                out.resize(room, 0);
            }
            let n = lz4_flex::block::compress_into_with_table(json, &mut out[..room], table).ok()?;
            saves(n).then(|| Packed { bytes: out[..n].into(), len })
        })
    }

    /// The length of the JSON it holds.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether it holds no JSON (never, for what [`Packed::of`] made).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends the JSON to `out`; false, with nothing appended, if the bytes do not unpack (they are
    /// the process's own, so only a bug makes that happen).
    pub fn unpack_onto(&self, out: &mut Vec<u8>) -> bool {
        let start = out.len();
        out.resize(start + self.len(), 0);
        let ok = matches!(lz4_flex::block::decompress_into(&self.bytes, &mut out[start..]), Ok(n) if n == self.len());
        if !ok {
            out.truncate(start);
        }
        ok
    }

    /// The JSON (`null` if it does not unpack, see [`Packed::unpack_onto`]).
    pub fn unpack(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len());
        if !self.unpack_onto(&mut out) {
            out.extend_from_slice(b"null");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_json_unpacks_to_itself_and_what_hardly_compresses_is_not_packed() {
        let json = format!(r#"{{"data":{{"k":"{}"}}}}"#, "0123456789".repeat(60));
        let packed = Packed::of(json.as_bytes()).expect("repeated text packs");
        assert!(packed.bytes.len() * 4 < json.len() && packed.len() == json.len() && !packed.is_empty());
        assert_eq!(packed.unpack(), json.as_bytes());
        let mut out = b"[".to_vec();
        assert!(packed.unpack_onto(&mut out));
        assert_eq!(&out[1..], json.as_bytes(), "appended after what was there");
        assert_eq!(Packed::of(br#"{"a":1}"#), None, "too small to gain");
        let big = format!(r#"{{"data":{{"k":"{}"}}}}"#, "0123456789".repeat(10_000));
        let packed = Packed::of(big.as_bytes()).expect("a big object packs too, with buffers of its own");
        assert_eq!(packed.unpack(), big.as_bytes());
        assert_eq!(Packed::of(json.as_bytes()).unwrap().unpack(), json.as_bytes(), "the scratch is reused");
    }

    #[test]
    fn damaged_bytes_unpack_to_nothing_not_to_garbage() {
        let json = "abcabcabc".repeat(30);
        let mut packed = Packed::of(json.as_bytes()).unwrap();
        packed.len += 5;
        let mut out = b"x".to_vec();
        assert!(!packed.unpack_onto(&mut out));
        assert_eq!(out, b"x", "nothing appended");
        assert_eq!(packed.unpack(), b"null");
        packed.bytes = vec![0xff; 4].into();
        assert_eq!(packed.unpack(), b"null");
    }
}
