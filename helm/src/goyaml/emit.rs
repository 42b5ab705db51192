//! goyaml's emitter, for the values Helm writes: block mappings and sequences, `{}` and `[]`
//! for empty ones, and each string in the style goyaml picks (plain, single-quoted,
//! double-quoted or literal). goyaml.v2 (`toYaml`) folds long lines at 80 columns and does
//! not indent a sequence under its key; goyaml.v3 with an indent of 2 (`toYamlPretty`) does
//! neither.

use super::resolve::{is_base60_float, resolve, Resolved};

/// A value to write: what goyaml.v2 holds after reading Helm's JSON back.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    /// `null`
    Null,
    /// A boolean.
    Bool(bool),
    /// An int.
    Int(i64),
    /// An integer too large for an int64.
    Uint(u64),
    /// A float64.
    Float(f64),
    /// A string.
    Str(String),
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping, in the order to write it.
    Map(Vec<(String, Node)>),
}

/// How a goyaml version lays documents out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Dialect {
    /// The widest line written before a scalar is folded at a space (none: never).
    pub width: Option<usize>,
    /// Whether a sequence under a mapping key is indented.
    pub indent_sequences: bool,
}

impl Dialect {
    /// goyaml.v2's `Marshal`.
    pub(crate) const V2: Dialect = Dialect {
        width: Some(80),
        indent_sequences: false,
    };
    /// goyaml.v3's encoder with `SetIndent(2)`.
    pub(crate) const V3_INDENT_2: Dialect = Dialect {
        width: None,
        indent_sequences: true,
    };
    /// kustomize's kyaml writer: goyaml.v3 with `SetIndent(2)` and compact sequences.
    pub(crate) const KYAML: Dialect = Dialect {
        width: None,
        indent_sequences: false,
    };
}
/// goyaml.v2's indentation step.
const BEST_INDENT: i32 = 2;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

/// What goyaml.v2's scalar analysis found in a string.
struct Analysis {
    multiline: bool,
    block_plain: bool,
    single_quoted: bool,
    block: bool,
}

/// Where a node is written.
#[derive(Clone, Copy, Default)]
struct Context {
    mapping: bool,
    simple_key: bool,
}

/// The writer's state, as goyaml.v2 keeps it.
struct Emitter {
    dialect: Dialect,
    out: String,
    column: usize,
    indent: i32,
    indents: Vec<i32>,
    whitespace: bool,
    indention: bool,
}

/// Writes `node` as one YAML document, as the `dialect`'s goyaml version does.
pub(crate) fn document(node: &Node, dialect: Dialect) -> String {
    let mut emitter = Emitter {
        dialect,
        out: String::new(),
        column: 0,
        indent: -1,
        indents: Vec::new(),
        whitespace: true,
        indention: true,
    };
    emitter.node(node, Context::default());
    emitter.write_indent();
    emitter.out
}

impl Emitter {
    /// Whether a scalar written at this column may break at a space.
    fn past_width(&self) -> bool {
        self.dialect.width.is_some_and(|width| self.column > width)
    }

    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    fn write_indent(&mut self) {
        let indent = usize::try_from(self.indent.max(0)).unwrap_or(0);
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn write_indicator(
        &mut self,
        indicator: &str,
        need_whitespace: bool,
        is_whitespace: bool,
        is_indention: bool,
    ) {
        if need_whitespace && !self.whitespace {
            self.put(' ');
        }
        for c in indicator.chars() {
            self.put(c);
        }
        self.whitespace = is_whitespace;
        self.indention = self.indention && is_indention;
    }

    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        self.indents.push(self.indent);
        if self.indent < 0 {
            self.indent = if flow { BEST_INDENT } else { 0 };
        } else if !indentless {
            self.indent += BEST_INDENT;
        }
    }

    fn restore_indent(&mut self) {
        self.indent = self.indents.pop().unwrap_or(-1);
    }

    fn node(&mut self, node: &Node, context: Context) {
        match node {
            Node::Seq(items) if !items.is_empty() => self.block_sequence(items, context),
            Node::Map(entries) if !entries.is_empty() => self.block_mapping(entries),
            Node::Seq(_) => self.empty_collection("[", "]"),
            Node::Map(_) => self.empty_collection("{", "}"),
            scalar => {
                let (text, style) = scalar_text(scalar);
                self.scalar(&text, style, context);
            }
        }
    }

    fn empty_collection(&mut self, open: &str, close: &str) {
        self.write_indicator(open, true, true, false);
        self.write_indicator(close, false, false, false);
    }

    fn block_sequence(&mut self, items: &[Node], context: Context) {
        let indentless = context.mapping && !self.indention && !self.dialect.indent_sequences;
        self.increase_indent(false, indentless);
        for item in items {
            self.write_indent();
            self.write_indicator("-", true, false, true);
            self.node(item, Context::default());
        }
        self.restore_indent();
    }

