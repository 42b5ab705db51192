//! Helm's encoding of a release record (the `release` key of its Secret): the release as
//! JSON, gzipped, then base64-encoded.
//!
//! The agent writes the gzip as two members, which RFC 1952 allows and Helm (through Go's
//! gzip reader) and the agent (through flate2's `MultiGzDecoder`) read as one stream. The
//! first member holds only the opening of the JSON, `{"info":{"status":"deployed"`, stored
//! uncompressed with the status padded by spaces to a fixed width; the second holds the
//! rest, compressed. The first member is 60 bytes, 80 base64 characters, so its text
//! stands apart from the rest's: marking a revision superseded, as every upgrade does,
//! swaps those 80 characters ([`restatus`]) instead of decoding, changing and compressing
//! the whole release again.

use std::cell::RefCell;
use std::io::Read;

use base64::Engine;
use flate2::{Compress, Compression, Crc, Decompress, FlushCompress, FlushDecompress, Status};
use serde_json::{Map, Value};

/// The opening of a release's JSON, before the value of its status.
const STATUS_LEAD: &[u8] = br#"{"info":{"status":"#;

/// The width of the status in the first member, quoted then padded with spaces: the
/// longest of Helm's statuses (`"pending-rollback"`) and one more, so that the member
/// fills whole base64 groups.
const STATUS_WIDTH: usize = 19;

/// The length of a stored deflate block's header: its type, then its length and the
/// length's complement.
const STORED_BLOCK_HEADER: usize = 5;

/// The length of a gzip member's trailer: the CRC-32 and the size of its data.
const GZIP_TRAILER: usize = 8;

/// The length of the first member.
const STATUS_MEMBER: usize =
    GZIP_HEADER.len() + STORED_BLOCK_HEADER + STATUS_LEAD.len() + STATUS_WIDTH + GZIP_TRAILER;

const _: () = assert!(STATUS_MEMBER.is_multiple_of(3), "whole base64 groups");

/// The gzip header flate2 writes: deflate, no flags, no time, no extra flags, OS unknown.
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];

/// The largest JSON compressed at the fastest level. Even uncompressed and in base64, a
/// record this small is a third of the most a Secret holds (1 MiB), so the time its
/// compression takes matters more than the bytes it saves; a larger one is compressed as
/// hard as Helm compresses every record, to stay under that limit wherever Helm does.
const FAST_UP_TO: usize = 256 << 10;

thread_local! {
    /// Each thread's deflate compressors, at the fastest level and at the best, reset
    /// between records: making one allocates and clears some hundreds of kilobytes, more
    /// work than compressing a small record.
    static DEFLATE_FAST: RefCell<Option<Compress>> = const { RefCell::new(None) };
    static DEFLATE_BEST: RefCell<Option<Compress>> = const { RefCell::new(None) };
    /// Each thread's inflater, reset between records, for the same reason.
    static INFLATE: RefCell<Option<Decompress>> = const { RefCell::new(None) };
}

/// Helm's encoding of a release: JSON, gzipped, base64. A release whose `info.status` fits
/// the first member has it in a member of its own (see the module's documentation).
pub fn encode(body: &Value) -> Result<String, String> {
    encode_json(&ordered_json(body).map_err(|e| e.to_string())?)
}

/// Helm's encoding of a release already written as JSON: when `json` opens with
/// `{"info":{"status":` and a status short enough for the first member, the status goes
/// in that member, and `first_deployed` should follow it (see [`first_deployed`]).
pub fn encode_json(json: &[u8]) -> Result<String, String> {
    let mut packed = Vec::new();
    let rest = match split_at_status(json) {
        Some((member, rest)) => {
            packed.extend_from_slice(&member);
            rest
        }
        None => json,
    };
    gzip_into(rest, &mut packed)?;
    Ok(base64::engine::general_purpose::STANDARD.encode(packed))
}

/// `encoded`, a record whose status is `from`, with the status `to`: its first member
/// swapped. `None` when the record does not open with that member (another tool wrote it,
/// or its status is not `from`): it must then be decoded and encoded again.
pub fn restatus(encoded: &[u8], from: &str, to: &str) -> Option<String> {
    let base64 = base64::engine::general_purpose::STANDARD;
    let opening = base64.encode(status_member(from)?);
    let rest = std::str::from_utf8(encoded.strip_prefix(opening.as_bytes())?).ok()?;
    Some(base64.encode(status_member(to)?) + rest)
}

