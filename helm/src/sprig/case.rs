//! Case conversions as sprig does them with huandu/xstrings: `snakecase`, `kebabcase` and
//! `camelcase`, where words are told apart by case, digits, punctuation and connectors
//! (space, `_`, `-`).

fn is_connector(c: char) -> bool {
    c == '-' || c == '_' || c.is_whitespace()
}

/// Go's `unicode.IsPunct` for the characters that matter here.
fn is_punct(c: char) -> bool {
    c.is_ascii_punctuation() && !matches!(c, '$' | '+' | '<' | '=' | '>' | '^' | '`' | '|' | '~')
        || (!c.is_ascii() && !c.is_alphanumeric() && !c.is_whitespace() && !c.is_control())
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Word {
    Invalid,
    Number,
    Upper,
    Alphabet,
    Connector,
    Punct,
    Other,
}

/// xstrings' `nextWord`: the kind and length (in chars) of the word at the start of `s`.
fn next_word(s: &[char]) -> (Word, usize) {
    let Some(&first) = s.first() else {
        return (Word::Invalid, 0);
    };
    let run = |from: usize, keep: &dyn Fn(char) -> bool| {
        s[from..].iter().take_while(|c| keep(**c)).count() + from
    };
    if is_connector(first) {
        return (Word::Connector, run(1, &is_connector));
    }
    if is_punct(first) {
        return (Word::Punct, run(1, &is_punct));
    }
    if first.is_uppercase() {
        let Some(&second) = s.get(1) else {
            return (Word::Upper, 1);
        };
        if second.is_uppercase() {
            let end = run(2, &|c: char| c.is_uppercase());
            // `HTTPServer` is `HTTP` and `Server`: the last capital starts the next word.
            let end = if s.get(end).is_some_and(|c| c.is_alphabetic()) {
                end - 1
            } else {
                end
            };
            return (Word::Upper, end);
        }
        if second.is_alphabetic() {
            return (
                Word::Upper,
                run(2, &|c: char| c.is_alphabetic() && !c.is_uppercase()),
            );
        }
        return (Word::Upper, 1);
    }
    if first.is_alphabetic() {
        return (
            Word::Alphabet,
            run(1, &|c: char| c.is_alphabetic() && !c.is_uppercase()),
        );
    }
    if first.is_numeric() {
        return (Word::Number, run(1, &|c: char| c.is_numeric()));
    }
    (
        Word::Other,
        run(1, &|c: char| {
            !(is_connector(c) || c.is_alphabetic() || c.is_numeric() || is_punct(c))
        }),
    )
}

/// xstrings' `toLower`: upper-case words and connectors are rewritten, others copied.
fn push_lower(out: &mut String, kind: Word, word: &[char], connector: char) {
    for &c in word {
        if !matches!(kind, Word::Upper | Word::Connector) {
            out.push(c);
        } else if is_connector(c) {
            out.push(connector);
        } else {
            out.extend(c.to_lowercase());
        }
    }
}

/// The next word of `rest`, taken off it.
fn take<'a>(rest: &mut &'a [char]) -> (Word, &'a [char]) {
    let (kind, len) = next_word(rest);
    let (word, remaining) = rest.split_at(len);
    *rest = remaining;
    (kind, word)
}

/// xstrings' `camelCaseToLowerCase`: `snakecase` with `_`, `kebabcase` with `-`.
pub(super) fn to_lower_case(s: &str, connector: char) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len() + 4);
    let mut rest: &[char] = &chars;
    let (mut kind, mut word) = take(&mut rest);
    while !rest.is_empty() {
        if kind != Word::Connector {
            push_lower(&mut out, kind, word, connector);
        }
        let (previous, last) = (kind, word);
        (kind, word) = take(&mut rest);
        match previous {
            Word::Number => {
                while matches!(kind, Word::Alphabet | Word::Number) {
                    push_lower(&mut out, kind, word, connector);
                    (kind, word) = take(&mut rest);
                }
                if !matches!(kind, Word::Invalid | Word::Punct | Word::Connector) {
                    out.push(connector);
                }
            }
            Word::Connector => push_lower(&mut out, previous, last, connector),
            Word::Punct => {}
            _ => {
                if kind != Word::Number {
                    if !matches!(kind, Word::Connector | Word::Punct) {
                        out.push(connector);
                    }
                    continue;
                }
                if rest.is_empty() {
                    continue;
                }
                let number = word;
                (kind, word) = take(&mut rest);
                // A number is part of the word before it (`Bld4Floor` is `bld4_floor`)
                // unless letters follow it (`HTTP2xx` is `http_2xx`).
                if kind != Word::Alphabet {
                    push_lower(&mut out, Word::Number, number, connector);
                    if !matches!(kind, Word::Connector | Word::Punct) {
                        out.push(connector);
                    }
                    continue;
                }
                out.push(connector);
                push_lower(&mut out, Word::Number, number, connector);
                while matches!(kind, Word::Alphabet | Word::Number) {
                    push_lower(&mut out, kind, word, connector);
                    (kind, word) = take(&mut rest);
                }
                if !matches!(kind, Word::Invalid | Word::Connector | Word::Punct) {
                    out.push(connector);
                }
            }
        }
    }
    push_lower(&mut out, kind, word, connector);
    out
}

