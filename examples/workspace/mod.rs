//! The quickstart's tools, shared by the examples that serve or run them:
//! `list_files` and `read_file` over the directory the binding's
//! [`Workspace`] names, refusing paths that leave it.

use std::path::{Component, Path, PathBuf};

use agent_loop::Session;
use agent_loop::tool::{self, BoxError, CallContext, Handler, ToolInfo, ToolOutput, schema_of};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// Binding data: the directory the tools of one session may read.
pub struct Workspace {
    /// The directory.
    pub root: PathBuf,
}

/// Resolves `relative` inside `root`, refusing anything that leaves it:
/// absolute paths, `..`, and symlinks pointing outside.
fn resolve(root: &Path, relative: &str) -> Result<PathBuf, BoxError> {
    let path = Path::new(relative);
    if path
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(
            format!("`{relative}` leaves the workspace: use a relative path without `..`").into(),
        );
    }
    let resolved = root.join(path).canonicalize()?;
    if !resolved.starts_with(root) {
        return Err(format!("`{relative}` leaves the workspace").into());
    }
    Ok(resolved)
}

/// Arguments of `list_files`.
#[derive(Deserialize, JsonSchema)]
struct ListFilesArgs {
    /// Directory relative to the workspace root; the root when absent.
    #[serde(default)]
    directory: Option<String>,
}

/// Arguments of `read_file`.
#[derive(Deserialize, JsonSchema)]
struct ReadFileArgs {
    /// File path relative to the workspace root.
    path: String,
    /// Read at most this many bytes (default 2000).
    #[serde(default)]
    max_bytes: Option<usize>,
}

/// Lists the entries of a directory of the workspace.
struct ListFiles {
    root: PathBuf,
}

#[async_trait]
impl Handler for ListFiles {
    async fn invoke(
        &self,
        arguments: Value,
        _context: &CallContext,
    ) -> Result<ToolOutput, BoxError> {
        let arguments: ListFilesArgs = serde_json::from_value(arguments)?;
        let directory = resolve(&self.root, arguments.directory.as_deref().unwrap_or("."))?;
        let mut entries = tokio::fs::read_dir(&directory).await?;
        let mut names = Vec::new();
        while let Some(entry) = entries.next_entry().await? {
            let mut name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type().await?.is_dir() {
                name.push('/');
            }
            names.push(name);
        }
        names.sort();
        Ok(json!(names).into())
    }
}

/// Reads (the start of) a file of the workspace.
struct ReadFile {
    root: PathBuf,
}

#[async_trait]
impl Handler for ReadFile {
    async fn invoke(
        &self,
        arguments: Value,
        _context: &CallContext,
    ) -> Result<ToolOutput, BoxError> {
        let arguments: ReadFileArgs = serde_json::from_value(arguments)?;
        let path = resolve(&self.root, &arguments.path)?;
        let bytes = tokio::fs::read(&path).await?;
        let limit = arguments.max_bytes.unwrap_or(2000).min(bytes.len());
        Ok(ToolOutput::from(
            String::from_utf8_lossy(&bytes[..limit]).into_owned(),
        ))
    }
}

fn workspace_root(session: &Session) -> Result<PathBuf, BoxError> {
    Ok(session.get::<Workspace>()?.root.canonicalize()?)
}

/// `list_files`: the entries of a directory of the session's workspace.
pub fn list_files() -> tool::Definition {
    tool::Definition::new(
        ToolInfo::new(
            "list_files",
            "List the files and directories in a directory of the workspace.",
            schema_of::<ListFilesArgs>(),
        ),
        |session: Session| async move {
            Ok::<_, BoxError>(ListFiles {
                root: workspace_root(&session)?,
            })
        },
    )
}

/// `read_file`: the start of a text file of the session's workspace.
pub fn read_file() -> tool::Definition {
    tool::Definition::new(
        ToolInfo::new(
            "read_file",
            "Read the start of a text file of the workspace.",
            schema_of::<ReadFileArgs>(),
        ),
        |session: Session| async move {
            Ok::<_, BoxError>(ReadFile {
                root: workspace_root(&session)?,
            })
        },
    )
}