/// The member of `info` written right after the status.
const FIRST_DEPLOYED: &str = "first_deployed";

/// How much of a record's JSON is inflated to read its `info.first_deployed`: the key and
/// a timestamp, with room to spare.
const OPENING_READ: usize = 192;

/// How much of a record's base64 is decoded to read its `info.first_deployed`: the first
/// member and the opening of the second, whose block header (its Huffman codes, at most
/// some 300 bytes) comes before the JSON.
const OPENING_BASE64: usize = 1024;

/// `info.first_deployed` of a record the agent wrote, read from the opening of its second
/// member alone (every upgrade carries it over from the revision it replaces, and need not
/// decode that revision whole). `None` when the record does not open as the agent writes
/// it, with its status in a member of its own and `first_deployed` right after.
pub fn first_deployed(encoded: &[u8]) -> Option<String> {
    let prefix = encoded.get(..OPENING_BASE64).unwrap_or(encoded);
    let packed = base64::engine::general_purpose::STANDARD
        .decode(prefix)
        .ok()?;
    let (member, second) = packed.split_at_checked(STATUS_MEMBER)?;
    let stored = member.strip_prefix(&GZIP_HEADER)?;
    stored
        .get(STORED_BLOCK_HEADER..)?
        .strip_prefix(STATUS_LEAD)?;
    let opening = inflate_opening(second.strip_prefix(&GZIP_HEADER)?)?;
    let key = format!(",\"{FIRST_DEPLOYED}\":");
    let value = opening.strip_prefix(key.as_bytes())?;
    let mut values = serde_json::Deserializer::from_slice(value).into_iter::<String>();
    values.next()?.ok()
}

/// The first [`OPENING_READ`] bytes (or fewer) that the opening `deflated` of a deflate
/// stream inflates to.
fn inflate_opening(deflated: &[u8]) -> Option<Vec<u8>> {
    INFLATE.with_borrow_mut(|kept| {
        let inflate = kept.get_or_insert_with(|| Decompress::new(false));
        inflate.reset(false);
        let mut opening = Vec::with_capacity(OPENING_READ);
        // Only the opening of the stream is at hand: it inflates as far as it goes.
        inflate
            .decompress_vec(deflated, &mut opening, FlushDecompress::None)
            .ok()?;
        Some(opening)
    })
}

/// Reads a release Helm encoded: gzipped (in any number of members) or, as very old Helm
/// wrote it, plain JSON.
pub fn decode(text: &[u8]) -> Result<Value, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| format!("not base64: {e}"))?;
    let json = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&bytes[..])
            .read_to_end(&mut out)
            .map_err(|e| format!("not gzip: {e}"))?;
        out
    } else {
        bytes
    };
    serde_json::from_slice(&json).map_err(|e| format!("not JSON: {e}"))
}

/// `body` as JSON, its `info` first with `status` then `first_deployed` opening it, when it
/// has an `info` object: the order [`encode_json`] and [`first_deployed`] look for.
fn ordered_json(body: &Value) -> serde_json::Result<Vec<u8>> {
    let Some((release, info)) = body
        .as_object()
        .and_then(|release| Some((release, release.get("info")?.as_object()?)))
    else {
        return serde_json::to_vec(body);
    };
    let first = |key: &str| key == "status" || key == FIRST_DEPLOYED;
    let mut json = br#"{"info":{"#.to_vec();
    write_members(&mut json, info, |key| key == "status")?;
    write_members(&mut json, info, |key| key == FIRST_DEPLOYED)?;
    write_members(&mut json, info, |key| !first(key))?;
    json.push(b'}');
    write_members(&mut json, release, |key| key != "info")?;
    json.push(b'}');
    Ok(json)
}

