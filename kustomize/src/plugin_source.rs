//! Where a builtin plugin's configuration came from: the kustomization listing it, for
//! the files it names and the errors it reports.

use super::location::Location;
use super::patches::PatchSource;
use fleet_files::Error;

/// Where the config came from, for messages and for the files it names.
pub(crate) struct PluginSource<'a> {
    /// The kustomization listing the plugin (files it names are relative to it).
    pub location: Location<'a>,
    /// `transformers[1]`.
    pub field: String,
    /// The file the configuration is in.
    pub shown: String,
}

impl PluginSource<'_> {
    /// An error about the configuration's file.
    pub(crate) fn error(&self, message: impl Into<String>) -> Error {
        Error::in_file(&self.shown, message.into())
    }

    /// The configuration as the source of the patches it holds.
    pub(crate) fn patch_source(&self) -> PatchSource<'_> {
        PatchSource {
            location: self.location,
            field: self.field.clone(),
            schema: None,
        }
    }
}
