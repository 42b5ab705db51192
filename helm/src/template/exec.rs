//! The executor: walks parsed templates with a dot, variables and functions, and reports
//! failures as Go's `text/template` does (position and node of the failure, and what a
//! failing `include`, `tpl`, `fail` or `required` wrapped).

use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use super::ast::{Arg, Branch, Command, Node, Operand, Pipeline, Pos};
use super::lex::Delims;
use super::parse::{self, ParseError, Parsed};
use super::value::Value;
use super::world::World;

/// The deepest `template`/`include` nesting allowed; deeper is reported as recursion.
pub const MAX_DEPTH: usize = 1000;
/// The most output one execution may produce (64 MiB).
pub const MAX_OUTPUT: usize = 64 * 1024 * 1024;
/// When less stack than this is left, a template call gets a new stack segment.
const STACK_RED_ZONE: usize = 128 * 1024;
/// The size of each new stack segment.
const STACK_SEGMENT: usize = 4 * 1024 * 1024;
/// The largest integer `range` may count to.
pub const MAX_RANGE: i64 = 10_000_000;

/// A function callable from templates. It gets the executor (for `include` and `tpl`)
/// and its evaluated arguments.
pub type Func = fn(&mut Exec, Vec<Value>) -> Result<Value, String>;

/// The functions Go's template handles itself: they need no entry in a function map.
const CONTROL_FUNCTIONS: [&str; 3] = ["and", "or", "call"];

/// Named templates, parsed.
#[derive(Debug, Clone, Default)]
pub struct Templates {
    defs: HashMap<String, Defined>,
    delims: Delims,
    missing_key_error: bool,
}

/// A named template and the file it was defined in.
#[derive(Debug, Clone)]
struct Defined {
    body: Arc<Vec<Node>>,
    file: Arc<str>,
}

impl Templates {
    /// An empty set whose templates mark actions with `delims` (Go's `Delims`) and, when
    /// `missing_key_error`, fail on a map key that is not there (`missingkey=error`), as
    /// Fleet templates Helm values.
    pub fn with_options(delims: Delims, missing_key_error: bool) -> Self {
        Self {
            delims,
            missing_key_error,
            ..Self::default()
        }
    }

    /// Parses `source` as the template `name`, adding the templates it defines. A later
    /// definition of a name replaces an earlier one. Calls of functions `funcs` does not
    /// hold are syntax errors, as in Go.
    pub fn add(
        &mut self,
        name: &str,
        source: &str,
        funcs: &HashMap<&'static str, Func>,
    ) -> Result<(), ParseError> {
        let parsed = self.parse(name, source, funcs)?;
        self.insert(name, parsed);
        Ok(())
    }

    /// Parses `source` as the template `name` would be parsed by [`Templates::add`],
    /// without adding it (parses may run on several threads, then be added in order).
    pub fn parse(
        &self,
        name: &str,
        source: &str,
        funcs: &HashMap<&'static str, Func>,
    ) -> Result<Parsed, ParseError> {
        let known = |f: &str| funcs.contains_key(f) || CONTROL_FUNCTIONS.contains(&f);
        parse::parse_with(name, source, &known, self.delims)
    }

    /// Adds the templates a [`Templates::parse`] of `name` found.
    pub fn insert(&mut self, name: &str, parsed: Parsed) {
        let file: Arc<str> = Arc::from(name);
        for (defined, body) in parsed.defines {
            let body = Arc::new(body);
            self.defs.insert(
                defined,
                Defined {
                    body,
                    file: file.clone(),
                },
            );
        }
        let body = Arc::new(parsed.root);
        self.defs.insert(name.to_string(), Defined { body, file });
    }

    /// Whether a template of that name exists.
    pub fn has(&self, name: &str) -> bool {
        self.defs.contains_key(name)
    }

    fn get(&self, name: &str) -> Option<Defined> {
        self.defs.get(name).cloned()
    }
}

