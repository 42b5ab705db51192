//! Go's regular expressions (RE2 syntax, as `regexp` reads it) turned into patterns of the
//! regex crate with the same meaning. The two agree on most syntax; where they differ this
//! rewrites: Perl classes (`\d`, `\w`, `\s`) and word boundaries are ASCII in Go and
//! Unicode in the regex crate; inside brackets Go reads `-` after a class (`[\w-.]`) and
//! `&`, `~`, `[` as plain characters, which the regex crate reads as ranges and set
//! operators; `\Q...\E` quotes; octal escapes.

/// Go's `\d`, `\w`, `\s` as the characters of a bracket expression.
fn perl_class(letter: char) -> Option<&'static str> {
    match letter.to_ascii_lowercase() {
        'd' => Some("0-9"),
        'w' => Some("0-9A-Za-z_"),
        's' => Some("\\t\\n\\x0C\\r "),
        _ => None,
    }
}

/// The pattern the regex crate needs to match what Go's `regexp` matches with `pattern`.
/// Errors are worded as Go's `regexp.Compile` words them where the cause is the same.
pub(crate) fn translate(pattern: &str) -> Result<String, String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => i = escape(&chars, i, &mut out, false)?,
            '[' => i = bracket(&chars, i, &mut out, pattern)?,
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// Translates the escape at `chars[at]` (a backslash); returns the index after it.
fn escape(chars: &[char], at: usize, out: &mut String, in_class: bool) -> Result<usize, String> {
    let Some(&next) = chars.get(at + 1) else {
        return Err("error parsing regexp: trailing backslash at end of expression: ``".into());
    };
    if let Some(class) = perl_class(next) {
        let negated = next.is_ascii_uppercase();
        match (in_class, negated) {
            (true, false) => out.push_str(class),
            (true, true) | (false, true) => {
                out.push_str("[^");
                out.push_str(class);
                out.push(']');
            }
            (false, false) => {
                out.push('[');
                out.push_str(class);
                out.push(']');
            }
        }
        return Ok(at + 2);
    }
    match next {
        'b' | 'B' if !in_class => {
            out.push_str(&format!("(?-u:\\{next})"));
            Ok(at + 2)
        }
        'Q' if !in_class => {
            let mut i = at + 2;
            while i < chars.len() {
                if chars[i] == '\\' && chars.get(i + 1) == Some(&'E') {
                    return Ok(i + 2);
                }
                push_literal(out, chars[i]);
                i += 1;
            }
            Ok(i)
        }
        '0'..='7' => {
            let mut value = 0u32;
            let mut i = at + 1;
            while i < chars.len() && i < at + 4 && chars[i].is_digit(8) {
                value = value * 8 + chars[i].to_digit(8).unwrap_or(0);
                i += 1;
            }
            out.push_str(&format!("\\x{{{value:x}}}"));
            Ok(i)
        }
        _ => {
            out.push('\\');
            out.push(next);
            Ok(at + 2)
        }
    }
}

/// Escapes a character that is to match itself.
fn push_literal(out: &mut String, c: char) {
    if regex_syntax_meta(c) {
        out.push('\\');
    }
    out.push(c);
}

fn regex_syntax_meta(c: char) -> bool {
    "\\.+*?()|[]{}^$#&-~".contains(c)
}

/// Translates the bracket expression opening at `chars[at]`; returns the index after it.
fn bracket(chars: &[char], at: usize, out: &mut String, pattern: &str) -> Result<usize, String> {
    let mut i = at + 1;
    out.push('[');
    if chars.get(i) == Some(&'^') {
        out.push('^');
        i += 1;
    }
    // A `]` first in the class is a literal.
    let start = i;
    // Whether the last item can start a range (a single character, not a class).
    let mut last_is_char = false;
    loop {
        let Some(&c) = chars.get(i) else {
            return Err(format!(
                "error parsing regexp: missing closing ]: `{}`",
                chars[at..].iter().collect::<String>()
            ));
        };
        match c {
            ']' if i > start => {
                out.push(']');
                return Ok(i + 1);
            }
            '[' if chars.get(i + 1) == Some(&':') => {
                let rest: String = chars[i..].iter().collect();
                let Some(end) = rest.find(":]") else {
                    return Err(format!(
                        "error parsing regexp: missing closing ]: `{pattern}`"
                    ));
                };
                out.push_str(&rest[..end + 2]);
                i += rest[..end + 2].chars().count();
                last_is_char = false;
            }
            '\\' => {
                let is_class = chars.get(i + 1).is_some_and(|n| perl_class(*n).is_some());
                i = escape(chars, i, out, true)?;
                last_is_char = !is_class;
            }
            '-' => {
                let next = chars.get(i + 1).copied();
                let ranges = last_is_char && next.is_some_and(|n| n != ']');
                if ranges {
                    out.push('-');
                    i += 1;
                    // The range's end.
                    match chars.get(i) {
                        Some('\\') => i = escape(chars, i, out, true)?,
                        Some(&end) => {
                            push_class_literal(out, end);
                            i += 1;
                        }
                        None => {}
                    }
                    last_is_char = false;
                } else {
                    out.push_str("\\-");
                    i += 1;
                    last_is_char = true;
                }
            }
            other => {
                push_class_literal(out, other);
                i += 1;
                last_is_char = true;
            }
        }
    }
}

