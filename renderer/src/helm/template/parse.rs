//! The parser: items into nodes, `define` and `block` into named templates.

use super::ast::{Branch, Command, Node, Operand, Pipeline, Pos};
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

/// Parses a template.
pub fn parse(name: &str, source: &str) -> Result<Parsed, ParseError> {
    let items = lex::items(source).map_err(|e| ParseError {
        name: name.to_string(),
        line: e.line,
        message: e.message,
    })?;
    let mut parser = Parser {
        name,
        items,
        at: 0,
        defines: Vec::new(),
        last_line: 1,
        eof_line: 1 + source.matches('\n').count(),
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
            let (tokens, pos, text) = match item {
                Item::Text(text) => {
                    nodes.push(Node::Text(text));
                    continue;
                }
                Item::Action(tokens, pos, text) => (tokens, pos, text),
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
                    self.items[self.at - 1] = Item::Action(tokens, pos, text);
                    return Ok((nodes, Some((keyword, pos))));
                }
                "if" | "range" | "with" => {
                    cursor.next();
                    let pipe = self.pipeline(&mut cursor, pos, &text, keyword == "range")?;
                    nodes.push(self.branch(&keyword, pipe)?);
                }
                "define" | "block" => {
                    cursor.next();
                    let template_name = self.string_operand(&mut cursor, pos, &keyword)?;
                    let pipe = if keyword == "block" {
                        Some(self.pipeline(&mut cursor, pos, &text, false)?)
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
                    let (body, end) = self.list(true)?;
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
                        Some(self.pipeline(&mut cursor, pos, &text, false)?)
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
                    let pipe = self.pipeline(&mut cursor, pos, &text, false)?;
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
        if let Some(Item::Action(tokens, pos, _)) = self.items.get(self.at.saturating_sub(1)) {
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
                let Some(Item::Action(tokens, _, text)) = self.items.get(self.at - 1).cloned()
                else {
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
                        let pipe = self.pipeline(&mut cursor, at, &text, false)?;
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
            Some(Tok::Str(name)) => Ok(name.clone()),
            _ => Err(self.error_at(
                pos.line,
                format!("unexpected name in {what} clause: expected a string"),
            )),
        }
    }

    /// `[$a[, $b] (:= | =)] command [| command]...`
    fn pipeline(
        &self,
        cursor: &mut Cursor,
        pos: Pos,
        text: &std::rc::Rc<str>,
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
        }
        let mut commands = Vec::new();
        loop {
            let command = self.command(cursor, pos, text)?;
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
            text: text.clone(),
            vars,
            assign,
            commands,
        })
    }

    fn command(
        &self,
        cursor: &mut Cursor,
        pos: Pos,
        text: &std::rc::Rc<str>,
    ) -> Result<Command, ParseError> {
        let start = cursor.peek().map(|t| t.pos).unwrap_or(pos);
        let mut args = Vec::new();
        while let Some(token) = cursor.peek() {
            if matches!(token.kind, Tok::Pipe | Tok::RParen) {
                break;
            }
            if !args.is_empty() && !token.spaced && !matches!(token.kind, Tok::LParen) {
                return Err(self.error_at(
                    token.pos.line,
                    format!("missing space before {:?}", token.kind),
                ));
            }
            args.push(self.operand(cursor, pos, text)?);
        }
        if args.is_empty() {
            return Err(self.error_at(pos.line, "missing value for command".into()));
        }
        Ok(Command {
            pos: start,
            text: text.clone(),
            args,
        })
    }

    fn fields(cursor: &mut Cursor) -> Vec<String> {
        let mut fields = Vec::new();
        while let Some(Token {
            kind: Tok::Field(name),
            spaced: false,
            ..
        }) = cursor.peek()
        {
            fields.push(name.clone());
            cursor.next();
        }
        fields
    }

    fn operand(
        &self,
        cursor: &mut Cursor,
        pos: Pos,
        text: &std::rc::Rc<str>,
    ) -> Result<Operand, ParseError> {
        let Some(token) = cursor.next() else {
            return Err(self.error_at(pos.line, "missing value for command".into()));
        };
        let line = token.pos.line;
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
                Operand::Dot
            }
            Tok::Field(first) => {
                let mut fields = vec![first.clone()];
                fields.extend(Self::fields(cursor));
                Operand::Field(fields)
            }
            Tok::Var(name) => Operand::Variable(name.clone(), Self::fields(cursor)),
            Tok::Ident(word) => match word.as_str() {
                "true" => Operand::Bool(true),
                "false" => Operand::Bool(false),
                "nil" => Operand::Nil,
                "if" | "else" | "end" | "range" | "with" | "define" | "template" | "block"
                | "break" | "continue" => {
                    return Err(self.error_at(line, format!("unexpected <{word}> in command")));
                }
                _ => Operand::Function(word.clone()),
            },
            Tok::Str(s) => Operand::Str(s.clone()),
            Tok::Char(c) => Operand::Int(*c),
            Tok::Number(raw) => self.number(raw, line)?,
            Tok::LParen => {
                let inner = self.pipeline(cursor, token.pos, text, false)?;
                match cursor.next().map(|t| &t.kind) {
                    Some(Tok::RParen) => {}
                    _ => return Err(self.error_at(line, "unclosed left paren".into())),
                }
                let fields = Self::fields(cursor);
                Operand::Chain(Box::new(inner), fields)
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
        match digits.parse::<f64>() {
            Ok(f)
                if !digits.to_ascii_lowercase().contains("inf")
                    && !digits.to_ascii_lowercase().contains("nan") =>
            {
                Ok(Operand::Float(if negative { -f } else { f }))
            }
            _ => Err(self.error_at(line, format!("bad number syntax: {raw:?}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_structures_nest_with_else_chains() {
        let parsed = parse("t", "{{if .a}}A{{else if .b}}B{{else}}C{{end}}").expect("parses");
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
            parse("t", r#"{{define "a"}}x{{end}}{{block "b" .}}y{{end}}"#).expect("parses");
        let names: Vec<&str> = parsed.defines.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert!(matches!(parsed.root.as_slice(), [Node::Template { name, .. }] if name == "b"));
    }

    #[test]
    fn pipelines_declare_and_chain() {
        let parsed = parse(
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
            matches!(&action.commands[0].args[0], Operand::Chain(_, fields) if fields == &["name".to_string()])
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
                "{{ if .a }}{{ define \"x\" }}{{ end }}{{ end }}",
                "template: t:1: unexpected define: define must be at the top level",
            ),
        ];
        for (source, message) in cases {
            assert_eq!(
                parse("t", source).expect_err(source).to_string(),
                message,
                "{source}"
            );
        }
    }
}
