//! The parser: items into nodes, `define` and `block` into named templates.

use std::sync::Arc;

use super::ast::{Arg, Branch, Command, Node, Operand, Pipeline, Pos};
use super::lex::{self, Item, Tok, Token};

/// A template syntax error, printed as Go prints it: `template: NAME:LINE: MESSAGE`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("template: {name}:{line}: {message}")]
pub struct ParseError {
    /// The template name (Helm uses the file path).
    pub name: String,
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// A parsed file: its body and the templates it defines.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parsed {
    /// The body outside any `define`.
    pub root: Vec<Node>,
    /// `define` and `block` templates, in order.
    pub defines: Vec<(String, Vec<Node>)>,
}

/// Parses a template. As Go's parser does, it refuses functions `is_function` does not
/// know and variables used where none of that name is declared.
pub fn parse(
    name: &str,
    source: &str,
    is_function: &dyn Fn(&str) -> bool,
) -> Result<Parsed, ParseError> {
    parse_with(name, source, is_function, lex::Delims::GO)
}

/// [`parse`], for a template whose actions `delims` mark.
pub fn parse_with(
    name: &str,
    source: &str,
    is_function: &dyn Fn(&str) -> bool,
    delims: lex::Delims,
) -> Result<Parsed, ParseError> {
    let items = lex::items_with(source, delims).map_err(|e| ParseError {
        name: name.to_string(),
        line: e.line,
        message: match e.action_line {
            Some(start) => format!("{} started at {name}:{start}", e.message),
            None => e.message,
        },
    })?;
    let mut parser = Parser {
        name,
        items,
        at: 0,
        defines: Vec::new(),
        last_line: 1,
        eof_line: 1 + memchr::memchr_iter(b'\n', source.as_bytes()).count(),
        vars: vec![String::new()],
        is_function,
    };
    let (root, end) = parser.list(false)?;
    if let Some((word, pos)) = end {
        return Err(parser.error_at(pos.line, format!("unexpected {{{{{word}}}}}")));
    }
    Ok(Parsed {
        root,
        defines: parser.defines,
    })
}

struct Parser<'a> {
    name: &'a str,
    items: Vec<Item>,
    at: usize,
    defines: Vec<(String, Vec<Node>)>,
    last_line: usize,
    /// The line Go's lexer is on at the end of input, where "unexpected EOF" is reported.
    eof_line: usize,
    /// Variables in scope (`$` is the empty name).
    vars: Vec<String>,
    /// Whether a function of that name exists.
    is_function: &'a dyn Fn(&str) -> bool,
}

/// Reads one action's tokens.
struct Cursor<'t> {
    tokens: &'t [Token],
    at: usize,
}

impl<'t> Cursor<'t> {
    fn peek(&self) -> Option<&'t Token> {
        self.tokens.get(self.at)
    }

    fn next(&mut self) -> Option<&'t Token> {
        let token = self.tokens.get(self.at);
        self.at += 1;
        token
    }

    fn done(&self) -> bool {
        self.at >= self.tokens.len()
    }
}

type End = Option<(String, Pos)>;

