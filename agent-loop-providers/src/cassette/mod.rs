//! Cassettes: a model's real traffic recorded once ([`Recorder`]) and
//! served again offline ([`Replayer`]), compared at the level of what a
//! request means (the conversation, the tools, the mode, the output), not
//! its bytes, so a mismatch names the first difference as a path.
//!
//! A [`Cassette`] is a JSON file: its format version, then one
//! [`Exchange`] per model request, in order: what the model was
//! ([`ModelDescription`]: name and format), the request as the crate sent
//! it ([`ExchangeRequest`]), the [`ModelResponse`] or the error the request
//! failed with ([`Answer`]), and a streamed response's text and reasoning
//! deltas in order with their times since the request began ([`Delta`]). Nothing else reaches the file: a model is
//! described by its name and format, never its endpoint or key.
//!
//! Saving is atomic: the cassette is written to a temporary file in the
//! same directory, which is then renamed over the old one, so a crash
//! mid-write leaves the previous cassette whole.
//!
//! ```
//! use agent_loop_providers::cassette::{Cassette, Recorder, Replayer, Strictness};
//! use agent_loop_core::conversation::{Message, ModelResponse};
//! use agent_loop_core::turn::{Model, ModelRequest, ScriptedModel};
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let path = std::env::temp_dir().join(format!("doc-{}.json", agent_loop_core::SessionId::new()));
//! // Record: the real model (a scripted one here) answers, the exchange is kept.
//! let recorder = Recorder::new(ScriptedModel::new([ModelResponse::answer("Hi.")]), &path);
//! let conversation = [Message::user("Hello")];
//! recorder.respond(ModelRequest::new(&conversation)).await?;
//! recorder.save()?;
//!
//! // Replay offline: another request is refused, naming where it differs;
//! // the same request gets the recorded answer.
//! let replayer = Replayer::new(Cassette::load(&path)?, Strictness::Exact);
//! let other = [Message::user("Hellp")];
//! let error = replayer.respond(ModelRequest::new(&other)).await.unwrap_err();
//! assert!(error.to_string().contains(r#"conversation[0].content[0].text: recorded "Hello", sent "Hellp""#));
//! let response = replayer.respond(ModelRequest::new(&conversation)).await?;
//! assert_eq!(response.message.text(), "Hi.");
//! # std::fs::remove_file(&path)?;
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! # Decisions
//!
#![doc = include_str!("../../docs/cassettes.md")]

mod difference;
mod recorder;
mod replayer;

use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use agent_loop_core::conversation::{Message, ModelResponse, WireFormat};
use agent_loop_core::tool::ToolInfo;
use agent_loop_core::turn::{ModelDescription, ModelError, ModelErrorKind, ModelRequest};

pub use difference::Difference;
pub use recorder::Recorder;
pub use replayer::{ReplayMismatch, Replayer, Strictness};

/// The format version this crate writes and reads.
pub const CASSETTE_VERSION: u32 = 1;

/// A recorded model's exchanges, in request order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Cassette {
    /// [`CASSETTE_VERSION`] when written by this crate.
    pub version: u32,
    /// One per model request, in order.
    pub exchanges: Vec<Exchange>,
}

/// One model request and what the model answered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Exchange {
    /// The model that answered.
    #[serde(default)]
    pub model: ModelDescription,
    /// The request as the crate sent it.
    pub request: ExchangeRequest,
    /// What the model answered: its response, or the error it failed with
    /// (as JSON, the key `response` or the key `error`).
    #[serde(flatten)]
    pub answer: Answer,
    /// A streamed response's deltas, in order, those that came before a
    /// failure included; empty for one that was not streamed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deltas: Vec<Delta>,
}

/// What a model answered a recorded request: an [`Exchange`]'s outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Answer {
    /// The model's response.
    Response(ModelResponse),
    /// The request failed: a refusal the turn recovered from (a full
    /// context window it compacted, a tool call the provider could not
    /// read) is replayed as it came, so the turn recovers again.
    Error(RecordedFailure),
}