    fn block_mapping(&mut self, entries: &[(String, Node)]) {
        self.increase_indent(false, false);
        for (key, value) in entries {
            self.write_indent();
            let (key_text, key_style) = scalar_text(&Node::Str(key.clone()));
            let simple = key_text.len() <= 128 && !analyze(&key_text).multiline;
            let value_context = Context {
                mapping: true,
                ..Context::default()
            };
            if simple {
                self.scalar(
                    &key_text,
                    key_style,
                    Context {
                        simple_key: true,
                        ..Context::default()
                    },
                );
                self.write_indicator(":", false, false, false);
            } else {
                self.write_indicator("?", true, false, true);
                self.scalar(&key_text, key_style, value_context);
                self.write_indent();
                self.write_indicator(":", true, false, true);
            }
            self.node(value, value_context);
        }
        self.restore_indent();
    }

    fn scalar(&mut self, text: &str, requested: Style, context: Context) {
        let analysis = analyze(text);
        let style = Self::select_style(text, requested, &analysis, context);
        self.increase_indent(true, false);
        let allow_breaks = !context.simple_key;
        match style {
            Style::Plain => self.plain(text, allow_breaks),
            Style::Single => self.single_quoted(text, allow_breaks),
            Style::Double => self.double_quoted(text, allow_breaks),
            Style::Literal => self.literal(text),
        }
        self.restore_indent();
    }

    fn select_style(text: &str, requested: Style, analysis: &Analysis, context: Context) -> Style {
        let mut style = requested;
        if context.simple_key && analysis.multiline {
            style = Style::Double;
        }
        // Nothing is written in flow style but empty collections, so block rules apply.
        if style == Style::Plain
            && (!analysis.block_plain || (text.is_empty() && context.simple_key))
        {
            style = Style::Single;
        }
        if style == Style::Single && !analysis.single_quoted {
            style = Style::Double;
        }
        if style == Style::Literal && (!analysis.block || context.simple_key) {
            style = Style::Double;
        }
        style
    }

