//! The executor: walks parsed templates with a dot, variables and functions.

use std::collections::HashMap;
use std::rc::Rc;

use super::ast::{Branch, Command, Node, Operand, Pipeline, Pos};
use super::parse::{self, ParseError};
use super::value::Value;

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

/// Named templates, parsed.
#[derive(Debug, Clone, Default)]
pub struct Templates {
    defs: HashMap<String, Defined>,
}

/// A named template and the file it was defined in.
#[derive(Debug, Clone)]
struct Defined {
    body: Rc<Vec<Node>>,
    file: Rc<str>,
}

impl Templates {
    /// Parses `source` as the template `name`, adding the templates it defines. A later
    /// definition of a name replaces an earlier one.
    pub fn add(&mut self, name: &str, source: &str) -> Result<(), ParseError> {
        let parsed = parse::parse(name, source)?;
        let file: Rc<str> = Rc::from(name);
        for (defined, body) in parsed.defines {
            let body = Rc::new(body);
            self.defs.insert(
                defined,
                Defined {
                    body,
                    file: file.clone(),
                },
            );
        }
        let body = Rc::new(parsed.root);
        self.defs.insert(name.to_string(), Defined { body, file });
        Ok(())
    }

    /// Whether a template of that name exists.
    pub fn has(&self, name: &str) -> bool {
        self.defs.contains_key(name)
    }

    fn get(&self, name: &str) -> Option<Defined> {
        self.defs.get(name).cloned()
    }
}

