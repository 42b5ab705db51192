//! The parsed form of a template.

/// Where a node starts in its template.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pos {
    /// 1-based line.
    pub line: usize,
    /// 0-based byte column, as Go's error messages count it.
    pub col: usize,
}

/// A template body node.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// Literal text.
    Text(String),
    /// `{{ pipeline }}`: prints the value unless the pipeline declares variables.
    Action(Pipeline),
    /// `{{ if }}`, `{{ else if }}`, `{{ else }}`.
    If(Branch),
    /// `{{ range }}`.
    Range(Branch),
    /// `{{ with }}`.
    With(Branch),
    /// `{{ template "name" pipeline }}`.
    Template {
        /// Where it stands.
        pos: Pos,
        /// The template called.
        name: String,
        /// Its data.
        pipe: Option<Pipeline>,
    },
    /// `{{ break }}`.
    Break(Pos),
    /// `{{ continue }}`.
    Continue(Pos),
}

/// A control structure: the pipeline, the body, and the else branch.
#[derive(Debug, Clone, PartialEq)]
pub struct Branch {
    /// The condition or the ranged value.
    pub pipe: Pipeline,
    /// Run when the pipeline is true (or for each element).
    pub body: Vec<Node>,
    /// Run otherwise.
    pub otherwise: Vec<Node>,
}

/// `$x := cmd | cmd arg`.
#[derive(Debug, Clone, PartialEq)]
pub struct Pipeline {
    /// Where it starts.
    pub pos: Pos,
    /// The source text, for error messages (`at <.Values.x>`), shared by the commands.
    pub text: std::sync::Arc<str>,
    /// Declared or assigned variables.
    pub vars: Vec<String>,
    /// `=` rather than `:=`.
    pub assign: bool,
    /// The commands, each fed the previous one's result as its last argument.
    pub commands: Vec<Command>,
}

/// One command of a pipeline: a function or method with arguments, or a single operand.
#[derive(Debug, Clone, PartialEq)]
pub struct Command {
    /// Where it starts.
    pub pos: Pos,
    /// Its text as Go prints the node (`include "x" .`), for error messages.
    pub text: std::sync::Arc<str>,
    /// The operands; the first names what is called.
    pub args: Vec<Arg>,
}

/// An operand where it stands: Go's node position (for `.a.b` that of `.b`, as Go's
/// parser records a field chain) and its text as Go prints the node.
#[derive(Debug, Clone, PartialEq)]
pub struct Arg {
    /// Where Go says the node is.
    pub pos: Pos,
    /// The node as Go prints it.
    pub text: std::sync::Arc<str>,
    /// What it is.
    pub operand: Operand,
}

/// An operand.
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    /// `.`
    Dot,
    /// `nil`
    Nil,
    /// `true` or `false`
    Bool(bool),
    /// An integer constant.
    Int(i64),
    /// A floating-point constant.
    Float(f64),
    /// A string constant.
    Str(String),
    /// `.A.B` from dot.
    Field(Vec<String>),
    /// `$x.A.B` (`$` alone is the root).
    Variable(String, Vec<String>),
    /// A function name.
    Function(String),
    /// `(pipeline).A.B`.
    Chain(Box<Pipeline>, Vec<String>),
}
