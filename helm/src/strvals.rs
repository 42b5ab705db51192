//! `--set` and its siblings, as Helm's `strvals` parses them: `a.b=c,d[0]=e`, lists
//! `a={x,y}`, `\` escaping `,` `.` `=` `[`, values typed (`true`, `null`, integers without a
//! leading zero) unless set as strings, JSON values for `--set-json`, file contents for
//! `--set-file`. Each parse merges into existing values, as `strvals.ParseInto` does.

use serde_json::{Map, Value as Json};

/// The deepest `a.b.c...` name accepted.
const MAX_NESTED_NAME_LEVEL: usize = 30;
/// The largest list index accepted.
const MAX_INDEX: usize = 65536;

/// How values are read.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Kind {
    /// `--set`: typed.
    Typed,
    /// `--set-string`: always strings.
    String,
    /// `--set-json`: JSON.
    Json,
}

/// Parses `text` (one `--set` argument) into `dest`.
pub(crate) fn parse_into(
    text: &str,
    dest: &mut Map<String, Json>,
    kind: Kind,
) -> Result<(), String> {
    parse_with(text, dest, kind, &|raw| {
        Ok(typed(raw, kind == Kind::String))
    })
}

/// Parses `text` (one `--set-file` argument: `key=path`) into `dest`, each value the
/// contents of the file `read` gives for it.
pub(crate) fn parse_file_into(
    text: &str,
    dest: &mut Map<String, Json>,
    read: &dyn Fn(&str) -> Result<String, String>,
) -> Result<(), String> {
    parse_with(text, dest, Kind::String, &|raw| read(raw).map(Json::String))
}

/// `--set-literal key=value`: the whole value as one string.
pub(crate) fn parse_literal_into(text: &str, dest: &mut Map<String, Json>) -> Result<(), String> {
    let (key, value) = text
        .split_once('=')
        .ok_or_else(|| format!("key {text:?} has no value"))?;
    let mut path: Vec<&str> = key.split('.').collect();
    let last = path.pop().unwrap_or_default();
    let mut target = dest;
    for part in path {
        let slot = target
            .entry(part.to_string())
            .or_insert_with(|| Json::Object(Map::new()));
        if !slot.is_object() {
            *slot = Json::Object(Map::new());
        }
        target = slot
            .as_object_mut()
            .ok_or_else(|| format!("key {part:?} is not a map"))?;
    }
    target.insert(last.to_string(), Json::String(value.to_string()));
    Ok(())
}

/// Helm's `typedVal`.
fn typed(raw: &str, as_string: bool) -> Json {
    if as_string {
        return Json::String(raw.to_string());
    }
    if raw.eq_ignore_ascii_case("true") {
        return Json::Bool(true);
    }
    if raw.eq_ignore_ascii_case("false") {
        return Json::Bool(false);
    }
    if raw.eq_ignore_ascii_case("null") {
        return Json::Null;
    }
    if raw == "0" {
        return Json::from(0);
    }
    if !raw.is_empty() && !raw.starts_with('0') {
        if let Some(i) = go_parse_int(raw) {
            return Json::from(i);
        }
    }
    Json::String(raw.to_string())
}

/// `strconv.ParseInt(s, 10, 64)`: an optional sign and decimal digits.
fn go_parse_int(raw: &str) -> Option<i64> {
    let digits = raw.strip_prefix(['+', '-']).unwrap_or(raw);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    raw.parse().ok()
}

type Reader<'r> = &'r dyn Fn(&str) -> Result<Json, String>;

struct Parser<'r> {
    chars: Vec<char>,
    at: usize,
    kind: Kind,
    read: Reader<'r>,
}

/// Why reading stopped: the input ended, or another error.
enum Stop {
    End,
    Error(String),
}

impl From<String> for Stop {
    fn from(message: String) -> Self {
        Stop::Error(message)
    }
}

fn parse_with(
    text: &str,
    dest: &mut Map<String, Json>,
    kind: Kind,
    read: Reader<'_>,
) -> Result<(), String> {
    let mut parser = Parser {
        chars: text.chars().collect(),
        at: 0,
        kind,
        read,
    };
    loop {
        match parser.key(dest, 0) {
            Ok(()) => {}
            Err(Stop::End) => return Ok(()),
            Err(Stop::Error(message)) => return Err(message),
        }
    }
}