    fn plain(&mut self, text: &str, allow_breaks: bool) {
        if !self.whitespace {
            self.put(' ');
        }
        let chars: Vec<char> = text.chars().collect();
        let (mut spaces, mut breaks) = (false, false);
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                if allow_breaks && !spaces && self.past_width() && chars.get(i + 1) != Some(&' ') {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.whitespace = false;
        self.indention = false;
    }

    fn write_break(&mut self, c: char) {
        if c == '\n' {
            self.put_break();
        } else {
            self.out.push(c);
            self.column = 0;
        }
    }

    fn single_quoted(&mut self, text: &str, allow_breaks: bool) {
        self.write_indicator("'", true, false, false);
        let chars: Vec<char> = text.chars().collect();
        let (mut spaces, mut breaks) = (false, false);
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.past_width()
                    && i > 0
                    && i + 1 < chars.len()
                    && chars.get(i + 1) != Some(&' ')
                {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if c == '\'' {
                    self.put('\'');
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.write_indicator("'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn double_quoted(&mut self, text: &str, allow_breaks: bool) {
        self.write_indicator("\"", true, false, false);
        let chars: Vec<char> = text.chars().collect();
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if !is_printable(c) || c == '\u{feff}' || is_break(c) || c == '"' || c == '\\' {
                self.put('\\');
                match c {
                    '\0' => self.put('0'),
                    '\u{7}' => self.put('a'),
                    '\u{8}' => self.put('b'),
                    '\t' => self.put('t'),
                    '\n' => self.put('n'),
                    '\u{b}' => self.put('v'),
                    '\u{c}' => self.put('f'),
                    '\r' => self.put('r'),
                    '\u{1b}' => self.put('e'),
                    '"' => self.put('"'),
                    '\\' => self.put('\\'),
                    '\u{85}' => self.put('N'),
                    '\u{a0}' => self.put('_'),
                    '\u{2028}' => self.put('L'),
                    '\u{2029}' => self.put('P'),
                    other => {
                        let code = u32::from(other);
                        let (letter, width) = if code <= 0xff {
                            ('x', 2)
                        } else if code <= 0xffff {
                            ('u', 4)
                        } else {
                            ('U', 8)
                        };
                        self.put(letter);
                        for digit in format!("{code:0width$X}").chars() {
                            self.put(digit);
                        }
                    }
                }
                spaces = false;
            } else if c == ' ' {
                if allow_breaks && !spaces && self.past_width() && i != 0 && i + 1 != chars.len() {
                    self.write_indent();
                    if chars.get(i + 1) == Some(&' ') {
                        self.put('\\');
                    }
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                spaces = false;
            }
        }
        self.write_indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn literal(&mut self, text: &str) {
        self.write_indicator("|", true, false, false);
        if text.starts_with([' ', '\n', '\r', '\u{85}', '\u{2028}', '\u{2029}']) {
            self.write_indicator(&BEST_INDENT.to_string(), false, false, false);
        }
        let chars: Vec<char> = text.chars().collect();
        let chomp = match chars.as_slice() {
            [] => Some("-"),
            [.., last] if !is_break(*last) => Some("-"),
            [_] => Some("+"),
            [.., before, _] if is_break(*before) => Some("+"),
            _ => None,
        };
        if let Some(chomp) = chomp {
            self.write_indicator(chomp, false, false, false);
        }
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        for &c in &chars {
            if is_break(c) {
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                breaks = false;
            }
        }
    }
}

/// The text of a scalar and the style goyaml.v2's encoder asks for: strings that would
/// read back as something else (`"yes"`, `"1.5"`, `""`) are double-quoted, multi-line ones
/// literal, the rest plain.
fn scalar_text(node: &Node) -> (String, Style) {
    match node {
        Node::Null => ("null".into(), Style::Plain),
        Node::Bool(b) => (b.to_string(), Style::Plain),
        Node::Int(i) => (i.to_string(), Style::Plain),
        Node::Uint(u) => (u.to_string(), Style::Plain),
        Node::Float(f) => (format_float(*f), Style::Plain),
        Node::Str(s) => {
            let plain = resolve(s) == Resolved::Str && !is_base60_float(s);
            let style = if s.contains('\n') {
                Style::Literal
            } else if plain {
                Style::Plain
            } else {
                Style::Double
            };
            (s.clone(), style)
        }
        Node::Seq(_) | Node::Map(_) => (String::new(), Style::Plain),
    }
}

/// goyaml.v2's float: `strconv.FormatFloat(f, 'g', -1, 64)`, with `.inf` and `.nan`.
fn format_float(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    crate::template::value::format_float_g(f)
}

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// goyaml.v2's `is_printable` (by code point): newline, printable ASCII, and the rest of
/// the BMP but for surrogates, `\u{FEFF}`, `\u{FFFE}` and `\u{FFFF}`.
fn is_printable(c: char) -> bool {
    let code = u32::from(c);
    c == '\n'
        || (0x20..=0x7e).contains(&code)
        || (0xa0..=0xd7ff).contains(&code)
        || ((0xe000..=0xfffd).contains(&code) && code != 0xfeff)
}

/// goyaml.v2's `yaml_emitter_analyze_scalar`.
fn analyze(text: &str) -> Analysis {
    if text.is_empty() {
        return Analysis {
            multiline: false,
            block_plain: true,
            single_quoted: true,
            block: false,
        };
    }
    let chars: Vec<char> = text.chars().collect();
    // Flow indicators matter only to flow style, which holds no scalars here.
    let mut block_indicators = text.starts_with("---") || text.starts_with("...");
    let (mut line_breaks, mut special) = (false, false);
    let (mut leading_space, mut leading_break) = (false, false);
    let (mut trailing_space, mut trailing_break) = (false, false);
    let (mut break_space, mut space_break) = (false, false);
    let (mut previous_space, mut previous_break) = (false, false);
    let mut preceded_by_whitespace = true;
    for (i, &c) in chars.iter().enumerate() {
        let next = chars.get(i + 1).copied();
        let followed_by_whitespace = next.is_none_or(|n| n == ' ' || n == '\t');
        if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => block_indicators = true,
                '?' | ':' | '-' if followed_by_whitespace => block_indicators = true,
                _ => {}
            }
        } else {
            match c {
                ':' if followed_by_whitespace => block_indicators = true,
                '#' if preceded_by_whitespace => block_indicators = true,
                _ => {}
            }
        }
        if !is_printable(c) {
            special = true;
        }
        let last = i + 1 == chars.len();
        if c == ' ' {
            leading_space |= i == 0;
            trailing_space |= last;
            break_space |= previous_break;
            previous_space = true;
            previous_break = false;
        } else if is_break(c) {
            line_breaks = true;
            leading_break |= i == 0;
            trailing_break |= last;
            space_break |= previous_space;
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_whitespace = c == ' ' || c == '\t' || is_break(c) || c == '\0';
    }
    let mut analysis = Analysis {
        multiline: line_breaks,
        block_plain: true,
        single_quoted: true,
        block: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        analysis.block_plain = false;
    }
    if trailing_space {
        analysis.block = false;
    }
    if break_space {
        analysis.block_plain = false;
        analysis.single_quoted = false;
    }
    if space_break || special {
        analysis.block_plain = false;
        analysis.single_quoted = false;
        analysis.block = false;
    }
    if line_breaks {
        analysis.block_plain = false;
    }
    if block_indicators {
        analysis.block_plain = false;
    }
    analysis
}
