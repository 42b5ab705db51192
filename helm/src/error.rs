//! The error of every fallible call of the engine: Helm's message, what failed, where,
//! and the typed cause underneath.

use std::error::Error as StdError;

/// The stage of loading or rendering a chart that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Reading the chart: an unreadable file or archive, a Chart.yaml or values file that
    /// does not parse, a chart larger than the limit.
    Chart,
    /// Chart.yaml names dependencies that are not in `charts/`.
    MissingDependencies,
    /// A values file or `--set` argument of [`ValueOptions`](crate::ValueOptions) does
    /// not read.
    UserValues,
    /// The values could not be computed (a subchart's section is not a map).
    Values,
    /// The values break a values.schema.json of the chart or its subcharts.
    Schema,
    /// The [`Options`](crate::Options) are not valid (a Kubernetes version that does not
    /// parse).
    Options,
    /// The chart's `kubeVersion` range excludes the Kubernetes version rendered for.
    KubeVersion,
    /// A template does not parse.
    Parse,
    /// A template failed while it ran (`fail`, `required`, a function's error).
    Execute,
    /// The rendered output is not a set of manifests Helm accepts.
    Manifest,
}

/// An error loading or rendering a chart. It displays as Helm prints the same failure;
/// [`source`](std::error::Error::source) gives the typed cause where there is one (an
/// [`std::io::Error`], a template's [`ParseError`](crate::template::ParseError) or
/// [`ExecError`](crate::template::ExecError)).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Error {
    kind: ErrorKind,
    file: String,
    line: Option<usize>,
    message: String,
    #[source]
    cause: Option<Box<dyn StdError + Send + Sync>>,
}

impl Error {
    pub(crate) fn new(
        kind: ErrorKind,
        file: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            kind,
            file: file.into(),
            line: None,
            message: message.into(),
            cause: None,
        }
    }

    pub(crate) fn at_line(mut self, line: usize) -> Self {
        self.line = Some(line);
        self
    }

    pub(crate) fn caused_by(mut self, cause: impl StdError + Send + Sync + 'static) -> Self {
        self.cause = Some(Box::new(cause));
        self
    }

    /// What failed.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The file it failed in: a path inside the chart (`mychart/templates/web.yaml`), or
    /// the chart itself.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The 1-based line in [`file`](Self::file), when known.
    pub fn line(&self) -> Option<usize> {
        self.line
    }

    /// Helm's message, as it prints it after `Error: `.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// The result of the engine's fallible calls.
pub type Result<T, E = Error> = std::result::Result<T, E>;