/// An execution error, printed as Go prints it:
/// `template: NAME:LINE:COL: executing "NAME" at <CONTEXT>: MESSAGE`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("template: {file}:{}:{}: executing \"{template}\" at <{context}>: {message}", pos.line, pos.col)]
pub struct ExecError {
    /// The file the failing template was defined in.
    pub file: String,
    /// The template executing.
    pub template: String,
    /// Where.
    pub pos: Pos,
    /// The source text of the failing action.
    pub context: String,
    /// What went wrong.
    pub message: String,
    /// Set for `fail` and `required`, whose messages Helm shows verbatim.
    pub user_message: Option<String>,
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
    file: Rc<str>,
    out_size: usize,
    /// Extra templates added at run time (`tpl`), looked up before `templates`.
    pub added: Templates,
    /// Data for functions that need more than their arguments (Helm's engine state).
    pub extension: Option<Rc<dyn std::any::Any>>,
    /// Set by `fail` and `required`: the message to surface verbatim.
    pub user_message: Option<String>,
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
            file: Rc::from(""),
            out_size: 0,
            added: Templates::default(),
            extension: None,
            user_message: None,
        }
    }

    fn lookup(&self, name: &str) -> Option<Defined> {
        self.added.get(name).or_else(|| self.templates.get(name))
    }

    /// The name of the template executing now.
    pub fn current_template(&self) -> &str {
        &self.template
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
                message: format!("no template {name:?} associated with template"),
                user_message: None,
            })
        })?;
        if self.depth >= MAX_DEPTH {
            return Err(self.error(
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

    fn error(&self, pos: Pos, context: &str, message: String) -> Box<ExecError> {
        Box::new(ExecError {
            file: self.file.to_string(),
            template: self.template.clone(),
            pos,
            context: context.to_string(),
            message,
            user_message: self.user_message.clone(),
        })
    }

    fn emit(&mut self, out: &mut String, text: &str, pos: Pos) -> ExecResult<()> {
        self.out_size += text.len();
        if self.out_size > MAX_OUTPUT {
            return Err(self.error(pos, "output", format!("output exceeds {MAX_OUTPUT} bytes")));
        }
        out.push_str(text);
        Ok(())
    }

    fn walk(&mut self, nodes: &[Node], dot: &Value, out: &mut String) -> ExecResult<Flow> {
        for node in nodes {
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
                        return Err(self.error(
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
        let items: Vec<(Value, Value)> = match &value {
            Value::List(items) => items
                .iter()
                .enumerate()
                .map(|(i, v)| (Value::Int(i64::try_from(i).unwrap_or(i64::MAX)), v.clone()))
                .collect(),
            Value::Map(map) => map
                .borrow()
                .iter()
                .map(|(k, v)| (Value::from(k.as_str()), v.clone()))
                .collect(),
            Value::Int(n) if *n > MAX_RANGE => {
                return Err(self.error(
                    branch.pipe.pos,
                    &branch.pipe.text,
                    format!("range over {n} is more than the limit of {MAX_RANGE} iterations"),
                ))
            }
            Value::Int(n) => (0..*n).map(|i| (Value::Int(i), Value::Int(i))).collect(),
            Value::Nil => Vec::new(),
            other => {
                return Err(self.error(
                    branch.pipe.pos,
                    &branch.pipe.text,
                    format!("range can't iterate over {}", other.to_go_string()),
                ))
            }
        };
        if items.is_empty() {
            self.walk(&branch.otherwise, dot, out)?;
            self.vars.truncate(mark);
            return Ok(());
        }
        for (key, element) in items {
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
                            return Err(self.error(
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

    fn variable(&self, name: &str, command: &Command) -> ExecResult<Value> {
        self.vars
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .ok_or_else(|| {
                self.error(
                    command.pos,
                    &command.text,
                    format!("undefined variable: ${name}"),
                )
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
            .ok_or_else(|| self.error(command.pos, &command.text, "empty command".into()))?;
        match first {
            Operand::Function(name) if name == "and" || name == "or" => {
                self.logical(name, rest, command, dot, last)
            }
            Operand::Function(name) => {
                let mut args = Vec::with_capacity(rest.len() + 1);
                for arg in rest {
                    args.push(self.operand(arg, command, dot)?);
                }
                args.extend(last);
                self.call(name, args, command)
            }
            Operand::Field(fields) => {
                let args = self.arguments(rest, command, dot, last)?;
                self.fields(dot.clone(), fields, args, command)
            }
            Operand::Variable(name, fields) => {
                let base = self.variable(name, command)?;
                let args = self.arguments(rest, command, dot, last)?;
                self.fields(base, fields, args, command)
            }
            Operand::Chain(pipe, fields) => {
                let base = self.pipeline(pipe, dot, false)?;
                let args = self.arguments(rest, command, dot, last)?;
                self.fields(base, fields, args, command)
            }
            Operand::Nil => {
                Err(self.error(command.pos, &command.text, "nil is not a command".into()))
            }
            constant => {
                if !rest.is_empty() || last.is_some() {
                    return Err(self.error(
                        command.pos,
                        &command.text,
                        "can't give argument to non-function".into(),
                    ));
                }
                self.operand(constant, command, dot)
            }
        }
    }

    /// Calls a function by name; its failure is reported as Go reports it.
    fn call(&mut self, name: &str, args: Vec<Value>, command: &Command) -> ExecResult<Value> {
        let func = *self.funcs.get(name).ok_or_else(|| {
            self.error(
                command.pos,
                &command.text,
                format!("function {name:?} not defined"),
            )
        })?;
        func(self, args).map_err(|message| {
            // Go checks argument types before the call, and says so without "error calling".
            let typed = message.starts_with("wrong type for value")
                || message.starts_with("invalid value;");
            let message = if typed {
                message
            } else {
                format!("error calling {name}: {message}")
            };
            self.error(command.pos, &command.text, message)
        })
    }

    fn arguments(
        &mut self,
        rest: &[Operand],
        command: &Command,
        dot: &Value,
        last: Option<Value>,
    ) -> ExecResult<Vec<Value>> {
        let mut args = Vec::with_capacity(rest.len() + 1);
        for arg in rest {
            args.push(self.operand(arg, command, dot)?);
        }
        args.extend(last);
        Ok(args)
    }

    /// `and` and `or` evaluate their arguments only as far as needed.
    fn logical(
        &mut self,
        name: &str,
        rest: &[Operand],
        command: &Command,
        dot: &Value,
        last: Option<Value>,
    ) -> ExecResult<Value> {
        if rest.is_empty() && last.is_none() {
            return Err(self.error(
                command.pos,
                &command.text,
                format!("wrong number of args for {name}: want at least 1 got 0"),
            ));
        }
        let mut value = Value::Nil;
        for arg in rest {
            value = self.operand(arg, command, dot)?;
            if value.truthy() == (name == "or") {
                return Ok(value);
            }
        }
        if let Some(last) = last {
            value = last;
        }
        Ok(value)
    }

    fn operand(&mut self, operand: &Operand, command: &Command, dot: &Value) -> ExecResult<Value> {
        Ok(match operand {
            Operand::Dot => dot.clone(),
            Operand::Nil => Value::Nil,
            Operand::Bool(b) => Value::Bool(*b),
            Operand::Int(i) => Value::Int(*i),
            Operand::Float(f) => Value::Float(*f),
            Operand::Str(s) => Value::from(s.as_str()),
            Operand::Field(fields) => self.fields(dot.clone(), fields, Vec::new(), command)?,
            Operand::Variable(name, fields) => {
                let base = self.variable(name, command)?;
                self.fields(base, fields, Vec::new(), command)?
            }
            Operand::Chain(pipe, fields) => {
                let base = self.pipeline(pipe, dot, false)?;
                self.fields(base, fields, Vec::new(), command)?
            }
            Operand::Function(name) if name == "and" || name == "or" => {
                self.logical(name, &[], command, dot, None)?
            }
            Operand::Function(name) => self.call(name, Vec::new(), command)?,
        })
    }

    /// Walks `.a.b.c` from `base`; the last field gets `args` (a method call on objects).
    fn fields(
        &mut self,
        base: Value,
        fields: &[String],
        args: Vec<Value>,
        command: &Command,
    ) -> ExecResult<Value> {
        let mut value = base;
        for (i, name) in fields.iter().enumerate() {
            let last = i + 1 == fields.len();
            let call_args: &[Value] = if last { &args } else { &[] };
            value = match &value {
                Value::Map(map) => {
                    if !call_args.is_empty() {
                        return Err(self.error(
                            command.pos,
                            &command.text,
                            format!("{name} is not a method but has arguments"),
                        ));
                    }
                    let found = map.borrow().get(name).cloned();
                    found.unwrap_or_default()
                }
                Value::Object(object) => object.call(name, call_args).map_err(|m| {
                    self.error(
                        command.pos,
                        &command.text,
                        format!("error calling {name}: {m}"),
                    )
                })?,
                Value::Nil => {
                    return Err(self.error(
                        command.pos,
                        &command.text,
                        format!("nil pointer evaluating interface {{}}.{name}"),
                    ))
                }
                other => {
                    return Err(self.error(
                        command.pos,
                        &command.text,
                        format!("can't evaluate field {name} in type {}", other.type_name()),
                    ))
                }
            };
        }
        if fields.is_empty() && !args.is_empty() {
            return Err(self.error(
                command.pos,
                &command.text,
                "can't give argument to non-function".into(),
            ));
        }
        Ok(value)
    }
}
