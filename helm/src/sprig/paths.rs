//! Paths and URLs: `base`, `dir`, `clean`, `ext`, `isAbs` (Go's `path`) and their `os`
//! forms (`path/filepath`, the same on Linux), `urlParse` and `urlJoin` (Go's `net/url`).

use std::collections::{BTreeMap, HashMap};

use super::{arity, str_arg};
use crate::template::{Func, Value};

/// Go's `path.Clean`: one slash between elements, no `.`, `..` resolved lexically.
pub(super) fn clean(path: &str) -> String {
    if path.is_empty() {
        return ".".into();
    }
    let rooted = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

/// Go's `path.Base`: the last element, trailing slashes ignored.
fn base(path: &str) -> String {
    if path.is_empty() {
        return ".".into();
    }
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return "/".into();
    }
    trimmed.rsplit('/').next().unwrap_or(trimmed).to_string()
}

/// Go's `path.Dir`: everything but the last element, cleaned.
fn dir(path: &str) -> String {
    let cut = path.rfind('/').map_or(0, |i| i + 1);
    clean(&path[..cut])
}

/// Go's `path.Ext`: the last element's suffix from its final dot.
fn ext(path: &str) -> String {
    let last = path.rsplit('/').next().unwrap_or(path);
    last.rfind('.')
        .map(|i| last[i..].to_string())
        .unwrap_or_default()
}

/// The parts of a URL as Go's `net/url` keeps them.
#[derive(Debug, Default, PartialEq)]
struct Url {
    scheme: String,
    opaque: String,
    user: Option<(String, Option<String>)>,
    host: String,
    path: String,
    raw_query: String,
    force_query: bool,
    fragment: String,
}

/// How a part of a URL is escaped (Go's `encoding` modes).
#[derive(Clone, Copy, PartialEq)]
enum Part {
    Path,
    Host,
    UserPassword,
    Fragment,
}

/// Go's `shouldEscape`.
fn should_escape(c: u8, part: Part) -> bool {
    if c.is_ascii_alphanumeric() {
        return false;
    }
    if part == Part::Host
        && matches!(
            c,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'['
                | b']'
                | b'<'
                | b'>'
                | b'"'
        )
    {
        return false;
    }
    match c {
        b'-' | b'_' | b'.' | b'~' => false,
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => match part {
            Part::Path => c == b'?',
            Part::UserPassword => matches!(c, b'@' | b'/' | b'?' | b':'),
            Part::Fragment => false,
            Part::Host => true,
        },
        b'!' | b'(' | b')' | b'*' if part == Part::Fragment => false,
        _ => true,
    }
}

fn escape(text: &str, part: Part) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if should_escape(byte, part) {
            out.push_str(&format!("%{byte:02X}"));
        } else {
            out.push(char::from(byte));
        }
    }
    out
}