/// A failed request as a cassette keeps it: what a turn decides by
/// ([`ModelError::exceeds_context_window`], [`ModelError::is_failed_tool_call`])
/// and what its message shows. Not kept: the request id, the attempts and
/// the waits a server asked for, which belong to the live request; and the
/// message of an authentication refusal (HTTP 401 or 403), where providers
/// quote part of the key (OpenAI's "Incorrect API key provided: sk-…").
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RecordedFailure {
    /// [`ModelError::format`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<WireFormat>,
    /// [`ModelError::kind`], as `{"kind": "http", "status": 400}`.
    #[serde(flatten)]
    pub kind: ModelErrorKind,
    /// [`ModelError::error_type`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    /// [`ModelError::message`] (none for HTTP 401 and 403).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// [`ModelError::code`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// [`ModelError::failed_generation`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_generation: Option<String>,
    /// The text of each cause in the error's `source()` chain, outermost
    /// first (a model of your own fails with a source and no message).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<String>,
}

impl RecordedFailure {
    /// `error` as a cassette keeps it.
    pub fn of(error: &ModelError) -> Self {
        let authentication = matches!(error.kind, ModelErrorKind::Http { status: 401 | 403 });
        let causes: Vec<String> =
            std::iter::successors(std::error::Error::source(error), |cause| cause.source())
                .map(ToString::to_string)
                .collect();
        Self {
            format: error.format,
            kind: error.kind.clone(),
            error_type: error.error_type.clone(),
            message: error.message.clone().filter(|_| !authentication),
            code: error.code.clone(),
            failed_generation: error.failed_generation.clone(),
            causes: if authentication { Vec::new() } else { causes },
        }
    }

    /// The [`ModelError`] a replay returns: the recorded fields, the causes
    /// as a chain of errors of their text (so `Display` and `source()`
    /// show what the live error showed), no request id, `attempts` 0.
    pub fn to_error(&self) -> ModelError {
        let mut error = ModelError::new(self.kind.clone());
        error.format = self.format;
        error.error_type.clone_from(&self.error_type);
        error.message.clone_from(&self.message);
        error.code.clone_from(&self.code);
        error.failed_generation.clone_from(&self.failed_generation);
        let chain = self
            .causes
            .iter()
            .rev()
            .fold(None, |inner: Option<RecordedCause>, text| {
                Some(RecordedCause {
                    text: text.clone(),
                    source: inner.map(Box::new),
                })
            });
        match chain {
            Some(cause) => error.with_source(cause),
            None => error,
        }
    }
}

/// One recorded cause of a failure, with the causes below it.
#[derive(Debug, thiserror::Error)]
#[error("{text}")]
struct RecordedCause {
    text: String,
    #[source]
    source: Option<Box<RecordedCause>>,
}

/// A [`ModelRequest`] as data: what a replay compares.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ExchangeRequest {
    /// The conversation, oldest first.
    pub conversation: Vec<Message>,
    /// The mode's instructions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// The tools offered, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolInfo>,
    /// The mode's name; `None` for the base mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// The native output asked for: its name and JSON Schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<RecordedOutput>,
}

/// A native output as a request asked for it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RecordedOutput {
    /// The output's name.
    pub name: String,
    /// Its JSON Schema.
    pub schema: serde_json::Value,
}

impl ExchangeRequest {
    /// `request` as data (its tools' infos copied).
    pub fn of(request: &ModelRequest<'_>) -> Self {
        Self {
            conversation: request.conversation.to_vec(),
            instructions: request.instructions.map(str::to_owned),
            tools: request.tools.iter().cloned().collect(),
            mode: request.mode.map(str::to_owned),
            output: request.output.map(|output| RecordedOutput {
                name: output.name().to_owned(),
                schema: output.schema().clone(),
            }),
        }
    }
}

/// One piece of a streamed response, as the model sent it to the turn's
/// events.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Delta {
    /// Milliseconds since the request began.
    pub after_ms: u64,
    /// What arrived.
    #[serde(flatten)]
    pub piece: DeltaPiece,
}

/// What a [`Delta`] holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum DeltaPiece {
    /// Text of the answer ([`TurnEvent::TextDelta`](agent_loop_core::turn::TurnEvent::TextDelta)).
    Text {
        /// The text.
        text: String,
    },
    /// Reasoning ([`TurnEvent::ReasoningDelta`](agent_loop_core::turn::TurnEvent::ReasoningDelta)).
    Reasoning {
        /// The text.
        text: String,
    },
}

