//! Splitting a template into text and actions (with `{{-`/`-}}` trimming and comments),
//! and an action into tokens.

use super::ast::Pos;

/// A piece of a template: literal text, or the inside of `{{ }}`.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// Text, already trimmed by neighbouring markers.
    Text(String),
    /// An action's tokens and where it starts.
    Action(Vec<Token>, Pos),
}

/// A token inside an action.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    /// What it is.
    pub kind: Tok,
    /// Whether whitespace came right before it.
    pub spaced: bool,
    /// Where it starts.
    pub pos: Pos,
}

/// Token kinds.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// `.`
    Dot,
    /// `.name`
    Field(String),
    /// `$name`, or `$` alone (empty name).
    Var(String),
    /// A bare word: a function or keyword.
    Ident(String),
    /// A quoted or raw string: its value, and its text as written (with the quotes).
    Str(String, String),
    /// A number as written.
    Number(String),
    /// A character constant, as its code point.
    Char(i64),
    /// `(`
    LParen,
    /// `)`
    RParen,
    /// `|`
    Pipe,
    /// `:=`
    Declare,
    /// `=`
    Assign,
    /// `,`
    Comma,
}

/// Maps byte offsets to line and column.
struct Lines {
    starts: Vec<usize>,
}

impl Lines {
    fn new(source: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(memchr::memchr_iter(b'\n', source.as_bytes()).map(|i| i + 1));
        Self { starts }
    }

    /// The 1-based line and, as Go reports it, the 0-based byte column.
    fn pos(&self, offset: usize) -> Pos {
        let line = self.starts.partition_point(|s| *s <= offset);
        let start = self.starts[line.saturating_sub(1)];
        Pos {
            line,
            col: offset - start,
        }
    }
}

/// A lexing error: the line and what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct LexError {
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub message: String,
    /// The line of the action the error is in, when that is not `line` (Go then adds
    /// "started at NAME:LINE").
    pub action_line: Option<usize>,
}

fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

/// The marks around actions: Go's `{{` and `}}` unless a template set says otherwise
/// (Fleet templates Helm values between `${` and `}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delims {
    /// What opens an action.
    pub left: &'static str,
    /// What closes one.
    pub right: &'static str,
}

impl Delims {
    /// Go's own.
    pub const GO: Delims = Delims {
        left: "{{",
        right: "}}",
    };
}

impl Default for Delims {
    fn default() -> Self {
        Delims::GO
    }
}

/// Splits a template into items.
pub fn items(source: &str) -> Result<Vec<Item>, LexError> {
    items_with(source, Delims::GO)
}

/// Splits a template whose actions are marked by `delims` into items.
pub fn items_with(source: &str, delims: Delims) -> Result<Vec<Item>, LexError> {
    let lines = Lines::new(source);
    let mut items = Vec::new();
    let mut rest_start = 0;
    let mut trim_next = false;
    let left = memchr::memmem::Finder::new(delims.left);
    while let Some(found) = left.find(&source.as_bytes()[rest_start..]) {
        let open = rest_start + found;
        let mut text = &source[rest_start..open];
        if trim_next {
            text = text.trim_start_matches(is_space);
        }
        let mut inner_start = open + delims.left.len();
        let after = &source[inner_start..];
        let trim_left = after.starts_with('-') && after[1..].starts_with(is_space);
        if trim_left {
            text = text.trim_end_matches(is_space);
            inner_start += 1;
        }
        if !text.is_empty() {
            items.push(Item::Text(text.to_string()));
        }
        let pos = lines.pos(open);
        let Some((close, trim_right)) = find_close(source, inner_start, delims.right) else {
            // Report a bad token on the action's line first, as Go's lexer does.
            let line_end = source[inner_start..]
                .find('\n')
                .map_or(source.len(), |i| inner_start + i);
            tokenize(source, inner_start, line_end, &lines)?;
            // Go's lexer meets the end of the text, and reports it on the last line.
            let end = 1 + source.matches('\n').count();
            return Err(LexError {
                line: end,
                message: "unclosed action".into(),
                action_line: (end != pos.line).then_some(pos.line),
            });
        };
        let inner_end = if trim_right { close - 1 } else { close };
        let inner = &source[inner_start..inner_end];
        let trimmed = inner.trim_matches(is_space);
        if trimmed.starts_with("/*") {
            if !trimmed.ends_with("*/") {
                return Err(LexError {
                    line: pos.line,
                    message: "unclosed comment".into(),
                    action_line: None,
                });
            }
        } else {
            let tokens = tokenize(source, inner_start, inner_end, &lines)?;
            items.push(Item::Action(tokens, pos));
        }
        trim_next = trim_right;
        rest_start = close + delims.right.len();
    }
    let mut tail = &source[rest_start..];
    if trim_next {
        tail = tail.trim_start_matches(is_space);
    }
    if !tail.is_empty() {
        items.push(Item::Text(tail.to_string()));
    }
    Ok(items)
}

