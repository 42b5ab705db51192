//! Byte strings as Kubernetes' JSON carries them: standard base64 with padding, read as
//! Go's `encoding/base64` reads it (line breaks skipped) and written back canonical.

use ::base64::engine::general_purpose::STANDARD;
use ::base64::{DecodeError, Engine};

/// The canonical form of a base64 byte string, or Go's decoding error for it
/// (`illegal base64 data at input byte N`, N counted in the text as given).
pub fn canonical(text: &str) -> Result<String, String> {
    // Go skips carriage returns and newlines; remember where each kept byte came from.
    let kept: Vec<(usize, u8)> = (text.bytes().enumerate())
        .filter(|(_, b)| !matches!(b, b'\r' | b'\n'))
        .collect();
    let compact: Vec<u8> = kept.iter().map(|(_, b)| *b).collect();
    let original = |at: usize| kept.get(at).map_or(text.len(), |(i, _)| *i);
    match STANDARD.decode(&compact) {
        Ok(bytes) => Ok(STANDARD.encode(bytes)),
        Err(error) => {
            let at = match error {
                DecodeError::InvalidByte(at, _) | DecodeError::InvalidLastSymbol(at, _) => {
                    original(at)
                }
                // A quantum left short: Go points at its start.
                DecodeError::InvalidLength(_) | DecodeError::InvalidPadding => {
                    original(compact.len() - compact.len() % 4)
                }
            };
            Err(format!("illegal base64 data at input byte {at}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::canonical;

    #[test]
    fn base64_is_read_as_go_reads_it() {
        assert_eq!(canonical("aGVsbG8=").as_deref(), Ok("aGVsbG8="));
        assert_eq!(canonical("aGVs\nbG8=").as_deref(), Ok("aGVsbG8="));
        assert_eq!(canonical("").as_deref(), Ok(""));
        assert_eq!(
            canonical("not base64!"),
            Err("illegal base64 data at input byte 3".into())
        );
        assert_eq!(
            canonical("aGVsbG8"),
            Err("illegal base64 data at input byte 4".into())
        );
    }
}