/// Go's `unescape`: `%XX` decoded.
fn unescape(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text
                .get(i + 1..i + 3)
                .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
            let Some(hex) = hex else {
                let bad = text.get(i..(i + 3).min(text.len())).unwrap_or("%");
                return Err(format!("invalid URL escape {}", go_quote(bad)));
            };
            out.push(u8::from_str_radix(hex, 16).unwrap_or(0));
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

fn go_quote(text: &str) -> String {
    crate::template::printf::go_quote(text)
}

/// The scheme of `raw`, if it starts with one (`getScheme`).
fn split_scheme(raw: &str) -> Result<(String, &str), String> {
    for (i, c) in raw.char_indices() {
        match c {
            'a'..='z' | 'A'..='Z' => {}
            '0'..='9' | '+' | '-' | '.' if i > 0 => {}
            ':' if i == 0 => return Err("missing protocol scheme".into()),
            ':' => return Ok((raw[..i].to_ascii_lowercase(), &raw[i + 1..])),
            _ => return Ok((String::new(), raw)),
        }
    }
    Ok((String::new(), raw))
}

/// Go's `url.Parse`.
fn parse_url(raw: &str) -> Result<Url, String> {
    let fail = |message: String| format!("parse {}: {message}", go_quote(raw));
    let (rest, fragment) = match raw.split_once('#') {
        Some((rest, fragment)) => (rest, unescape(fragment).map_err(fail)?),
        None => (raw, String::new()),
    };
    let mut url = Url {
        fragment,
        ..Url::default()
    };
    if rest.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err(fail("net/url: invalid control character in URL".into()));
    }
    if rest.is_empty() {
        return Ok(url);
    }
    let (scheme, mut rest) = split_scheme(rest).map_err(fail)?;
    url.scheme = scheme;
    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        url.force_query = true;
        rest = &rest[..rest.len() - 1];
    } else if let Some((before, query)) = rest.split_once('?') {
        url.raw_query = query.to_string();
        rest = before;
    }
    if !rest.starts_with('/') {
        if !url.scheme.is_empty() {
            url.opaque = rest.to_string();
            return Ok(url);
        }
        let first_segment = rest.split('/').next().unwrap_or(rest);
        if first_segment.contains(':') {
            return Err(fail(
                "first path segment in URL cannot contain colon".into(),
            ));
        }
    }
    if (!url.scheme.is_empty() || !rest.starts_with("///")) && rest.starts_with("//") {
        let after = &rest[2..];
        let end = after.find('/').unwrap_or(after.len());
        let authority = &after[..end];
        rest = &after[end..];
        let host = match authority.rfind('@') {
            Some(at) => {
                let info = &authority[..at];
                url.user = Some(match info.split_once(':') {
                    Some((user, password)) => (
                        unescape(user).map_err(fail)?,
                        Some(unescape(password).map_err(fail)?),
                    ),
                    None => (unescape(info).map_err(fail)?, None),
                });
                &authority[at + 1..]
            }
            None => authority,
        };
        url.host = unescape(host).map_err(fail)?;
    }
    url.path = unescape(rest).map_err(fail)?;
    Ok(url)
}

impl Url {
    /// Go's `URL.Hostname`: the host without its port or IPv6 brackets.
    fn hostname(&self) -> String {
        let host = &self.host;
        if let Some(inner) = host.strip_prefix('[') {
            return inner.split(']').next().unwrap_or(inner).to_string();
        }
        match host.rfind(':') {
            Some(i) => host[..i].to_string(),
            None => host.clone(),
        }
    }

    fn userinfo(&self) -> String {
        match &self.user {
            None => String::new(),
            Some((user, password)) => {
                let mut out = escape(user, Part::UserPassword);
                if let Some(password) = password {
                    out.push(':');
                    out.push_str(&escape(password, Part::UserPassword));
                }
                out
            }
        }
    }

    /// Go's `URL.String`.
    fn to_text(&self) -> String {
        let mut out = String::new();
        if !self.scheme.is_empty() {
            out.push_str(&self.scheme);
            out.push(':');
        }
        if !self.opaque.is_empty() {
            out.push_str(&self.opaque);
        } else {
            if !self.scheme.is_empty() || !self.host.is_empty() || self.user.is_some() {
                if !self.host.is_empty() || !self.path.is_empty() || self.user.is_some() {
                    out.push_str("//");
                }
                if self.user.is_some() {
                    out.push_str(&self.userinfo());
                    out.push('@');
                }
                out.push_str(&escape(&self.host, Part::Host));
            }
            let path = escape(&self.path, Part::Path);
            if !path.is_empty() && !path.starts_with('/') && !self.host.is_empty() {
                out.push('/');
            }
            if out.is_empty() && path.split('/').next().is_some_and(|s| s.contains(':')) {
                out.push_str("./");
            }
            out.push_str(&path);
        }
        if self.force_query || !self.raw_query.is_empty() {
            out.push('?');
            out.push_str(&self.raw_query);
        }
        if !self.fragment.is_empty() {
            out.push('#');
            out.push_str(&escape(&self.fragment, Part::Fragment));
        }
        out
    }
}

fn url_parse(raw: &str) -> Result<Value, String> {
    let url = parse_url(raw).map_err(|e| format!("unable to parse url: {e}"))?;
    let text = |s: &str| Value::from(s);
    Ok(Value::from(BTreeMap::from([
        ("scheme".to_string(), text(&url.scheme)),
        ("host".to_string(), text(&url.host)),
        ("hostname".to_string(), Value::from(url.hostname())),
        ("path".to_string(), text(&url.path)),
        ("query".to_string(), text(&url.raw_query)),
        ("opaque".to_string(), text(&url.opaque)),
        ("fragment".to_string(), text(&url.fragment)),
        ("userinfo".to_string(), Value::from(url.userinfo())),
    ])))
}