/// The first member of the record of the release `json`, and the JSON that follows it,
/// when `json` opens with its status and the status fits.
fn split_at_status(json: &[u8]) -> Option<(Vec<u8>, &[u8])> {
    let after_lead = json.strip_prefix(STATUS_LEAD)?;
    let mut strings = serde_json::Deserializer::from_slice(after_lead).into_iter::<&str>();
    let status = strings.next()?.ok()?;
    let rest = after_lead.get(strings.byte_offset()..)?;
    Some((status_member(status)?, rest))
}

/// Appends `"key":value` to `out` for each member of `object` whose key is `wanted`, each
/// after a comma unless it opens an object.
fn write_members(
    out: &mut Vec<u8>,
    object: &Map<String, Value>,
    wanted: impl Fn(&str) -> bool,
) -> serde_json::Result<()> {
    for (key, value) in object.iter().filter(|(key, _)| wanted(key)) {
        if out.last() != Some(&b'{') {
            out.push(b',');
        }
        serde_json::to_writer(&mut *out, key)?;
        out.push(b':');
        serde_json::to_writer(&mut *out, value)?;
    }
    Ok(())
}

/// A gzip member holding, stored, the opening of a release's JSON up to its `status`,
/// quoted and padded to [`STATUS_WIDTH`]; `None` for a status too long to fit.
fn status_member(status: &str) -> Option<Vec<u8>> {
    let quoted = serde_json::to_string(status).ok()?;
    if quoted.len() > STATUS_WIDTH {
        return None;
    }
    let mut text = STATUS_LEAD.to_vec();
    text.extend_from_slice(quoted.as_bytes());
    text.resize(STATUS_LEAD.len() + STATUS_WIDTH, b' ');
    let length = u16::try_from(text.len()).ok()?;
    let mut member = Vec::with_capacity(STATUS_MEMBER);
    member.extend_from_slice(&GZIP_HEADER);
    // The final block of the member, stored.
    member.push(1);
    member.extend_from_slice(&length.to_le_bytes());
    member.extend_from_slice(&(!length).to_le_bytes());
    member.extend_from_slice(&text);
    push_trailer(&mut member, &text);
    Some(member)
}

/// Appends `data` to `out` as a gzip member (RFC 1952), at the fastest level up to
/// [`FAST_UP_TO`] bytes and at the best above.
fn gzip_into(data: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    let (compressor, level) = if data.len() <= FAST_UP_TO {
        (&DEFLATE_FAST, Compression::fast())
    } else {
        (&DEFLATE_BEST, Compression::best())
    };
    compressor.with_borrow_mut(|kept| {
        let deflate = kept.get_or_insert_with(|| Compress::new(level, false));
        deflate.reset();
        out.reserve(GZIP_HEADER.len() + data.len() / 2 + 64);
        out.extend_from_slice(&GZIP_HEADER);
        loop {
            let read = usize::try_from(deflate.total_in()).unwrap_or(usize::MAX);
            let rest = data.get(read..).unwrap_or_default();
            // `compress_vec` writes into the spare capacity only: grow it when it is full.
            out.reserve(64.max(rest.len() / 2));
            match deflate.compress_vec(rest, out, FlushCompress::Finish) {
                Ok(Status::StreamEnd) => break,
                Ok(Status::Ok | Status::BufError) => continue,
                Err(error) => return Err(error.to_string()),
            }
        }
        push_trailer(out, data);
        Ok(())
    })
}