/// The offset of the `right` delimiter closing an action that starts at `from`, and whether
/// it is preceded by a ` -` trim marker. Quotes are skipped; a comment may hold anything.
fn find_close(source: &str, from: usize, right: &str) -> Option<(usize, bool)> {
    let bytes = source.as_bytes();
    let start = from + source[from..].len() - source[from..].trim_start_matches(is_space).len();
    if source[start..].starts_with("/*") {
        let end = start + source[start..].find("*/")? + 2;
        let close = end + source[end..].find(right)?;
        let trim = source[end..close].trim_matches(is_space) == "-";
        return Some((close, trim));
    }
    let mut i = from;
    while i < bytes.len() {
        match bytes[i] {
            b'"' | b'\'' => {
                let quote = bytes[i];
                i += 1;
                while i < bytes.len() && bytes[i] != quote {
                    if bytes[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'`' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'`' {
                    i += 1;
                }
            }
            _ if source.as_bytes()[i..].starts_with(right.as_bytes()) => {
                let trim = i >= 2 && bytes[i - 1] == b'-' && is_space(char::from(bytes[i - 2]));
                return Some((i, trim));
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// A character as Go's `%#U` prints it: `U+0022 '"'`.
fn go_rune(c: char) -> String {
    format!("U+{:04X} '{c}'", u32::from(c))
}

fn word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn tokenize(source: &str, start: usize, end: usize, lines: &Lines) -> Result<Vec<Token>, LexError> {
    let text = &source[start..end];
    let mut tokens = Vec::new();
    let mut chars = text.char_indices().peekable();
    let mut spaced = true;
    let error = |offset: usize, message: String| LexError {
        line: lines.pos(start + offset).line,
        message,
        action_line: None,
    };
    while let Some(&(i, c)) = chars.peek() {
        if is_space(c) {
            chars.next();
            spaced = true;
            continue;
        }
        let pos = lines.pos(start + i);
        let take_word = |chars: &mut std::iter::Peekable<std::str::CharIndices>| {
            let mut word = String::new();
            while let Some(&(_, c)) = chars.peek() {
                if !word_char(c) {
                    break;
                }
                word.push(c);
                chars.next();
            }
            word
        };
        let kind = match c {
            '.' => {
                chars.next();
                match chars.peek() {
                    Some(&(_, n)) if word_char(n) && !n.is_ascii_digit() => {
                        Tok::Field(take_word(&mut chars))
                    }
                    Some(&(_, n)) if n.is_ascii_digit() => {
                        let digits = take_word(&mut chars);
                        Tok::Number(format!(".{digits}"))
                    }
                    _ => Tok::Dot,
                }
            }
            '$' => {
                chars.next();
                Tok::Var(take_word(&mut chars))
            }
            '(' => {
                chars.next();
                Tok::LParen
            }
            ')' => {
                chars.next();
                Tok::RParen
            }
            '|' => {
                chars.next();
                Tok::Pipe
            }
            ',' => {
                chars.next();
                Tok::Comma
            }
            '=' => {
                chars.next();
                Tok::Assign
            }
            ':' => {
                chars.next();
                match chars.next() {
                    Some((_, '=')) => Tok::Declare,
                    _ => return Err(error(i, "expected :=".into())),
                }
            }
            '"' => {
                chars.next();
                let mut value = String::new();
                loop {
                    match chars.next() {
                        None | Some((_, '\n')) => {
                            return Err(error(i, "unterminated quoted string".into()))
                        }
                        Some((_, '"')) => break,
                        Some((_, '\\')) => {
                            value.push(unescape(&mut chars).map_err(|m| error(i, m))?)
                        }
                        Some((_, c)) => value.push(c),
                    }
                }
                let end = chars.peek().map_or(text.len(), |(j, _)| *j);
                Tok::Str(value, text[i..end].to_string())
            }
            '`' => {
                chars.next();
                let mut value = String::new();
                loop {
                    match chars.next() {
                        None => return Err(error(i, "unterminated raw quoted string".into())),
                        Some((_, '`')) => break,
                        Some((_, c)) => value.push(c),
                    }
                }
                let end = chars.peek().map_or(text.len(), |(j, _)| *j);
                Tok::Str(value, text[i..end].to_string())
            }
            '\'' => {
                chars.next();
                let value = match chars.next() {
                    Some((_, '\\')) => unescape(&mut chars).map_err(|m| error(i, m))?,
                    Some((_, c)) => c,
                    None => return Err(error(i, "unterminated character constant".into())),
                };
                if chars.next().map(|(_, c)| c) != Some('\'') {
                    return Err(error(i, "unterminated character constant".into()));
                }
                Tok::Char(i64::from(u32::from(value)))
            }
            c if c.is_ascii_digit() || ((c == '-' || c == '+') && next_is_digit(text, i)) => {
                let mut number = String::new();
                number.push(c);
                chars.next();
                while let Some(&(_, n)) = chars.peek() {
                    let hex = number.contains("0x") || number.contains("0X");
                    let exponent_sign = (n == '-' || n == '+')
                        && ((!hex && number.ends_with(['e', 'E']))
                            || (hex && number.ends_with(['p', 'P'])));
                    if n.is_ascii_alphanumeric() || n == '.' || n == '_' || exponent_sign {
                        number.push(n);
                        chars.next();
                    } else {
                        break;
                    }
                }
                Tok::Number(number)
            }
            c if word_char(c) => Tok::Ident(take_word(&mut chars)),
            '}' => return Err(error(i, "unexpected \"}\" in operand".into())),
            other => return Err(error(i, format!("unexpected {other:?} in command"))),
        };
        if matches!(kind, Tok::Ident(_) | Tok::Field(_) | Tok::Var(_)) {
            // Go's lexer wants a word to end at a space, a delimiter or punctuation.
            if let Some(&(j, next)) = chars.peek() {
                if !(is_space(next) || matches!(next, '.' | ',' | '|' | ':' | ')' | '(')) {
                    return Err(error(j, format!("bad character {}", go_rune(next))));
                }
            }
        }
        tokens.push(Token { kind, spaced, pos });
        spaced = false;
    }
    Ok(tokens)
}

fn next_is_digit(text: &str, i: usize) -> bool {
    text[i + 1..]
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_digit() || c == '.')
}

/// What Go's `strconv.Unquote` says of any bad escape.
const INVALID_SYNTAX: &str = "invalid syntax";

fn unescape(chars: &mut std::iter::Peekable<std::str::CharIndices>) -> Result<char, String> {
    let hex = |chars: &mut std::iter::Peekable<std::str::CharIndices>,
               count: usize|
     -> Result<char, String> {
        let digits: String = (0..count)
            .filter_map(|_| chars.next().map(|(_, c)| c))
            .collect();
        u32::from_str_radix(&digits, 16)
            .ok()
            .and_then(char::from_u32)
            .ok_or_else(|| INVALID_SYNTAX.to_string())
    };
    match chars.next().map(|(_, c)| c) {
        Some('n') => Ok('\n'),
        Some('t') => Ok('\t'),
        Some('r') => Ok('\r'),
        Some('a') => Ok('\u{7}'),
        Some('b') => Ok('\u{8}'),
        Some('f') => Ok('\u{c}'),
        Some('v') => Ok('\u{b}'),
        Some('\\') => Ok('\\'),
        Some('"') => Ok('"'),
        Some('\'') => Ok('\''),
        Some('x') => hex(chars, 2),
        Some('u') => hex(chars, 4),
        Some('U') => hex(chars, 8),
        Some(c) if c.is_digit(8) => {
            let mut digits = c.to_string();
            for _ in 0..2 {
                if let Some((_, d)) = chars.next() {
                    digits.push(d);
                }
            }
            u32::from_str_radix(&digits, 8)
                .ok()
                .and_then(char::from_u32)
                .ok_or_else(|| INVALID_SYNTAX.to_string())
        }
        _ => Err(INVALID_SYNTAX.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(source: &str) -> Vec<String> {
        items(source)
            .expect("lexes")
            .into_iter()
            .map(|i| match i {
                Item::Text(t) => format!("T:{t}"),
                Item::Action(tokens, _) => {
                    let words: Vec<String> = tokens
                        .iter()
                        .map(|t| match &t.kind {
                            Tok::Number(n) => n.clone(),
                            Tok::Str(_, raw) => raw.clone(),
                            other => format!("{other:?}"),
                        })
                        .collect();
                    format!("A:{}", words.join(" "))
                }
            })
            .collect()
    }

    #[test]
    fn trim_markers_eat_neighbouring_whitespace() {
        assert_eq!(texts("a  {{- 1 -}}\n  b"), ["T:a", "A:1", "T:b"]);
        assert_eq!(
            texts("a {{-3}} b"),
            ["T:a ", "A:-3", "T: b"],
            "{{-3}} is a number"
        );
        assert_eq!(texts("x {{/* note */}} y"), ["T:x ", "T: y"]);
        assert_eq!(texts("x\n{{- /* note */ -}}\ny"), ["T:x", "T:y"]);
        assert_eq!(
            texts("{{ \"}}\" }}"),
            ["A:\"}}\""],
            "braces in strings do not close"
        );
    }

    #[test]
    fn tokens_carry_spacing_and_positions() {
        let found = items("ab\n  {{ $x.a (f 'c').b -1.5e3 `raw` }}").expect("lexes");
        let Item::Action(tokens, pos) = &found[1] else {
            panic!("an action")
        };
        assert_eq!(*pos, Pos { line: 2, col: 2 });
        let kinds: Vec<&Tok> = tokens.iter().map(|t| &t.kind).collect();
        assert_eq!(
            kinds,
            [
                &Tok::Var("x".into()),
                &Tok::Field("a".into()),
                &Tok::LParen,
                &Tok::Ident("f".into()),
                &Tok::Char(99),
                &Tok::RParen,
                &Tok::Field("b".into()),
                &Tok::Number("-1.5e3".into()),
                &Tok::Str("raw".into(), "`raw`".into()),
            ]
        );
        assert!(!tokens[1].spaced && tokens[2].spaced && !tokens[6].spaced);
        assert!(items("{{ \"open }}").is_err());
    }
}