/// What an execution error came from.
#[derive(Debug, Clone, PartialEq)]
pub enum Cause {
    /// The engine's own complaint: a nil pointer, a wrong type, a wrong argument count.
    Engine,
    /// A function returned an error.
    Function,
    /// `fail` or `required`: a message Helm shows as it is.
    User(String),
    /// `include` of a template that failed.
    Include(Box<ExecError>),
    /// `include` of a template that does not exist.
    NoTemplate(String),
    /// `tpl` whose text could not be parsed or run (the message holds it).
    Tpl {
        /// Set when the failure inside was `fail` or `required`.
        user: Option<String>,
    },
}

/// An execution error, printed as Go prints it:
/// `template: FILE:LINE:COL: executing "NAME" at <NODE>: MESSAGE`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("template: {file}:{}:{}: executing \"{template}\" at <{context}>: {message}", pos.line, pos.col)]
pub struct ExecError {
    /// The file the failing template was defined in.
    pub file: String,
    /// The template executing.
    pub template: String,
    /// Where.
    pub pos: Pos,
    /// The node that failed, as Go prints it.
    pub context: String,
    /// What went wrong (for a failed call, `error calling NAME: ...`).
    pub message: String,
    /// What it came from.
    pub cause: Cause,
}

impl ExecError {
    /// The message of `fail` or `required` somewhere in the chain, if any.
    pub fn user_message(&self) -> Option<&str> {
        match &self.cause {
            Cause::User(message) => Some(message),
            Cause::Tpl { user } => user.as_deref(),
            Cause::Include(inner) => inner.user_message(),
            _ => None,
        }
    }

    /// The error as Helm 4 prints it: `execution error at (FILE:LINE:COL): MESSAGE` for
    /// `fail` and `required`; else each template of an `include` chain on lines of its
    /// own, when the innermost failure is the engine's; else Go's own text.
    pub fn helm_message(&self) -> String {
        if let Some(user) = self.user_message() {
            return format!(
                "execution error at ({}:{}:{}): {user}",
                self.file, self.pos.line, self.pos.col
            );
        }
        let mut out = String::new();
        let mut current = self;
        loop {
            let head = match &current.cause {
                Cause::Engine => current.message.clone(),
                Cause::Include(_) | Cause::NoTemplate(_) => "error calling include:".into(),
                _ => return self.to_string(),
            };
            out.push_str(&format!(
                "{}:{}:{}\n  executing \"{}\" at <{}>:\n    {head}\n",
                current.file, current.pos.line, current.pos.col, current.template, current.context
            ));
            match &current.cause {
                Cause::Include(inner) => current = inner,
                Cause::NoTemplate(name) => {
                    out.push_str(&no_template(name));
                    break;
                }
                _ => break,
            }
        }
        out.trim().to_string()
    }
}

/// Go's error for a template that does not exist, as `include` meets it.
fn no_template(name: &str) -> String {
    format!("template: no template {name:?} associated with template \"gotpl\"")
}

enum Flow {
    Normal,
    Break,
    Continue,
}

/// An execution in progress.
pub struct Exec<'a> {
    templates: &'a Templates,
    funcs: &'a HashMap<&'static str, Func>,
    vars: Vec<(String, Value)>,
    depth: usize,
    template: String,
    file: Arc<str>,
    out_size: usize,
    /// Extra templates added at run time (`tpl`), looked up before `templates`.
    pub added: Templates,
    /// The randomness and clock of the render.
    pub world: Rc<World>,
    /// Set by a function that fails for a reason the error should carry (`include`,
    /// `tpl`, `fail`, `required`); taken when its error is reported.
    pub failure: Option<Cause>,
}

type ExecResult<T> = std::result::Result<T, Box<ExecError>>;