/// A character inside brackets that matches itself.
fn push_class_literal(out: &mut String, c: char) {
    if "[]&~-^\\".contains(c) {
        out.push('\\');
    }
    out.push(c);
}

/// Go's `regexp.Compile` error for a translated pattern the regex crate refuses:
/// `error parsing regexp: CODE: `EXPR``, with Go's code and the part Go quotes.
pub(crate) fn compile_error(pattern: &str, translated: &str, error: &regex::Error) -> String {
    use regex_syntax::ast::ErrorKind;
    let parsed = regex_syntax::ast::parse::Parser::new().parse(translated);
    let Err(syntax) = parsed else {
        let detail = error.to_string();
        let last = detail.lines().last().unwrap_or_default().trim();
        let cause = last.strip_prefix("error: ").unwrap_or(last);
        return format!("error parsing regexp: {cause}: `{pattern}`");
    };
    let span = syntax.span();
    let spanned = translated
        .get(span.start.offset..span.end.offset)
        .unwrap_or(pattern);
    let from_start = translated.get(span.start.offset..).unwrap_or(pattern);
    let (code, expr) = match syntax.kind() {
        ErrorKind::GroupUnclosed => ("missing closing )", pattern),
        ErrorKind::GroupUnopened => ("unexpected )", pattern),
        ErrorKind::ClassUnclosed => ("missing closing ]", from_start),
        ErrorKind::ClassRangeInvalid => ("invalid character class range", spanned),
        ErrorKind::ClassEscapeInvalid
        | ErrorKind::EscapeUnrecognized
        | ErrorKind::EscapeHexInvalid
        | ErrorKind::EscapeHexInvalidDigit
        | ErrorKind::EscapeHexEmpty => ("invalid escape sequence", spanned),
        ErrorKind::EscapeUnexpectedEof => ("trailing backslash at end of expression", ""),
        ErrorKind::RepetitionMissing => ("missing argument to repetition operator", spanned),
        ErrorKind::RepetitionCountInvalid
        | ErrorKind::RepetitionCountUnclosed
        | ErrorKind::RepetitionCountDecimalEmpty => ("invalid repeat count", spanned),
        ErrorKind::GroupNameInvalid
        | ErrorKind::GroupNameEmpty
        | ErrorKind::GroupNameUnexpectedEof
        | ErrorKind::GroupNameDuplicate { .. } => ("invalid named capture", spanned),
        ErrorKind::NestLimitExceeded(_) => ("expression nests too deeply", pattern),
        _ => ("invalid or unsupported Perl syntax", spanned),
    };
    format!("error parsing regexp: {code}: `{expr}`")
}

#[cfg(test)]
mod tests {
    use super::translate;

    fn matches(pattern: &str, text: &str) -> bool {
        let translated = translate(pattern).expect("translates");
        regex::Regex::new(&translated)
            .unwrap_or_else(|e| panic!("{pattern} -> {translated}: {e}"))
            .is_match(text)
    }

    #[test]
    fn a_dash_after_a_class_is_a_literal_as_in_go() {
        // redis-ha's masterGroupName check, which Go accepts and the regex crate refuses.
        assert!(matches(r"^[\w-\.]+$", "my-master.1"));
        assert!(!matches(r"^[\w-\.]+$", "a b"));
        assert!(matches(r"^[a-z-]+$", "a-b"));
        assert!(matches(r"^[-a]+$", "-a"));
        assert!(matches(r"[a-c]", "b"));
    }

    #[test]
    fn perl_classes_and_boundaries_are_ascii() {
        assert!(!matches(r"^\w+$", "café"));
        assert!(!matches(r"^\d$", "٣"));
        assert!(matches(r"^\W$", "é"));
        assert!(matches(r"\bx\b", "a x b"));
        assert!(matches(r"^[^\d]+$", "abc"));
        assert!(!matches(r"^[\D]+$", "a1"));
    }

    #[test]
    fn set_operators_and_quotes_are_plain_characters() {
        assert!(matches(r"^[a&&b]+$", "a&b"));
        assert!(matches(r"^[~]$", "~"));
        assert!(matches(r"^\Q1.5*\E$", "1.5*"));
        assert!(!matches(r"^\Q1.5*\E$", "105"));
        assert!(matches(r"^\101$", "A"));
        assert!(matches(r"^[[:alpha:]]+$", "abc"));
        assert!(matches(r"^[]a]+$", "]a"));
    }

    #[test]
    fn errors_read_as_go_reads_them() {
        assert_eq!(
            translate("[a").expect_err("unclosed"),
            "error parsing regexp: missing closing ]: `[a`"
        );
    }
}