/// A cassette that could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CassetteError {
    /// The file could not be read, or written and renamed into place.
    #[error("cassette {path}: {operation} failed")]
    Io {
        /// The cassette's path, as given.
        path: String,
        /// `read`, `write` or `rename`.
        operation: &'static str,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a cassette: not JSON of its shape, or of another
    /// format version.
    #[error("cassette {path} cannot be read: {reason}")]
    Format {
        /// The cassette's path, as given.
        path: String,
        /// Where and why (serde's path and message, or the version).
        reason: String,
    },
}

impl Default for Cassette {
    /// An empty cassette of this crate's format ([`Cassette::new`]).
    fn default() -> Self {
        Self::new()
    }
}

impl Cassette {
    /// An empty cassette of this crate's format.
    pub fn new() -> Self {
        Self {
            version: CASSETTE_VERSION,
            exchanges: Vec::new(),
        }
    }

    /// Reads the cassette at `path`.
    ///
    /// Errors: [`CassetteError::Io`] when it cannot be read;
    /// [`CassetteError::Format`] when it is not a cassette of version
    /// [`CASSETTE_VERSION`] (the reason names the JSON path).
    pub fn load(path: impl AsRef<Path>) -> Result<Self, CassetteError> {
        let path = path.as_ref();
        let shown = path.display().to_string();
        let text = std::fs::read(path).map_err(|source| CassetteError::Io {
            path: shown.clone(),
            operation: "read",
            source,
        })?;
        let mut deserializer = serde_json::Deserializer::from_slice(&text);
        let cassette: Self =
            serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
                CassetteError::Format {
                    path: shown.clone(),
                    reason: format!("{}: {}", error.path(), error.inner()),
                }
            })?;
        if cassette.version != CASSETTE_VERSION {
            return Err(CassetteError::Format {
                path: shown,
                reason: format!(
                    "format version {}, this crate reads {CASSETTE_VERSION}",
                    cassette.version
                ),
            });
        }
        Ok(cassette)
    }

    /// Writes the cassette to `path`, atomically: to a temporary file
    /// beside it, then renamed over it. A failure (or a crash) leaves what
    /// was at `path` as it was.
    ///
    /// Errors: [`CassetteError::Io`] when the temporary file cannot be made
    /// or written, or not renamed into place.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), CassetteError> {
        write_atomically(path.as_ref(), |writer| {
            serde_json::to_writer_pretty(&mut *writer, self)?;
            writer.write_all(b"\n")
        })
    }
}