impl<'a> Exec<'a> {
    /// A new execution over `templates` with `funcs`.
    pub fn new(templates: &'a Templates, funcs: &'a HashMap<&'static str, Func>) -> Self {
        Self {
            templates,
            funcs,
            vars: Vec::new(),
            depth: 0,
            template: String::new(),
            file: Arc::from(""),
            out_size: 0,
            added: Templates::default(),
            world: Rc::new(World::from_entropy()),
            failure: None,
        }
    }

    /// The same execution drawing on `world` (one per render, shared by its templates).
    pub fn with_world(mut self, world: Rc<World>) -> Self {
        self.world = world;
        self
    }

    fn lookup(&self, name: &str) -> Option<Defined> {
        self.added.get(name).or_else(|| self.templates.get(name))
    }

    /// The function map of this execution (for `tpl`, which parses more templates).
    pub fn functions(&self) -> &'a HashMap<&'static str, Func> {
        self.funcs
    }

    /// Whether a template exists (for `include` and `template`).
    pub fn has_template(&self, name: &str) -> bool {
        self.added.has(name) || self.templates.has(name)
    }

    /// Executes the template `name` with `dot`, returning its output.
    pub fn execute(&mut self, name: &str, dot: &Value) -> ExecResult<String> {
        let defined = self.lookup(name).ok_or_else(|| {
            Box::new(ExecError {
                file: name.to_string(),
                template: name.to_string(),
                pos: Pos::default(),
                context: name.to_string(),
                message: no_template(name),
                cause: Cause::NoTemplate(name.to_string()),
            })
        })?;
        if self.depth >= MAX_DEPTH {
            return Err(self.engine_error(
                Pos::default(),
                name,
                format!("exceeded maximum template depth ({MAX_DEPTH})"),
            ));
        }
        self.depth += 1;
        let saved_vars = std::mem::replace(&mut self.vars, vec![(String::new(), dot.clone())]);
        let saved_name = std::mem::replace(&mut self.template, name.to_string());
        let saved_file = std::mem::replace(&mut self.file, defined.file.clone());
        let mut out = String::new();
        // Nested templates recurse natively; the stack grows on demand so that the depth
        // limit, not the stack, ends runaway recursion.
        let result = stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || {
            self.walk(&defined.body, dot, &mut out)
        });
        self.vars = saved_vars;
        self.template = saved_name;
        self.file = saved_file;
        self.depth -= 1;
        result.map(|_| out)
    }

    fn error(&self, pos: Pos, context: &str, message: String, cause: Cause) -> Box<ExecError> {
        Box::new(ExecError {
            file: self.file.to_string(),
            template: self.template.clone(),
            pos,
            context: context.to_string(),
            message,
            cause,
        })
    }

    /// The engine's own complaint about the node at `pos` (`context`).
    fn engine_error(&self, pos: Pos, context: &str, message: String) -> Box<ExecError> {
        self.error(pos, context, message, Cause::Engine)
    }

    fn emit(&mut self, out: &mut String, text: &str, pos: Pos) -> ExecResult<()> {
        self.out_size += text.len();
        if self.out_size > MAX_OUTPUT {
            return Err(self.engine_error(
                pos,
                "output",
                format!("output exceeds {MAX_OUTPUT} bytes"),
            ));
        }
        out.push_str(text);
        Ok(())
    }

    /// Counts a step of the render at `pos`: an error once the render's budget is spent.
    fn step(&self, pos: Pos, context: &str) -> ExecResult<()> {
        self.world
            .step()
            .map_err(|message| self.engine_error(pos, context, message))
    }

    fn walk(&mut self, nodes: &[Node], dot: &Value, out: &mut String) -> ExecResult<Flow> {
        for node in nodes {
            self.step(Pos::default(), "template")?;
            match node {
                Node::Text(text) => self.emit(out, text, Pos::default())?,
                Node::Action(pipe) => {
                    let value = self.pipeline(pipe, dot, true)?;
                    if pipe.vars.is_empty() {
                        let text = value.to_go_string();
                        self.emit(out, &text, pipe.pos)?;
                    }
                }
                Node::If(branch) => {
                    let mark = self.vars.len();
                    let value = self.pipeline(&branch.pipe, dot, true)?;
                    let flow = if value.truthy() {
                        self.walk(&branch.body, dot, out)?
                    } else {
                        self.walk(&branch.otherwise, dot, out)?
                    };
                    self.vars.truncate(mark);
                    if !matches!(flow, Flow::Normal) {
                        return Ok(flow);
                    }
                }
                Node::With(branch) => {
                    let mark = self.vars.len();
                    let value = self.pipeline(&branch.pipe, dot, true)?;
                    let flow = if value.truthy() {
                        self.walk(&branch.body, &value, out)?
                    } else {
                        self.walk(&branch.otherwise, dot, out)?
                    };
                    self.vars.truncate(mark);
                    if !matches!(flow, Flow::Normal) {
                        return Ok(flow);
                    }
                }
                Node::Range(branch) => self.range(branch, dot, out)?,
                Node::Template { pos, name, pipe } => {
                    let data = match pipe {
                        Some(pipe) => self.pipeline(pipe, dot, true)?,
                        None => Value::Nil,
                    };
                    if !self.has_template(name) {
                        return Err(self.engine_error(
                            *pos,
                            &format!("template {name:?}"),
                            format!("no such template {name:?}"),
                        ));
                    }
                    let text = self.execute(name, &data)?;
                    self.emit(out, &text, *pos)?;
                }
                Node::Break(_) => return Ok(Flow::Break),
                Node::Continue(_) => return Ok(Flow::Continue),
            }
        }
        Ok(Flow::Normal)
    }

    fn range(&mut self, branch: &Branch, dot: &Value, out: &mut String) -> ExecResult<()> {
        let mark = self.vars.len();
        let value = self.pipeline(&branch.pipe, dot, false)?;
        let index = |i: usize| Value::Int(i64::try_from(i).unwrap_or(i64::MAX));
        let items: Box<dyn Iterator<Item = (Value, Value)>> = match &value {
            Value::List(items) => Box::new(
                (items.iter().enumerate())
                    .map(|(i, v)| (index(i), v.clone()))
                    .collect::<Vec<_>>()
                    .into_iter(),
            ),
            Value::Map(map) => Box::new(
                (map.borrow().iter())
                    .map(|(k, v)| (Value::from(k.as_str()), v.clone()))
                    .collect::<Vec<_>>()
                    .into_iter(),
            ),
            Value::Int(n) | Value::Int64(n) if *n > MAX_RANGE => {
                return Err(self.engine_error(
                    branch.pipe.pos,
                    &branch.pipe.text,
                    format!("range over {n} is more than the limit of {MAX_RANGE} iterations"),
                ))
            }
            // Counted as it goes: a range over a large number holds no list of it.
            Value::Int(n) | Value::Int64(n) => {
                Box::new((0..*n).map(|i| (Value::Int(i), Value::Int(i))))
            }
            Value::Nil => Box::new(std::iter::empty()),
            Value::Bytes(bytes) => Box::new(
                (bytes.iter().enumerate())
                    .map(|(i, b)| (index(i), Value::Int(i64::from(*b))))
                    .collect::<Vec<_>>()
                    .into_iter(),
            ),
            Value::Object(object) if object.entries().is_some() => {
                Box::new(object.entries().unwrap_or_default().into_iter())
            }
            other => {
                return Err(self.engine_error(
                    branch.pipe.pos,
                    &branch.pipe.text,
                    format!("range can't iterate over {}", other.to_go_string()),
                ))
            }
        };
        let mut items = items.peekable();
        if items.peek().is_none() {
            self.walk(&branch.otherwise, dot, out)?;
            self.vars.truncate(mark);
            return Ok(());
        }
        for (key, element) in items {
            self.step(branch.pipe.pos, &branch.pipe.text)?;
            let inner = self.vars.len();
            match branch.pipe.vars.as_slice() {
                [one] => self.vars.push((one.clone(), element.clone())),
                [first, second] => {
                    self.vars.push((first.clone(), key));
                    self.vars.push((second.clone(), element.clone()));
                }
                _ => {}
            }
            let flow = self.walk(&branch.body, &element, out)?;
            self.vars.truncate(inner);
            if matches!(flow, Flow::Break) {
                break;
            }
        }
        self.vars.truncate(mark);
        Ok(())
    }

    /// Evaluates a pipeline; `declare` assigns its variables (not for `range`).
    fn pipeline(&mut self, pipe: &Pipeline, dot: &Value, declare: bool) -> ExecResult<Value> {
        let mut value: Option<Value> = None;
        for command in &pipe.commands {
            value = Some(self.command(command, dot, value.take())?);
        }
        let value = value.unwrap_or_default();
        if declare {
            for name in &pipe.vars {
                if pipe.assign {
                    match self.vars.iter_mut().rev().find(|(n, _)| n == name) {
                        Some(slot) => slot.1 = value.clone(),
                        None => {
                            return Err(self.engine_error(
                                pipe.pos,
                                &pipe.text,
                                format!("undefined variable: ${name}"),
                            ))
                        }
                    }
                } else {
                    self.vars.push((name.clone(), value.clone()));
                }
            }
        }
        Ok(value)
    }

    fn variable(&self, name: &str, arg: &Arg) -> ExecResult<Value> {
        self.vars
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .ok_or_else(|| {
                self.engine_error(arg.pos, &arg.text, format!("undefined variable: ${name}"))
            })
    }

    fn command(
        &mut self,
        command: &Command,
        dot: &Value,
        last: Option<Value>,
    ) -> ExecResult<Value> {
        let (first, rest) = command
            .args
            .split_first()
            .ok_or_else(|| self.engine_error(command.pos, &command.text, "empty command".into()))?;
        match &first.operand {
            Operand::Function(name) if name == "and" || name == "or" => {
                self.logical(name, first, rest, dot, last)
            }
            Operand::Function(name) => {
                let args = self.arguments(rest, dot, last)?;
                self.call(name, first, rest, args, command)
            }
            Operand::Field(fields) => {
                let args = self.arguments(rest, dot, last)?;
                self.fields(dot.clone(), fields, args, first)
            }
            Operand::Variable(name, fields) => {
                let base = self.variable(name, first)?;
                let args = self.arguments(rest, dot, last)?;
                self.fields(base, fields, args, first)
            }
            Operand::Chain(pipe, fields) => {
                let base = self.pipeline(pipe, dot, false)?;
                let args = self.arguments(rest, dot, last)?;
                self.fields(base, fields, args, first)
            }
            Operand::Nil => {
                Err(self.engine_error(first.pos, &first.text, "nil is not a command".into()))
            }
            _ => {
                if !rest.is_empty() || last.is_some() {
                    return Err(self.engine_error(
                        first.pos,
                        &first.text,
                        "can't give argument to non-function".into(),
                    ));
                }
                self.operand(first, dot)
            }
        }
    }

    /// Calls a function; its failure is reported as Go reports it. Go checks the argument
    /// count and types itself, at the function's name or its last argument; an error the
    /// function returns is reported at the command.
    fn call(
        &mut self,
        name: &str,
        function: &Arg,
        rest: &[Arg],
        args: Vec<Value>,
        command: &Command,
    ) -> ExecResult<Value> {
        let Some(func) = self.funcs.get(name).copied() else {
            return Err(self.engine_error(
                function.pos,
                &function.text,
                format!("{name:?} is not a defined function"),
            ));
        };
        self.step(function.pos, &function.text)?;
        self.failure = None;
        let types: Vec<&'static str> = args.iter().take(rest.len()).map(Value::type_name).collect();
        func(self, args).map_err(|message| {
            let cause = self.failure.take();
            if message.starts_with("wrong number of args") {
                return self.engine_error(function.pos, &function.text, message);
            }
            if let Some((expected, got)) = refused_type(&message) {
                // Go checks each argument where it stands, in order; the piped value last.
                let blamed = rest.iter().zip(&types).find(|(_, t)| **t == got);
                if let Some((arg, _)) = blamed {
                    let message = literal_refusal(arg, expected)
                        .unwrap_or_else(|| value_refusal(arg, expected, got));
                    let at = innermost(arg);
                    return self.engine_error(at.pos, &at.text, message);
                }
                let at = rest.last().map_or(function, innermost);
                let message = match got {
                    "<nil>" => format!("invalid value; expected {expected}"),
                    _ => message,
                };
                return self.engine_error(at.pos, &at.text, message);
            }
            let cause = cause.unwrap_or(Cause::Function);
            let detail = match &cause {
                Cause::Include(inner) => inner.to_string(),
                Cause::NoTemplate(template) => no_template(template),
                _ => message,
            };
            self.error(
                command.pos,
                &command.text,
                format!("error calling {name}: {detail}"),
                cause,
            )
        })
    }

    fn arguments(
        &mut self,
        rest: &[Arg],
        dot: &Value,
        last: Option<Value>,
    ) -> ExecResult<Vec<Value>> {
        let mut args = Vec::with_capacity(rest.len() + 1);
        for arg in rest {
            args.push(self.operand(arg, dot)?);
        }
        args.extend(last);
        Ok(args)
    }

    /// `and` and `or` evaluate their arguments only as far as needed.
    fn logical(
        &mut self,
        name: &str,
        function: &Arg,
        rest: &[Arg],
        dot: &Value,
        last: Option<Value>,
    ) -> ExecResult<Value> {
        if rest.is_empty() && last.is_none() {
            return Err(self.engine_error(
                function.pos,
                &function.text,
                format!("wrong number of args for {name}: want at least 1 got 0"),
            ));
        }
        let mut value = Value::Nil;
        for arg in rest {
            value = self.operand(arg, dot)?;
            if value.truthy() == (name == "or") {
                return Ok(value);
            }
        }
        if let Some(last) = last {
            value = last;
        }
        Ok(value)
    }

    fn operand(&mut self, arg: &Arg, dot: &Value) -> ExecResult<Value> {
        Ok(match &arg.operand {
            Operand::Dot => dot.clone(),
            Operand::Nil => Value::Nil,
            Operand::Bool(b) => Value::Bool(*b),
            Operand::Int(i) => Value::Int(*i),
            Operand::Float(f) => Value::Float(*f),
            Operand::Str(s) => Value::from(s.as_str()),
            Operand::Field(fields) => self.fields(dot.clone(), fields, Vec::new(), arg)?,
            Operand::Variable(name, fields) => {
                let base = self.variable(name, arg)?;
                self.fields(base, fields, Vec::new(), arg)?
            }
            Operand::Chain(pipe, fields) => {
                let base = self.pipeline(pipe, dot, false)?;
                self.fields(base, fields, Vec::new(), arg)?
            }
            Operand::Function(name) if name == "and" || name == "or" => {
                self.logical(name, arg, &[], dot, None)?
            }
            Operand::Function(name) => {
                let command = Command {
                    pos: arg.pos,
                    text: arg.text.clone(),
                    args: vec![arg.clone()],
                };
                self.call(name, arg, &[], Vec::new(), &command)?
            }
        })
    }

    /// Walks `.a.b.c` from `base`; the last field gets `args` (a method call on objects).
    fn fields(
        &mut self,
        base: Value,
        fields: &[String],
        args: Vec<Value>,
        at: &Arg,
    ) -> ExecResult<Value> {
        let mut value = base;
        for (i, name) in fields.iter().enumerate() {
            let last = i + 1 == fields.len();
            let call_args: &[Value] = if last { &args } else { &[] };
            value = match &value {
                Value::Map(map) => {
                    if !call_args.is_empty() {
                        return Err(self.engine_error(
                            at.pos,
                            &at.text,
                            format!("{name} is not a method but has arguments"),
                        ));
                    }
                    let found = map.borrow().get(name).cloned();
                    match found {
                        Some(value) => value,
                        None if self.templates.missing_key_error => {
                            return Err(self.engine_error(
                                at.pos,
                                &at.text,
                                format!("map has no entry for key {name:?}"),
                            ))
                        }
                        None => Value::Nil,
                    }
                }
                Value::Object(object) => object.call(name, call_args).map_err(|m| {
                    self.error(
                        at.pos,
                        &at.text,
                        format!("error calling {name}: {m}"),
                        Cause::Function,
                    )
                })?,
                // A chain that starts from nothing (an unset variable or dot, a pipeline
                // that gave nil) stays nothing, as Go's missing value does; only a nil
                // met inside the chain (`.a.missing.b`) is an error.
                Value::Nil if i == 0 => Value::Nil,
                Value::Nil => {
                    return Err(self.engine_error(
                        at.pos,
                        &at.text,
                        format!("nil pointer evaluating interface {{}}.{name}"),
                    ))
                }
                other => {
                    return Err(self.engine_error(
                        at.pos,
                        &at.text,
                        format!("can't evaluate field {name} in type {}", other.type_name()),
                    ))
                }
            };
        }
        if fields.is_empty() && !args.is_empty() {
            return Err(self.engine_error(
                at.pos,
                &at.text,
                "can't give argument to non-function".into(),
            ));
        }
        Ok(value)
    }
}

