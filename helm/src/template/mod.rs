//! A Go `text/template` engine: the lexer, the parser and the executor, with Go's
//! semantics (truthiness, `%v` printing, nil map keys, pipelines, variables, `define`,
//! `template`, `block`, `range`/`with`/`if` with `else`, `break` and `continue`).
//!
//! Published crates were checked first: `gtmpl` (0.7.1, last released 2021; no `block`,
//! `break`, `continue`, `html` or `js`) and `go-template` (0.0.3, 2022) are incomplete and
//! unmaintained, so the engine is our own.

pub mod ast;
pub mod builtins;
pub mod exec;
pub mod lex;
pub mod parse;
pub mod printf;
pub mod value;
pub mod world;

pub use exec::{Exec, ExecError, Func, Templates};
pub use parse::ParseError;
pub use value::Value;
pub use world::{Lookup, World};

#[cfg(test)]
mod tests;