/// Appends the trailer of a gzip member holding `data`: its CRC-32, then its size modulo
/// 2^32, as the format has it.
fn push_trailer(out: &mut Vec<u8>, data: &[u8]) {
    let mut crc = Crc::new();
    crc.update(data);
    out.extend_from_slice(&crc.sum().to_le_bytes());
    out.extend_from_slice(&crc.amount().to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// 40,000 characters that compress poorly: each one of 64, drawn by a linear
    /// congruential generator.
    fn noise() -> String {
        const ALPHABET: &[u8; 64] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut state = 1u64;
        (0..40_000)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                char::from(ALPHABET[(state >> 58) as usize])
            })
            .collect()
    }

    /// `encoded` unpacked, member by member, as JSON text.
    fn unpacked(encoded: &str) -> (Vec<u8>, usize) {
        let packed = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .expect("base64");
        let mut reader = flate2::bufread::GzDecoder::new(&packed[..]);
        let mut text = Vec::new();
        let mut members = 0;
        loop {
            reader.read_to_end(&mut text).expect("a whole gzip member");
            members += 1;
            let rest = reader.into_inner();
            if rest.is_empty() {
                return (text, members);
            }
            reader = flate2::bufread::GzDecoder::new(rest);
        }
    }

    #[test]
    fn a_release_survives_helms_encoding() {
        let body = json!({"name": "web", "version": 3, "info": {"status": "deployed"}});
        let encoded = encode(&body).expect("encodes");
        assert_eq!(decode(encoded.as_bytes()).expect("decodes"), body);
        let plain = base64::engine::general_purpose::STANDARD.encode(body.to_string());
        assert_eq!(decode(plain.as_bytes()).expect("plain JSON"), body);
        assert!(decode(b"!!").is_err());
    }

    #[test]
    fn the_status_opens_the_record_in_a_member_of_its_own() {
        let body = json!({
            "name": "web",
            "info": {"first_deployed": "2026-12-05T10:00:00Z", "status": "deployed"},
            "manifest": "---\nkind: ConfigMap\n",
            "version": 3,
        });
        let encoded = encode(&body).expect("encodes");
        let (text, members) = unpacked(&encoded);
        assert_eq!(members, 2);
        let opening = br#"{"info":{"status":"deployed"         ,"first_deployed":"#;
        assert!(
            text.starts_with(opening),
            "{}",
            String::from_utf8_lossy(&text)
        );
        assert_eq!(serde_json::from_slice::<Value>(&text).expect("JSON"), body);
        assert_eq!(status_member("deployed").map(|m| m.len()), Some(60));
        assert_eq!(
            encoded.as_bytes()[80..],
            encode(&body).expect("again").as_bytes()[80..]
        );
    }

    #[test]
    fn restatus_swaps_the_opening_member_of_the_agents_records_only() {
        let body = json!({"name": "web", "info": {"status": "deployed"}, "version": 2});
        let encoded = encode(&body).expect("encodes");
        let superseded = restatus(encoded.as_bytes(), "deployed", "superseded").expect("swapped");
        let mut expected = body.clone();
        expected["info"]["status"] = json!("superseded");
        assert_eq!(decode(superseded.as_bytes()).expect("decodes"), expected);
        assert_eq!(unpacked(&superseded).1, 2);
        // Not the status it holds.
        assert_eq!(restatus(encoded.as_bytes(), "failed", "superseded"), None);
        // A record in one member, as Helm writes it.
        let json = serde_json::to_vec(&body).expect("JSON");
        let mut packed = Vec::new();
        gzip_into(&json, &mut packed).expect("gzips");
        let helms = base64::engine::general_purpose::STANDARD.encode(packed);
        assert_eq!(restatus(helms.as_bytes(), "deployed", "superseded"), None);
        // A status too long for the member is encoded in one.
        let odd = json!({"info": {"status": "a status longer than any of Helm's"}});
        let encoded = encode(&odd).expect("encodes");
        assert_eq!(unpacked(&encoded).1, 1);
        assert_eq!(decode(encoded.as_bytes()).expect("decodes"), odd);
        for status in ["pending-rollback", "uninstalling", "superseded"] {
            assert_eq!(status_member(status).map(|m| m.len()), Some(60), "{status}");
        }
    }

    #[test]
    fn first_deployed_is_read_from_the_opening_of_the_agents_records() {
        let first = "2026-12-05T10:00:00.123456789Z";
        let body = json!({
            "name": "web",
            "info": {"first_deployed": first, "last_deployed": "now", "status": "deployed"},
            "manifest": "---\nkind: ConfigMap\n",
        });
        let encoded = encode(&body).expect("encodes");
        assert_eq!(first_deployed(encoded.as_bytes()).as_deref(), Some(first));
        let superseded = restatus(encoded.as_bytes(), "deployed", "superseded").expect("swapped");
        assert_eq!(
            first_deployed(superseded.as_bytes()).as_deref(),
            Some(first)
        );
        // Written right after the status wherever it is in `info`.
        let later =
            json!({"info": {"status": "deployed", "description": "x", "first_deployed": first}});
        let encoded = encode(&later).expect("encodes");
        assert_eq!(first_deployed(encoded.as_bytes()).as_deref(), Some(first));
        assert_eq!(decode(encoded.as_bytes()).expect("decodes"), later);
        // A long record that compresses poorly: only its opening is decoded.
        let long =
            json!({"info": {"status": "failed", "first_deployed": first}, "manifest": noise()});
        let encoded = encode(&long).expect("encodes");
        assert!(encoded.len() > 20 * OPENING_BASE64, "{}", encoded.len());
        assert_eq!(first_deployed(encoded.as_bytes()).as_deref(), Some(first));
        // None in `info`.
        let none = json!({"info": {"status": "deployed", "description": "x"}});
        let encoded = encode(&none).expect("encodes");
        assert_eq!(first_deployed(encoded.as_bytes()), None);
        // A record in one member, as Helm writes it.
        let json = serde_json::to_vec(&body).expect("JSON");
        let mut packed = Vec::new();
        gzip_into(&json, &mut packed).expect("gzips");
        let helms = base64::engine::general_purpose::STANDARD.encode(packed);
        assert_eq!(first_deployed(helms.as_bytes()), None);
    }

    #[test]
    fn records_gzipped_one_after_another_on_a_thread_are_each_whole_gzip() {
        // A manifest that compresses poorly, so that the output outgrows its first guess.
        let bodies = [
            json!({"name": "large", "manifest": noise()}),
            json!({"name": "small", "version": 1}),
            json!({"name": "empty", "manifest": ""}),
        ];
        for body in &bodies {
            let json = serde_json::to_vec(body).expect("JSON");
            let mut packed = Vec::new();
            gzip_into(&json, &mut packed).expect("gzips");
            // flate2's reader checks the CRC and the size (Helm 4 reads the agent's records
            // in e2e/tests/helm_releases.rs).
            let mut unpacked = Vec::new();
            flate2::read::MultiGzDecoder::new(&packed[..])
                .read_to_end(&mut unpacked)
                .expect("whole gzip");
            assert_eq!(unpacked, json);
            assert_eq!(&packed[..2], &[0x1f, 0x8b]);
            let size = u32::try_from(json.len()).expect("small");
            assert_eq!(packed[packed.len() - 4..], size.to_le_bytes());
        }
        let large = serde_json::to_vec(&bodies[0]).expect("JSON");
        let mut packed = Vec::new();
        gzip_into(&large, &mut packed).expect("gzips");
        assert!(
            packed.len() > large.len() / 2 + 64,
            "outgrew the first guess"
        );
    }

    /// The length of `data` gzipped by flate2 at `level`.
    fn gzipped_at(data: &[u8], level: Compression) -> usize {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), level);
        std::io::Write::write_all(&mut encoder, data).expect("compressed");
        encoder.finish().expect("finished").len()
    }

    #[test]
    fn small_records_are_compressed_fast_and_large_ones_as_hard_as_helm_does() {
        // Manifests that compress well, and better the harder they are worked.
        let manifest = |bytes: usize| {
            (0..)
                .map(|n| format!("---\nkind: ConfigMap\nmetadata:\n  name: c{}\n", n % 977))
                .take_while({
                    let mut total = 0;
                    move |doc| {
                        total += doc.len();
                        total <= bytes
                    }
                })
                .collect::<String>()
        };
        for (bytes, wanted_fast) in [(64 << 10, true), (FAST_UP_TO + 1, false)] {
            let json = serde_json::to_vec(&json!({"manifest": manifest(bytes)})).expect("JSON");
            let mut packed = Vec::new();
            gzip_into(&json, &mut packed).expect("gzips");
            let (fast, best) = (
                gzipped_at(&json, Compression::fast()),
                gzipped_at(&json, Compression::best()),
            );
            assert!(
                fast > best + best / 4,
                "the levels tell apart: {fast} against {best}"
            );
            // Block boundaries differ by a few bytes from flate2's writer.
            let near = |length: usize| packed.len().abs_diff(length) < 64;
            assert!(
                near(if wanted_fast { fast } else { best }),
                "{bytes} bytes: {} (fast {fast}, best {best})",
                packed.len()
            );
        }
    }
}