impl Parser<'_> {
    fn error_at(&self, line: usize, message: String) -> ParseError {
        ParseError {
            name: self.name.to_string(),
            line,
            message,
        }
    }

    /// Parses nodes until `{{end}}` or `{{else...}}` (returned) or the end of input.
    fn list(&mut self, nested: bool) -> Result<(Vec<Node>, End), ParseError> {
        let mut nodes = Vec::new();
        while self.at < self.items.len() {
            // Taken rather than cloned; `end` and `else` items are put back for the caller.
            let item = std::mem::replace(&mut self.items[self.at], Item::Text(String::new()));
            self.at += 1;
            let (tokens, pos) = match item {
                Item::Text(text) => {
                    nodes.push(Node::Text(text));
                    continue;
                }
                Item::Action(tokens, pos) => (tokens, pos),
            };
            self.last_line = pos.line;
            let mut cursor = Cursor {
                tokens: &tokens,
                at: 0,
            };
            let keyword = match cursor.peek().map(|t| &t.kind) {
                Some(Tok::Ident(word)) => word.clone(),
                None => return Err(self.error_at(pos.line, "missing value for command".into())),
                _ => String::new(),
            };
            match keyword.as_str() {
                "end" | "else" => {
                    if !nested {
                        return Err(
                            self.error_at(pos.line, format!("unexpected {{{{{keyword}}}}}"))
                        );
                    }
                    // The caller reads the rest of this item (`else if ...`) itself.
                    self.items[self.at - 1] = Item::Action(tokens, pos);
                    return Ok((nodes, Some((keyword, pos))));
                }
                "if" | "range" | "with" => {
                    cursor.next();
                    // What the control declares goes out of scope at its end.
                    let scope = self.vars.len();
                    let node = self
                        .pipeline(&mut cursor, pos, keyword == "range")
                        .and_then(|pipe| self.branch(&keyword, pipe));
                    self.vars.truncate(scope);
                    nodes.push(node?);
                }
                "define" | "block" => {
                    cursor.next();
                    let template_name = self.string_operand(&mut cursor, pos, &keyword)?;
                    let pipe = if keyword == "block" {
                        Some(self.pipeline(&mut cursor, pos, false)?)
                    } else if cursor.done() {
                        None
                    } else {
                        return Err(
                            self.error_at(pos.line, "unexpected operand in define clause".into())
                        );
                    };
                    if keyword == "define" && nested {
                        return Err(self.error_at(
                            pos.line,
                            "unexpected define: define must be at the top level".into(),
                        ));
                    }
                    // A defined template starts with only `$` in scope.
                    let outer = std::mem::replace(&mut self.vars, vec![String::new()]);
                    let body = self.list(true);
                    self.vars = outer;
                    let (body, end) = body?;
                    self.expect_end(end, &keyword)?;
                    self.defines.push((template_name.clone(), body));
                    if let Some(pipe) = pipe {
                        nodes.push(Node::Template {
                            pos,
                            name: template_name,
                            pipe: Some(pipe),
                        });
                    }
                }
                "template" => {
                    cursor.next();
                    let template_name = self.string_operand(&mut cursor, pos, "template")?;
                    let pipe = if cursor.done() {
                        None
                    } else {
                        Some(self.pipeline(&mut cursor, pos, false)?)
                    };
                    nodes.push(Node::Template {
                        pos,
                        name: template_name,
                        pipe,
                    });
                }
                "break" | "continue" => {
                    cursor.next();
                    if !cursor.done() {
                        return Err(self.error_at(
                            pos.line,
                            format!("unexpected operand in {{{{{keyword}}}}}"),
                        ));
                    }
                    nodes.push(if keyword == "break" {
                        Node::Break(pos)
                    } else {
                        Node::Continue(pos)
                    });
                }
                _ => {
                    let pipe = self.pipeline(&mut cursor, pos, false)?;
                    nodes.push(Node::Action(pipe));
                }
            }
        }
        Ok((nodes, None))
    }

    fn expect_end(&self, end: End, what: &str) -> Result<(), ParseError> {
        match end {
            Some((word, _)) if word == "end" => {
                self.ensure_bare()?;
                Ok(())
            }
            Some((word, at)) => {
                Err(self.error_at(at.line, format!("unexpected {{{{{word}}}}} in {what}")))
            }
            None => Err(self.error_at(self.eof_line, "unexpected EOF".to_string())),
        }
    }

    /// The `{{end}}` just consumed must have nothing after the keyword.
    fn ensure_bare(&self) -> Result<(), ParseError> {
        if let Some(Item::Action(tokens, pos)) = self.items.get(self.at.saturating_sub(1)) {
            if tokens.len() > 1 {
                return Err(self.error_at(pos.line, "unexpected operand in {{end}}".into()));
            }
        }
        Ok(())
    }

    /// Parses the body and else-chain of an if, range or with.
    fn branch(&mut self, keyword: &str, pipe: Pipeline) -> Result<Node, ParseError> {
        let (body, end) = self.list(true)?;
        let otherwise = match end {
            Some((word, _)) if word == "end" => {
                self.ensure_bare()?;
                Vec::new()
            }
            Some((word, at)) if word == "else" => {
                let Some(Item::Action(tokens, _)) = self.items.get(self.at - 1).cloned() else {
                    return Err(self.error_at(at.line, "malformed else".into()));
                };
                let mut cursor = Cursor {
                    tokens: &tokens,
                    at: 1,
                };
                match cursor.peek().map(|t| t.kind.clone()) {
                    None => {
                        let (otherwise, end) = self.list(true)?;
                        self.expect_end(end, keyword)?;
                        otherwise
                    }
                    Some(Tok::Ident(chained)) if chained == "if" || chained == "with" => {
                        cursor.next();
                        let pipe = self.pipeline(&mut cursor, at, false)?;
                        vec![self.branch(&chained, pipe)?]
                    }
                    _ => return Err(self.error_at(at.line, "unexpected operand after else".into())),
                }
            }
            _ => return Err(self.error_at(self.eof_line, "unexpected EOF".to_string())),
        };
        let branch = Branch {
            pipe,
            body,
            otherwise,
        };
        Ok(match keyword {
            "if" => Node::If(branch),
            "range" => Node::Range(branch),
            _ => Node::With(branch),
        })
    }

    fn string_operand(
        &self,
        cursor: &mut Cursor,
        pos: Pos,
        what: &str,
    ) -> Result<String, ParseError> {
        match cursor.next().map(|t| &t.kind) {
            Some(Tok::Str(name, _)) => Ok(name.clone()),
            _ => Err(self.error_at(
                pos.line,
                format!("unexpected name in {what} clause: expected a string"),
            )),
        }
    }

    /// `[$a[, $b] (:= | =)] command [| command]...`
    fn pipeline(
        &mut self,
        cursor: &mut Cursor,
        pos: Pos,
        range: bool,
    ) -> Result<Pipeline, ParseError> {
        let mut vars = Vec::new();
        let mut assign = false;
        let save = cursor.at;
        if let Some(Tok::Var(first)) = cursor.peek().map(|t| &t.kind) {
            cursor.next();
            let mut names = vec![first.clone()];
            if range {
                if let Some(Tok::Comma) = cursor.peek().map(|t| &t.kind) {
                    cursor.next();
                    match cursor.next().map(|t| &t.kind) {
                        Some(Tok::Var(second)) => names.push(second.clone()),
                        _ => {
                            return Err(self
                                .error_at(pos.line, "range can only initialize variables".into()))
                        }
                    }
                }
            }
            match cursor.peek().map(|t| &t.kind) {
                Some(Tok::Declare) => {
                    cursor.next();
                    vars = names;
                }
                Some(Tok::Assign) => {
                    cursor.next();
                    vars = names;
                    assign = true;
                }
                _ => cursor.at = save,
            }
            // Go declares them before reading the commands.
            self.vars.extend(vars.iter().cloned());
        }
        let mut commands = Vec::new();
        loop {
            let command = self.command(cursor, pos)?;
            commands.push(command);
            match cursor.peek().map(|t| &t.kind) {
                Some(Tok::Pipe) => {
                    cursor.next();
                }
                Some(Tok::RParen) | None => break,
                Some(other) => {
                    return Err(self.error_at(pos.line, format!("unexpected {other:?} in command")))
                }
            }
        }
        Ok(Pipeline {
            pos,
            text: Arc::from(pipeline_text(&vars, assign, &commands)),
            vars,
            assign,
            commands,
        })
    }

    fn command(&mut self, cursor: &mut Cursor, pos: Pos) -> Result<Command, ParseError> {
        let start = cursor.peek().map(|t| t.pos).unwrap_or(pos);
        let mut args = Vec::new();
        while let Some(token) = cursor.peek() {
            if matches!(token.kind, Tok::Pipe | Tok::RParen) {
                break;
            }
            if !args.is_empty() && !token.spaced && !matches!(token.kind, Tok::LParen) {
                return Err(self.error_at(
                    token.pos.line,
                    format!("unexpected {} in operand", go_item(&token.kind)),
                ));
            }
            args.push(self.operand(cursor, pos)?);
        }
        if args.is_empty() {
            return Err(self.error_at(pos.line, "missing value for command".into()));
        }
        Ok(Command {
            pos: start,
            text: Arc::from(command_text(&args)),
            args,
        })
    }

    /// The field names right after a term, and where the first of them stands (Go puts a
    /// chain's node there).
    fn fields(cursor: &mut Cursor) -> (Vec<String>, Option<Pos>) {
        let mut fields = Vec::new();
        let mut first = None;
        while let Some(Token {
            kind: Tok::Field(name),
            spaced: false,
            pos,
        }) = cursor.peek()
        {
            first.get_or_insert(*pos);
            fields.push(name.clone());
            cursor.next();
        }
        (fields, first)
    }

    fn operand(&mut self, cursor: &mut Cursor, pos: Pos) -> Result<Arg, ParseError> {
        let Some(token) = cursor.next() else {
            return Err(self.error_at(pos.line, "missing value for command".into()));
        };
        let line = token.pos.line;
        let at = token.pos;
        let arg = |pos: Pos, text: String, operand: Operand| Arg {
            pos,
            text: Arc::from(text),
            operand,
        };
        Ok(match &token.kind {
            Tok::Dot => {
                if let Some(Token {
                    kind: Tok::Field(_),
                    spaced: false,
                    ..
                }) = cursor.peek()
                {
                    return Err(self.error_at(line, "unexpected . after term \".\"".into()));
                }
                arg(at, ".".into(), Operand::Dot)
            }
            Tok::Field(first) => {
                let (more, chain_at) = Self::fields(cursor);
                let mut fields = vec![first.clone()];
                fields.extend(more);
                let text = format!(".{}", fields.join("."));
                arg(chain_at.unwrap_or(at), text, Operand::Field(fields))
            }
            Tok::Var(name) => {
                if !self.vars.contains(name) {
                    return Err(self.error_at(line, format!("undefined variable \"${name}\"")));
                }
                let (fields, chain_at) = Self::fields(cursor);
                let text: String = std::iter::once(format!("${name}"))
                    .chain(fields.iter().map(|f| format!(".{f}")))
                    .collect();
                arg(
                    chain_at.unwrap_or(at),
                    text,
                    Operand::Variable(name.clone(), fields),
                )
            }
            Tok::Ident(word) => {
                let operand = match word.as_str() {
                    "true" => Operand::Bool(true),
                    "false" => Operand::Bool(false),
                    "nil" => Operand::Nil,
                    "if" | "else" | "end" | "range" | "with" | "define" | "template" | "block"
                    | "break" | "continue" => {
                        return Err(self.error_at(line, format!("unexpected <{word}> in command")));
                    }
                    _ if (self.is_function)(word) => Operand::Function(word.clone()),
                    _ => {
                        return Err(self.error_at(line, format!("function {word:?} not defined")));
                    }
                };
                arg(at, word.clone(), operand)
            }
            Tok::Str(value, raw) => arg(at, raw.clone(), Operand::Str(value.clone())),
            Tok::Char(c) => arg(at, c.to_string(), Operand::Int(*c)),
            Tok::Number(raw) => arg(at, raw.clone(), self.number(raw, line)?),
            Tok::LParen => {
                let inner_at = cursor.peek().map_or(at, |t| t.pos);
                let inner = self.pipeline(cursor, inner_at, false)?;
                match cursor.next().map(|t| &t.kind) {
                    Some(Tok::RParen) => {}
                    _ => return Err(self.error_at(line, "unclosed left paren".into())),
                }
                let (fields, chain_at) = Self::fields(cursor);
                let text: String = std::iter::once(format!("({})", inner.text))
                    .chain(fields.iter().map(|f| format!(".{f}")))
                    .collect();
                arg(
                    chain_at.unwrap_or(inner_at),
                    text,
                    Operand::Chain(Box::new(inner), fields),
                )
            }
            other => return Err(self.error_at(line, format!("unexpected {other:?} in operand"))),
        })
    }

    fn number(&self, raw: &str, line: usize) -> Result<Operand, ParseError> {
        let clean = raw.replace('_', "");
        let (negative, digits) = match clean.strip_prefix('-') {
            Some(rest) => (true, rest.to_string()),
            None => (false, clean.trim_start_matches('+').to_string()),
        };
        let radix = |prefix: &[&str], base: u32| -> Option<i64> {
            let lower = digits.to_ascii_lowercase();
            prefix
                .iter()
                .find_map(|p| lower.strip_prefix(p))
                .and_then(|d| i64::from_str_radix(d, base).ok())
        };
        let integer = radix(&["0x"], 16)
            .or_else(|| radix(&["0o"], 8))
            .or_else(|| radix(&["0b"], 2))
            .or_else(|| {
                if digits.len() > 1
                    && digits.starts_with('0')
                    && digits.chars().all(|c| c.is_ascii_digit())
                {
                    i64::from_str_radix(&digits[1..], 8).ok()
                } else {
                    digits.parse::<i64>().ok()
                }
            });
        if let Some(i) = integer {
            return Ok(Operand::Int(if negative { -i } else { i }));
        }
        let lower = digits.to_ascii_lowercase();
        let float = if let Some(hex) = lower.strip_prefix("0x") {
            hex_float(hex)
        } else if lower.contains("inf") || lower.contains("nan") {
            None
        } else {
            digits.parse::<f64>().ok()
        };
        match float {
            // Too large for an int64 yet written as an integer: Go refuses it.
            Some(_) if !lower.contains(['.', 'e', 'p']) => {
                Err(self.error_at(line, format!("integer overflow: {raw:?}")))
            }
            Some(f) => Ok(Operand::Float(if negative { -f } else { f })),
            None => Err(self.error_at(line, format!("bad number syntax: {raw:?}"))),
        }
    }
}

