//! A linear bound on how deeply a YAML text nests flow collections (`[` and `{`), checked
//! before parsing: libyaml takes time quadratic in that depth (a 120 KB body of nested
//! `[` cost 11 s of CPU to refuse), while no Kubernetes object comes near the bound.

/// The deepest flow nesting accepted. The YAML deserializer refuses more than 128 levels of
/// any nesting anyway; this only makes sure that refusal is cheap.
pub const MAX_FLOW_DEPTH: usize = 1_000;

/// The 1-based line and column where `text` first nests flow collections deeper than
/// `limit`, or `None`. Quoted scalars and comments are skipped; brackets inside plain and
/// block scalars count, which can only make a text with more than `limit` unclosed
/// brackets in its strings look deep.
pub fn too_deep(text: &str, limit: usize) -> Option<(usize, usize)> {
    let (mut depth, mut line, mut column) = (0usize, 1usize, 0usize);
    let mut quote: Option<char> = None;
    let (mut escaped, mut comment, mut after_space) = (false, false, true);
    for c in text.chars() {
        column += 1;
        if c == '\n' {
            line += 1;
            column = 0;
            comment = false;
            after_space = true;
            // A quoted scalar may span lines; its quote state carries on.
            continue;
        }
        if comment {
            continue;
        }
        match quote {
            Some('"') if escaped => escaped = false,
            Some('"') if c == '\\' => escaped = true,
            Some(open) if c == open => quote = None,
            Some(_) => {}
            None => match c {
                '"' | '\'' if after_space || depth > 0 => quote = Some(c),
                '#' if after_space => comment = true,
                '[' | '{' => {
                    depth += 1;
                    if depth > limit {
                        return Some((line, column));
                    }
                }
                ']' | '}' => depth = depth.saturating_sub(1),
                _ => {}
            },
        }
        after_space = c == ' ' || c == '\t' || matches!(c, '[' | '{' | ',' | ':' | '-');
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_flow_nesting_is_found_where_it_passes_the_limit() {
        let deep = format!("a: {}{}", "[".repeat(5), "]".repeat(5));
        assert_eq!(too_deep(&deep, 4), Some((1, 8)));
        assert_eq!(too_deep(&deep, 5), None);
        let nested_maps = format!("x:\n  y: {}1{}", "{a: ".repeat(3), "}".repeat(3));
        assert_eq!(too_deep(&nested_maps, 2), Some((2, 14)));
    }

    #[test]
    fn brackets_in_quotes_and_comments_do_not_count() {
        let text = "a: \"[[[[\"\nb: '{{{{'\nc: 1 # [[[[\nd: [\"]]]]\", '[[[']\n";
        assert_eq!(too_deep(text, 1), None);
        let escaped = "a: \"\\\"[[[[\"\n";
        assert_eq!(too_deep(escaped, 1), None);
    }

    #[test]
    fn a_large_real_object_is_far_below_the_limit() {
        let wide = format!("items: [{}]", vec!["{a: [1, 2]}"; 10_000].join(", "));
        assert_eq!(too_deep(&wide, 3), None);
    }
}