impl Parser<'_> {
    fn next(&mut self) -> Option<char> {
        let c = self.chars.get(self.at).copied();
        if c.is_some() {
            self.at += 1;
        }
        c
    }

    /// Helm's `runesUntil`: characters up to one of `stop` (consumed), `\` escaping the next.
    fn until(&mut self, stop: &[char]) -> (String, Option<char>) {
        let mut out = String::new();
        while let Some(c) = self.next() {
            if stop.contains(&c) {
                return (out, Some(c));
            }
            if c == '\\' {
                match self.next() {
                    Some(escaped) => out.push(escaped),
                    None => return (out, None),
                }
            } else {
                out.push(c);
            }
        }
        (out, None)
    }

    fn key(&mut self, data: &mut Map<String, Json>, level: usize) -> Result<(), Stop> {
        let (key, last) = self.until(&['=', '[', ',', '.']);
        match last {
            None if key.is_empty() => Err(Stop::End),
            None => Err(format!("key {key:?} has no value").into()),
            Some('[') => {
                let index = self.index()?;
                let mut list = match data.get(&key) {
                    Some(Json::Array(items)) => items.clone(),
                    Some(_) => {
                        return Err(format!(
                            "unable to parse key: interface conversion: interface {{}} is not []interface {{}}: key {key:?}"
                        )
                        .into())
                    }
                    None => Vec::new(),
                };
                let result = self.list_item(&mut list, index, level);
                set(data, &key, Json::Array(list));
                result
            }
            Some('=') => {
                let value = self.value_of_key()?;
                match value {
                    Read::Value(value) => {
                        set(data, &key, value);
                        Ok(())
                    }
                    Read::Ended(value) => {
                        set(data, &key, value);
                        Err(Stop::End)
                    }
                }
            }
            Some(',') => {
                set(data, &key, Json::String(String::new()));
                Err(format!("key {key:?} has no value (cannot end with ,)").into())
            }
            Some(_) => {
                let level = level + 1;
                if level > MAX_NESTED_NAME_LEVEL {
                    return Err(format!(
                        "value name nested level is greater than maximum supported nested level of {MAX_NESTED_NAME_LEVEL}"
                    )
                    .into());
                }
                let mut inner = match data.get(&key) {
                    Some(Json::Object(map)) => map.clone(),
                    Some(_) => {
                        return Err(format!(
                            "unable to parse key: interface conversion: interface {{}} is not map[string]interface {{}}: key {key:?}"
                        )
                        .into())
                    }
                    None => Map::new(),
                };
                let result = self.key(&mut inner, level);
                if result.is_ok() && inner.is_empty() {
                    return Err(format!("key map {key:?} has no value").into());
                }
                if !inner.is_empty() {
                    set(data, &key, Json::Object(inner));
                }
                result
            }
        }
    }

    /// The value after `key=`: JSON, a `{list}`, or a plain value up to the next `,`.
    fn value_of_key(&mut self) -> Result<Read, Stop> {
        if self.kind == Kind::Json {
            return self.json_value().map(Read::Value);
        }
        match self.list() {
            Ok(list) => Ok(Read::Value(Json::Array(list))),
            Err(ListError::End) => Ok(Read::Ended(Json::String(String::new()))),
            Err(ListError::NotAList) => {
                let (raw, last) = self.until(&[',']);
                let value = (self.read)(&raw)?;
                Ok(if last.is_none() {
                    Read::Ended(value)
                } else {
                    Read::Value(value)
                })
            }
            Err(ListError::Other(message)) => Err(message.into()),
        }
    }

    fn index(&mut self) -> Result<usize, Stop> {
        let (raw, last) = self.until(&[']']);
        if last.is_none() {
            return Err(Stop::End);
        }
        let index: i64 = raw.parse().map_err(|_| {
            format!("error parsing index: strconv.Atoi: parsing {raw:?}: invalid syntax")
        })?;
        usize::try_from(index).map_err(|_| format!("negative {index} index not allowed").into())
    }

    fn list_item(&mut self, list: &mut Vec<Json>, index: usize, level: usize) -> Result<(), Stop> {
        let (rest, last) = self.until(&['[', '.', '=']);
        if !rest.is_empty() {
            return Err(format!("unexpected data at end of array index: {rest:?}").into());
        }
        match last {
            None => Err(Stop::End),
            Some('=') => match self.value_of_key()? {
                Read::Value(value) | Read::Ended(value) => set_index(list, index, value),
            },
            Some('[') => {
                let next = self.index()?;
                let mut inner = match list.get(index) {
                    Some(Json::Array(items)) => items.clone(),
                    _ => Vec::new(),
                };
                self.list_item(&mut inner, next, level)?;
                set_index(list, index, Json::Array(inner))
            }
            Some(_) => {
                let mut inner = match list.get(index) {
                    Some(Json::Object(map)) => map.clone(),
                    _ => Map::new(),
                };
                self.key(&mut inner, level)?;
                set_index(list, index, Json::Object(inner))
            }
        }
    }

    /// `{a,b}`: a list of values, or not a list (nothing consumed).
    fn list(&mut self) -> Result<Vec<Json>, ListError> {
        match self.chars.get(self.at) {
            None => return Err(ListError::End),
            Some('{') => self.at += 1,
            Some(_) => return Err(ListError::NotAList),
        }
        let mut list = Vec::new();
        loop {
            let (raw, last) = self.until(&[',', '}']);
            match last {
                None => {
                    return Err(ListError::Other("list must terminate with '}'".into()));
                }
                Some('}') => {
                    if self.chars.get(self.at) == Some(&',') {
                        self.at += 1;
                    }
                    list.push((self.read)(&raw).map_err(ListError::Other)?);
                    return Ok(list);
                }
                Some(_) => list.push((self.read)(&raw).map_err(ListError::Other)?),
            }
        }
    }

    /// A JSON value (`--set-json`), then optional spaces and a comma.
    fn json_value(&mut self) -> Result<Json, Stop> {
        if self.empty_value() {
            return Ok(Json::Null);
        }
        let rest: String = self.chars[self.at..].iter().collect();
        let mut stream = serde_json::Deserializer::from_str(&rest).into_iter::<Json>();
        let value = match stream.next() {
            Some(Ok(value)) => value,
            Some(Err(e)) => return Err(e.to_string().into()),
            None => return Err(Stop::End),
        };
        let consumed = rest[..stream.byte_offset()].chars().count();
        self.at += consumed;
        self.empty_value();
        Ok(value)
    }

    /// Helm's `emptyVal`: spaces then a comma or the end (consumed) is an empty value.
    fn empty_value(&mut self) -> bool {
        while let Some(c) = self.chars.get(self.at).copied() {
            if c == ',' {
                self.at += 1;
                return true;
            }
            if !c.is_whitespace() {
                return false;
            }
            self.at += 1;
        }
        true
    }
}