/// A command as Go prints it: its operands separated by spaces.
fn command_text(args: &[Arg]) -> String {
    args.iter()
        .map(|a| a.text.as_ref())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A pipeline as Go prints it: `$x := a | b`.
fn pipeline_text(vars: &[String], assign: bool, commands: &[Command]) -> String {
    let mut text = String::new();
    if !vars.is_empty() {
        let names: Vec<String> = vars.iter().map(|v| format!("${v}")).collect();
        text.push_str(&names.join(", "));
        text.push_str(if assign { " = " } else { " := " });
    }
    let commands: Vec<&str> = commands.iter().map(|c| c.text.as_ref()).collect();
    text.push_str(&commands.join(" | "));
    text
}

/// A token as Go's `item.String` prints it: keywords in angle brackets, anything else
/// quoted (cut after ten characters).
fn go_item(token: &Tok) -> String {
    let text = match token {
        Tok::Dot => return "<.>".into(),
        Tok::Ident(word) if KEYWORDS.contains(&word.as_str()) => return format!("<{word}>"),
        Tok::Ident(word) => word.clone(),
        Tok::Field(name) => format!(".{name}"),
        Tok::Var(name) => format!("${name}"),
        Tok::Str(_, raw) => raw.clone(),
        Tok::Number(text) => text.clone(),
        Tok::Char(c) => char::from_u32(u32::try_from(*c).unwrap_or(0))
            .map(|c| format!("'{c}'"))
            .unwrap_or_default(),
        Tok::LParen => "(".into(),
        Tok::RParen => ")".into(),
        Tok::Pipe => "|".into(),
        Tok::Declare => ":=".into(),
        Tok::Assign => "=".into(),
        Tok::Comma => ",".into(),
    };
    if text.chars().count() > 10 {
        let cut: String = text.chars().take(10).collect();
        format!("{}...", super::printf::go_quote(&cut))
    } else {
        super::printf::go_quote(&text)
    }
}

/// Go's template keywords.
const KEYWORDS: [&str; 11] = [
    "block", "break", "continue", "define", "else", "end", "if", "range", "nil", "template", "with",
];

/// A hexadecimal floating-point literal after its `0x` (`1p60`, `1.8p1`, `ap-2`), as Go's
/// `strconv.ParseFloat` reads it: hex digits with an optional point, then a binary exponent.
pub(crate) fn hex_float(text: &str) -> Option<f64> {
    let (mantissa, exponent) = text.split_once('p')?;
    let exponent: i32 = exponent.parse().ok()?;
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    let mut value = 0f64;
    for digit in whole.chars().chain(fraction.chars()) {
        value = value * 16.0 + f64::from(digit.to_digit(16)?);
    }
    let fraction_bits = i32::try_from(fraction.len()).ok()?.checked_mul(4)?;
    Some(value * 2f64.powi(exponent - fraction_bits))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_test(name: &str, source: &str) -> Result<Parsed, ParseError> {
        parse(name, source, &|f| ["index", "sortAlpha", "f"].contains(&f))
    }

    #[test]
    fn control_structures_nest_with_else_chains() {
        let parsed = parse_test("t", "{{if .a}}A{{else if .b}}B{{else}}C{{end}}").expect("parses");
        let [Node::If(branch)] = parsed.root.as_slice() else {
            panic!("one if: {parsed:?}")
        };
        assert_eq!(branch.body, [Node::Text("A".into())]);
        let [Node::If(inner)] = branch.otherwise.as_slice() else {
            panic!("else if")
        };
        assert_eq!(inner.otherwise, [Node::Text("C".into())]);
    }

    #[test]
    fn defines_and_blocks_become_named_templates() {
        let parsed =
            parse_test("t", r#"{{define "a"}}x{{end}}{{block "b" .}}y{{end}}"#).expect("parses");
        let names: Vec<&str> = parsed.defines.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert!(matches!(parsed.root.as_slice(), [Node::Template { name, .. }] if name == "b"));
    }

    #[test]
    fn pipelines_declare_and_chain() {
        let parsed = parse_test(
            "t",
            "{{ range $i, $v := .items | sortAlpha }}{{ (index $v 0).name }}{{ end }}",
        )
        .expect("parses");
        let [Node::Range(branch)] = parsed.root.as_slice() else {
            panic!("a range")
        };
        assert_eq!(branch.pipe.vars, ["i", "v"]);
        assert_eq!(branch.pipe.commands.len(), 2);
        let [Node::Action(action)] = branch.body.as_slice() else {
            panic!("an action")
        };
        assert!(
            matches!(&action.commands[0].args[0].operand, Operand::Chain(_, fields) if fields == &["name".to_string()])
        );
    }

    #[test]
    fn syntax_errors_name_the_template_and_line() {
        let cases = [
            ("{{ if .a }}", "template: t:1: unexpected EOF"),
            ("a\n{{ end }}", "template: t:2: unexpected {{end}}"),
            ("{{ .a | }}", "template: t:1: missing value for command"),
            ("\n\n{{ \"x }}", "template: t:3: unterminated quoted string"),
            ("{{ 12abc }}", "template: t:1: bad number syntax: \"12abc\""),
            (
                "{{ 99999999999999999999 }}",
                "template: t:1: integer overflow: \"99999999999999999999\"",
            ),
            (
                "{{ if .a }}{{ define \"x\" }}{{ end }}{{ end }}",
                "template: t:1: unexpected define: define must be at the top level",
            ),
            (
                "{{ nosuch 1 }}",
                "template: t:1: function \"nosuch\" not defined",
            ),
            ("{{ $x }}", "template: t:1: undefined variable \"$x\""),
            (
                "{{ if $x := 1 }}{{ end }}\n{{ $x }}",
                "template: t:2: undefined variable \"$x\"",
            ),
            (
                "{{ $y := 1 }}{{ define \"d\" }}{{ $y }}{{ end }}",
                "template: t:1: undefined variable \"$y\"",
            ),
        ];
        for (source, message) in cases {
            assert_eq!(
                parse_test("t", source).expect_err(source).to_string(),
                message,
                "{source}"
            );
        }
    }
}