/// xstrings' `ToCamelCase`: each word's first letter upper-cased (an all-capital start
/// of a word lower-cased after its first letter), a connector between words dropped,
/// leading and trailing connectors kept.
pub(super) fn to_camel_case(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let leading = chars.iter().take_while(|c| is_connector(**c)).count();
    let mut out: String = chars[..leading].iter().collect();
    if leading == chars.len() {
        // Only connectors: the last is written once more, as xstrings does.
        out.extend(chars.last());
        return out;
    }
    let mut word_start = true;
    let mut lowering = false;
    for (i, &c) in chars.iter().enumerate().skip(leading) {
        if is_connector(c) {
            word_start = true;
            lowering = false;
            // A connector right before a word's first letter is dropped; the last
            // character of the text is always kept.
            let next_is_letter = chars.get(i + 1).is_some_and(|n| !is_connector(*n));
            if !next_is_letter || i + 1 == chars.len() {
                out.push(c);
            }
            continue;
        }
        if word_start {
            out.extend(c.to_uppercase());
            lowering = c.is_uppercase() && chars.get(i + 1).is_some_and(|n| n.is_uppercase());
            word_start = false;
        } else if lowering && c.is_uppercase() {
            out.extend(c.to_lowercase());
        } else {
            lowering = false;
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_match_sprig() {
        // (input, snakecase, kebabcase, camelcase), each row printed by Helm 4.3.1.
        let cases = [
            ("FirstName", "first_name", "first-name", "FirstName"),
            ("HTTPServer", "http_server", "http-server", "Httpserver"),
            ("NoHTTPS", "no_https", "no-https", "NoHTTPS"),
            ("GO_PATH", "go_path", "go-path", "GoPath"),
            ("GO PATH", "go_path", "go-path", "GoPath"),
            ("http2xx", "http_2xx", "http-2xx", "Http2xx"),
            ("HTTP20xOK", "http_20x_ok", "http-20x-ok", "Http20xOK"),
            (
                "Duration2m3s",
                "duration_2m3s",
                "duration-2m3s",
                "Duration2m3s",
            ),
            (
                "Bld4Floor3rd",
                "bld4_floor_3rd",
                "bld4-floor-3rd",
                "Bld4Floor3rd",
            ),
            ("A1B2c3", "a1_b_2c3", "a1-b-2c3", "A1B2c3"),
            (
                "fooBarBAZ qux",
                "foo_bar_baz_qux",
                "foo-bar-baz-qux",
                "FooBarBAZQux",
            ),
            ("_my_field", "_my_field", "-my-field", "_MyField"),
            ("a-b c", "a_b_c", "a-b-c", "ABC"),
            (
                "_complex__case_",
                "_complex__case_",
                "-complex--case-",
                "_Complex_Case_",
            ),
            (
                "GOLANG_IS_GREAT",
                "golang_is_great",
                "golang-is-great",
                "GolangIsGreat",
            ),
            ("", "", "", ""),
            ("x", "x", "x", "X"),
            ("a.b,c", "a.b,c", "a.b,c", "A.b,c"),
            ("ÉtéFort", "été_fort", "été-fort", "ÉtéFort"),
            ("a1b", "a_1b", "a-1b", "A1b"),
            ("ABC123def", "abc_123def", "abc-123def", "Abc123def"),
            ("abc123DEF", "abc123_def", "abc123-def", "Abc123DEF"),
            ("a--b", "a__b", "a--b", "A-B"),
            ("__", "__", "--", "___"),
            ("-x-", "_x_", "-x-", "-X-"),
            ("Http2Server", "http2_server", "http2-server", "Http2Server"),
            ("v1.2.3", "v1.2.3", "v1.2.3", "V1.2.3"),
            ("aB", "a_b", "a-b", "AB"),
            ("AB", "ab", "ab", "Ab"),
            ("xHTTP", "x_http", "x-http", "XHTTP"),
            ("x_Y_z", "x_y_z", "x-y-z", "XYZ"),
            ("UserIDs", "user_i_ds", "user-i-ds", "UserIDs"),
            (
                "hello  world",
                "hello__world",
                "hello--world",
                "Hello World",
            ),
            ("tab\tsep", "tab_sep", "tab-sep", "TabSep"),
            (
                "CamelCase123Test",
                "camel_case123_test",
                "camel-case123-test",
                "CamelCase123Test",
            ),
            ("1abc", "1abc", "1abc", "1abc"),
            (
                "mixed_Case-input here",
                "mixed_case_input_here",
                "mixed-case-input-here",
                "MixedCaseInputHere",
            ),
        ];
        for (input, snake, kebab, camel) in cases {
            assert_eq!(to_lower_case(input, '_'), snake, "snakecase {input:?}");
            assert_eq!(to_lower_case(input, '-'), kebab, "kebabcase {input:?}");
            assert_eq!(to_camel_case(input), camel, "camelcase {input:?}");
        }
    }
}