fn url_join(parts: &Value) -> Result<Value, String> {
    let field = |key: &str| -> Result<String, String> {
        match parts.get(key) {
            Value::Nil => Ok(String::new()),
            Value::Str(s) => Ok(s.to_string()),
            other => Err(format!(
                "interface conversion: interface {{}} is {}, not string",
                other.type_name()
            )),
        }
    };
    let userinfo = field("userinfo")?;
    let user = if userinfo.is_empty() {
        None
    } else {
        parse_url(&format!("proto://{userinfo}@host"))
            .map_err(|e| format!("unable to parse userinfo in dict: {e}"))?
            .user
    };
    let url = Url {
        scheme: field("scheme")?,
        host: field("host")?,
        path: field("path")?,
        raw_query: field("query")?,
        opaque: field("opaque")?,
        fragment: field("fragment")?,
        user,
        force_query: false,
    };
    Ok(Value::from(url.to_text()))
}

fn one_path(name: &str, a: &[Value]) -> Result<String, String> {
    arity(name, a, 1)?;
    str_arg(&a[0])
}

pub(super) fn register(funcs: &mut HashMap<&'static str, Func>) {
    let path_functions: [(&'static str, &'static str, Func); 5] = [
        ("base", "osBase", |_, a| {
            Ok(Value::from(base(&one_path("base", &a)?)))
        }),
        ("dir", "osDir", |_, a| {
            Ok(Value::from(dir(&one_path("dir", &a)?)))
        }),
        ("clean", "osClean", |_, a| {
            Ok(Value::from(clean(&one_path("clean", &a)?)))
        }),
        ("ext", "osExt", |_, a| {
            Ok(Value::from(ext(&one_path("ext", &a)?)))
        }),
        ("isAbs", "osIsAbs", |_, a| {
            Ok(Value::Bool(one_path("isAbs", &a)?.starts_with('/')))
        }),
    ];
    for (name, os_name, func) in path_functions {
        funcs.insert(name, func);
        funcs.insert(os_name, func);
    }
    funcs.insert("urlParse", |_, a| url_parse(&one_path("urlParse", &a)?));
    funcs.insert("urlJoin", |_, a| {
        arity("urlJoin", &a, 1)?;
        url_join(&a[0])
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected values from Go's path and net/url documentation, and Helm 4.3.1's output.
    #[test]
    fn paths_as_go_path() {
        assert_eq!(clean("/a/../b//c/"), "/b/c");
        assert_eq!(clean("a/../../b"), "../b");
        assert_eq!(clean("/../x"), "/x");
        assert_eq!(clean(""), ".");
        assert_eq!(base("/a/b.txt"), "b.txt");
        assert_eq!(base(""), ".");
        assert_eq!(base("/"), "/");
        assert_eq!(base("a/b/"), "b");
        assert_eq!(dir("/a/b.txt"), "/a");
        assert_eq!(dir("a"), ".");
        assert_eq!(dir(""), ".");
        assert_eq!(ext("x.tar.gz"), ".gz");
        assert_eq!(ext("noext"), "");
        assert_eq!(ext("a.b/c"), "");
    }

    #[test]
    fn urls_as_net_url() {
        let parsed =
            url_parse("https://user:pw@host.example.com:8080/a/b?x=1&y=2#frag").expect("parses");
        assert_eq!(
            parsed.to_go_string(),
            "map[fragment:frag host:host.example.com:8080 hostname:host.example.com opaque: path:/a/b query:x=1&y=2 scheme:https userinfo:user:pw]"
        );
        assert_eq!(
            url_parse("mailto:someone@example.com")
                .expect("parses")
                .to_go_string(),
            "map[fragment: host: hostname: opaque:someone@example.com path: query: scheme:mailto userinfo:]"
        );
        let parts = Value::from(BTreeMap::from([
            ("scheme".to_string(), Value::from("http")),
            ("host".to_string(), Value::from("h:1")),
            ("path".to_string(), Value::from("/p q")),
            ("query".to_string(), Value::from("a=b")),
            ("fragment".to_string(), Value::from("f")),
            ("userinfo".to_string(), Value::from("u:p")),
        ]));
        assert_eq!(
            url_join(&parts).expect("joins").to_go_string(),
            "http://u:p@h:1/p%20q?a=b#f"
        );
        assert!(url_parse("%zz").is_err());
        assert!(url_parse(":x").is_err());
    }
}