enum Read {
    /// A value, more may follow.
    Value(Json),
    /// A value at the end of the input.
    Ended(Json),
}

enum ListError {
    End,
    NotAList,
    Other(String),
}

fn set(data: &mut Map<String, Json>, key: &str, value: Json) {
    if !key.is_empty() {
        data.insert(key.to_string(), value);
    }
}

fn set_index(list: &mut Vec<Json>, index: usize, value: Json) -> Result<(), Stop> {
    if index > MAX_INDEX {
        return Err(format!(
            "index of {index} is greater than maximum supported index of {MAX_INDEX}"
        )
        .into());
    }
    if list.len() <= index {
        list.resize(index + 1, Json::Null);
    }
    list[index] = value;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(text: &str, kind: Kind) -> Result<Json, String> {
        let mut map = Map::new();
        parse_into(text, &mut map, kind).map(|()| Json::Object(map))
    }

    #[test]
    fn set_follows_helm_strvals() {
        // Cases from Helm's strvals documentation and tests.
        assert_eq!(
            parse(
                "name=value,a.b=1,c=true,d=null,e=007,f=0,g=1.5",
                Kind::Typed
            ),
            Ok(
                json!({"name": "value", "a": {"b": 1}, "c": true, "d": null, "e": "007", "f": 0, "g": "1.5"})
            )
        );
        assert_eq!(
            parse("list={a,b,c},x=y\\,z,n\\.m=1", Kind::Typed),
            Ok(json!({"list": ["a", "b", "c"], "x": "y,z", "n.m": 1}))
        );
        assert_eq!(
            parse("a[1]=x,b[0].c=2,d[0][1]=y", Kind::Typed),
            Ok(json!({"a": [null, "x"], "b": [{"c": 2}], "d": [[null, "y"]]}))
        );
        assert_eq!(
            parse("a=1,b=true", Kind::String),
            Ok(json!({"a": "1", "b": "true"}))
        );
        assert_eq!(
            parse("a={\"b\": [1, 2]},c=null", Kind::Json),
            Ok(json!({"a": {"b": [1, 2]}, "c": null}))
        );
        assert_eq!(parse("a=", Kind::Typed), Ok(json!({"a": ""})));
        assert_eq!(
            parse("name", Kind::Typed),
            Err("key \"name\" has no value".to_string())
        );
        assert_eq!(
            parse("a=b,c", Kind::Typed),
            Err("key \"c\" has no value".to_string())
        );
    }

    #[test]
    fn set_merges_into_existing_values() {
        let mut values = json!({"a": {"keep": 1}, "list": ["x", "y", "z"]})
            .as_object()
            .cloned()
            .unwrap_or_default();
        parse_into("a.new=2,list[1]=Y", &mut values, Kind::Typed).expect("parses");
        assert_eq!(
            Json::Object(values),
            json!({"a": {"keep": 1, "new": 2}, "list": ["x", "Y", "z"]})
        );
    }
}
