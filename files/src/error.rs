//! The error of reading a repository's files: it names the file, and where known the line
//! and field, and keeps its cause.

use std::fmt;
use std::sync::Arc;

/// Where in the input an error was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// File path, relative to the repository root.
    pub file: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// Dotted field path, when known.
    pub field: Option<String>,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": field `{field}`")?;
        }
        Ok(())
    }
}

/// An error in a repository's files: what is wrong and where.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{location}: {message}")]
pub struct Error {
    /// Where the problem is.
    pub location: Location,
    /// What is wrong.
    pub message: String,
    /// What it came from (a YAML parser's or an engine's error), when there is one.
    #[source]
    pub cause: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl Error {
    /// An error about a whole file.
    pub fn in_file(file: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            location: Location {
                file: file.into(),
                line: None,
                field: None,
            },
            message: message.into(),
            cause: None,
        }
    }

    /// An error about one field of a file.
    pub fn in_field(
        file: impl Into<String>,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self::in_file(file, message).with_field(field)
    }

    /// Adds the field the error is about.
    pub fn with_field(mut self, field: impl Into<String>) -> Self {
        self.location.field = Some(field.into());
        self
    }

    /// Adds the line the error is on.
    pub fn with_line(mut self, line: Option<usize>) -> Self {
        self.location.line = line;
        self
    }

    /// Adds what the error came from.
    pub fn with_cause(mut self, cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.cause = Some(Arc::new(cause));
        self
    }
}

/// The result of reading a repository's files.
pub type Result<T, E = Error> = std::result::Result<T, E>;
