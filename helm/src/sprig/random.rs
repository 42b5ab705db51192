//! Random text: `randAlphaNum`, `randAlpha`, `randNumeric`, `randAscii`, `randBytes` and
//! `uuidv4`, drawn from the render's random source (really random unless a test seeds
//! it), with goutils' alphabets.

use std::collections::HashMap;

use base64::Engine;

use super::{arity, int_arg};
use crate::template::exec::MAX_OUTPUT;
use crate::template::{Func, Value, World};

const LETTERS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const DIGITS: &[u8] = b"0123456789";
const ALPHANUMERIC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// `count` characters drawn uniformly from `alphabet`; none for a negative count (goutils
/// refuses it, sprig prints nothing).
fn random_text(world: &World, count: i64, alphabet: &[u8]) -> Result<String, String> {
    let count = usize::try_from(count).unwrap_or(0);
    if count > MAX_OUTPUT {
        return Err(format!(
            "{count} random characters are more than a render may print"
        ));
    }
    Ok((0..count)
        .map(|_| char::from(alphabet[world.below(alphabet.len() as u64) as usize]))
        .collect())
}

/// The printable ASCII characters, space to `~` (goutils' `RandomAscii`).
fn printable_ascii() -> Vec<u8> {
    (32u8..127).collect()
}

/// A version 4 UUID from 16 random bytes.
fn uuid_v4(world: &World) -> String {
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&world.bytes(16));
    uuid::Builder::from_random_bytes(bytes)
        .into_uuid()
        .to_string()
}

pub(super) fn register(funcs: &mut HashMap<&'static str, Func>) {
    funcs.insert("randAlphaNum", |exec, a| {
        arity("randAlphaNum", &a, 1)?;
        random_text(&exec.world, int_arg(&a[0])?, ALPHANUMERIC).map(Value::from)
    });
    funcs.insert("randAlpha", |exec, a| {
        arity("randAlpha", &a, 1)?;
        random_text(&exec.world, int_arg(&a[0])?, LETTERS).map(Value::from)
    });
    funcs.insert("randNumeric", |exec, a| {
        arity("randNumeric", &a, 1)?;
        random_text(&exec.world, int_arg(&a[0])?, DIGITS).map(Value::from)
    });
    funcs.insert("randAscii", |exec, a| {
        arity("randAscii", &a, 1)?;
        random_text(&exec.world, int_arg(&a[0])?, &printable_ascii()).map(Value::from)
    });
    funcs.insert("randBytes", |exec, a| {
        arity("randBytes", &a, 1)?;
        let count = usize::try_from(int_arg(&a[0])?)
            .map_err(|_| "runtime error: makeslice: len out of range")?;
        if count > MAX_OUTPUT {
            return Err(format!(
                "{count} random bytes are more than a render may print"
            ));
        }
        Ok(Value::from(
            base64::engine::general_purpose::STANDARD.encode(exec.world.bytes(count)),
        ))
    });
    funcs.insert("uuidv4", |exec, a| {
        arity("uuidv4", &a, 0)?;
        Ok(Value::from(uuid_v4(&exec.world)))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_text_has_the_asked_shape() {
        let world = World::seeded(3, None);
        let text = random_text(&world, 200, ALPHANUMERIC).expect("text");
        assert_eq!(text.len(), 200);
        assert!(text.bytes().all(|b| b.is_ascii_alphanumeric()));
        assert!(text.bytes().any(|b| b.is_ascii_digit()));
        let ascii = random_text(&world, 500, &printable_ascii()).expect("text");
        assert!(ascii.bytes().all(|b| (32..127).contains(&b)));
        assert_eq!(random_text(&world, -1, DIGITS).as_deref(), Ok(""));
        let uuid = uuid_v4(&world);
        assert_eq!((uuid.len(), &uuid[14..15]), (36, "4"));
        assert!(matches!(&uuid[19..20], "8" | "9" | "a" | "b"));
        assert_eq!(
            uuid_v4(&World::seeded(9, None)),
            uuid_v4(&World::seeded(9, None))
        );
    }
}