/// Writes what `write` writes to a temporary file beside `path`, then
/// renames it over `path`. When `write` fails or panics, the temporary
/// file is removed (its drop) and `path` is as it was.
fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), CassetteError> {
    let shown = || path.display().to_string();
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let io = |operation| {
        move |source| CassetteError::Io {
            path: shown(),
            operation,
            source,
        }
    };
    // Named so that one left by a killed process says what it is.
    let mut file = tempfile::Builder::new()
        .prefix(".cassette-")
        .suffix(".tmp")
        .tempfile_in(directory)
        .map_err(io("write"))?;
    {
        let mut writer = std::io::BufWriter::new(file.as_file_mut());
        write(&mut writer).map_err(io("write"))?;
        writer.flush().map_err(io("write"))?;
    }
    file.as_file().sync_all().map_err(io("write"))?;
    file.persist(path)
        .map_err(|error| error.error)
        .map_err(io("rename"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The files in `directory`, by name.
    fn files(directory: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(directory)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_writer_that_panics_midway_leaves_the_old_cassette_whole_and_no_temporary_file() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("turn.json");
        let mut old = Cassette::new();
        old.exchanges.push(Exchange {
            model: ModelDescription::default(),
            request: ExchangeRequest {
                conversation: vec![Message::user("Hello")],
                instructions: None,
                tools: Vec::new(),
                mode: None,
                output: None,
            },
            answer: Answer::Response(ModelResponse::answer("Hi.")),
            deltas: Vec::new(),
        });
        old.save(&path).unwrap();
        let before = std::fs::read(&path).unwrap();

        let crashed = std::panic::catch_unwind(|| {
            write_atomically(&path, |writer| {
                writer.write_all(br#"{"version": 1, "exchanges": [{"#)?;
                writer.flush()?;
                panic!("the writer crashed mid-write");
            })
        });
        assert!(crashed.is_err());
        assert_eq!(std::fs::read(&path).unwrap(), before);
        assert_eq!(Cassette::load(&path).unwrap(), old);
        assert_eq!(
            files(directory.path()),
            ["turn.json"],
            "no temporary file left"
        );

        // A failing writer: the same.
        let failed = write_atomically(&path, |writer| {
            writer.write_all(b"{")?;
            Err(std::io::Error::other("disk full"))
        });
        assert!(matches!(
            failed,
            Err(CassetteError::Io {
                operation: "write",
                ..
            })
        ));
        assert_eq!(Cassette::load(&path).unwrap(), old);
        assert_eq!(files(directory.path()), ["turn.json"]);
    }

    #[test]
    fn a_recorded_failure_replays_its_line_and_causes_but_no_authentication_message() {
        #[derive(Debug, thiserror::Error)]
        #[error("the index is locked")]
        struct Locked(#[source] std::io::Error);
        let own = ModelError::other(Locked(std::io::Error::other("disk full")));
        let recorded = RecordedFailure::of(&own);
        assert_eq!(recorded.message, None);
        assert_eq!(recorded.causes, ["the index is locked", "disk full"]);
        let replayed = recorded.to_error();
        assert_eq!(replayed.to_string(), own.to_string());
        let causes = |error: &ModelError| -> Vec<String> {
            std::iter::successors(std::error::Error::source(error), |cause| cause.source())
                .map(ToString::to_string)
                .collect()
        };
        assert_eq!(causes(&replayed), causes(&own));
        assert_eq!(
            RecordedFailure::of(&replayed),
            recorded,
            "a replayed failure records as itself"
        );

        let mut refused = ModelError::new(ModelErrorKind::Http { status: 401 })
            .with_message("Incorrect API key provided: sk-proj-****abcd");
        refused.code = Some("invalid_api_key".into());
        let recorded = RecordedFailure::of(&refused);
        assert_eq!(recorded.message, None, "providers quote the key in it");
        assert_eq!(recorded.code.as_deref(), Some("invalid_api_key"));
        assert!(!serde_json::to_string(&recorded).unwrap().contains("sk-"));
    }

    #[test]
    fn a_file_that_is_no_cassette_is_a_format_error_naming_the_path() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("bad.json");
        std::fs::write(&path, r#"{"version": 1, "exchanges": [{"request": 3}]}"#).unwrap();
        let Err(CassetteError::Format { reason, .. }) = Cassette::load(&path) else {
            panic!("not a format error");
        };
        assert!(
            reason.starts_with("exchanges[0].request: invalid type: integer `3`"),
            "{reason}"
        );
        std::fs::write(&path, r#"{"version": 2, "exchanges": []}"#).unwrap();
        let Err(CassetteError::Format { reason, .. }) = Cassette::load(&path) else {
            panic!("not a format error");
        };
        assert_eq!(reason, "format version 2, this crate reads 1");
        // A response that is no response: the exchange is named (the key is
        // read through serde's flatten, which keeps no deeper path).
        std::fs::write(
            &path,
            r#"{"version": 1, "exchanges": [{"request": {"conversation": []}, "response": 3}]}"#,
        )
        .unwrap();
        let Err(CassetteError::Format { reason, .. }) = Cassette::load(&path) else {
            panic!("not a format error");
        };
        assert!(
            reason.starts_with(
                "exchanges[0]: invalid type: integer `3`, expected struct ModelResponse"
            ),
            "{reason}"
        );
        // Neither a response nor an error.
        std::fs::write(
            &path,
            r#"{"version": 1, "exchanges": [{"request": {"conversation": []}}]}"#,
        )
        .unwrap();
        let Err(CassetteError::Format { reason, .. }) = Cassette::load(&path) else {
            panic!("not a format error");
        };
        assert!(
            reason.starts_with("exchanges[0]: no variant of enum Answer found"),
            "{reason}"
        );
    }
}
