//! The renderer's error type: every error names the file, and where known the line and field.

use std::fmt;

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

/// An error in the renderer's input.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{location}: {message}")]
pub struct RenderError {
    /// Where the problem is.
    pub location: Location,
    /// What is wrong.
    pub message: String,
}

impl RenderError {
    /// An error about a whole file.
    pub fn in_file(file: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            location: Location {
                file: file.into(),
                line: None,
                field: None,
            },
            message: message.into(),
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
}

/// The renderer's result type.
pub type Result<T, E = RenderError> = std::result::Result<T, E>;