/// The expected and the given type of a function's refusal of an argument
/// (`wrong type for value; expected string; got int`, `invalid value; expected string`).
fn refused_type(message: &str) -> Option<(&str, &str)> {
    if let Some(rest) = message.strip_prefix("wrong type for value; expected ") {
        return rest.split_once("; got ");
    }
    message
        .strip_prefix("invalid value; expected ")
        .map(|expected| (expected, "<nil>"))
}

/// Go's wording for a refused value: a missing key read straight from a field is a nil
/// `interface {}` (Go names its type), while nil passed through a variable or a pipeline
/// has no type at all.
fn value_refusal(arg: &Arg, expected: &str, got: &str) -> String {
    let read_from_field = match &arg.operand {
        Operand::Field(_) => true,
        Operand::Variable(_, fields) | Operand::Chain(_, fields) => !fields.is_empty(),
        _ => false,
    };
    match (got, read_from_field) {
        ("<nil>", true) => format!("wrong type for value; expected {expected}; got interface {{}}"),
        ("<nil>", false) => format!("invalid value; expected {expected}"),
        (got, _) => format!("wrong type for value; expected {expected}; got {got}"),
    }
}

/// The node Go was at when it checked an argument: for a parenthesized pipeline, the
/// last operand it evaluated inside.
fn innermost(arg: &Arg) -> &Arg {
    match &arg.operand {
        Operand::Chain(pipeline, fields) if fields.is_empty() => pipeline
            .commands
            .last()
            .and_then(|command| command.args.last())
            .map_or(arg, innermost),
        _ => arg,
    }
}

/// Go's wording when the refused argument is a constant: Go converts constants to the
/// parameter's type and words the failure by the constant (`expected string; found 12`).
fn literal_refusal(arg: &Arg, expected: &str) -> Option<String> {
    let kind = match expected {
        "string" => "string",
        "bool" => "bool",
        "float64" | "float32" => "float",
        t if t.starts_with("int") || t.starts_with("uint") => "integer",
        _ => return None,
    };
    match arg.operand {
        Operand::Nil => Some(format!("cannot assign nil to {expected}")),
        Operand::Int(_) | Operand::Float(_) | Operand::Str(_) | Operand::Bool(_) => {
            Some(format!("expected {kind}; found {}", arg.text))
        }
        _ => None,
    }
}
