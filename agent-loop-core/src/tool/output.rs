//! [`ToolOutput`]: what a tool returns, before it becomes a tool result.

use serde_json::Value;

use crate::conversation::{ContentPart, ImagePart};
use crate::support::json;

/// What a tool (and the middleware chain around it) returns: JSON, or
/// content parts (text and images) when the result is more than text.
///
/// Most tools return JSON and never name this type: `Ok(json!(..).into())`
/// in a [`Tool`](crate::tool::Tool), and any `Into<ToolOutput>` (a
/// [`Value`], a `String`, a `&str`) from a
/// [`from_fn`](crate::tool::Definition::from_fn) handler. A tool that
/// returns an image (a screenshot tool, an MCP server) returns
/// [`ToolOutput::Content`].
///
/// How it becomes the model-visible [`ToolResult`](crate::conversation::ToolResult):
///
/// - `Json`: one text part; a JSON string is its text, any other value
///   compact JSON.
/// - `Content`: the parts in order. When the mode's `result_bytes` is set
///   and the text parts together are longer, they are replaced by one text
///   part, cut to the limit, where the first text part was; images and
///   other parts are kept as they are (the limit counts text bytes only).
///   No parts at all become one empty text part, since a result must say
///   something.
///
/// ```
/// use agent_loop_core::conversation::{ContentPart, ImagePart};
/// use agent_loop_core::tool::ToolOutput;
/// use serde_json::json;
///
/// let plain: ToolOutput = json!({"sum": 5}).into();
/// assert_eq!(plain.as_json(), Some(&json!({"sum": 5})));
///
/// let screenshot = ToolOutput::Content(vec![
///     ContentPart::text("the login page"),
///     ContentPart::Image(ImagePart::base64("image/png", "iVBORw0KGgo=")),
/// ]);
/// assert_eq!(screenshot.text(), "the login page");
/// assert_eq!(screenshot.images().count(), 1);
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ToolOutput {
    /// A JSON value: a string is shown to the model as its text, any other
    /// value as compact JSON.
    Json(Value),
    /// Content parts, shown as they are: [`ContentPart::Text`],
    /// [`ContentPart::Image`] (and [`ContentPart::Provider`] blocks for
    /// their own format). Parts a tool result cannot carry (reasoning, tool
    /// calls) are left out by the exporters.
    Content(Vec<ContentPart>),
}

impl ToolOutput {
    /// The JSON value, for a `Json` output; `None` for content parts.
    pub fn as_json(&self) -> Option<&Value> {
        match self {
            Self::Json(value) => Some(value),
            Self::Content(_) => None,
        }
    }

    /// The output as JSON: the value of a `Json` output, or the text of
    /// content parts (every text part concatenated, images left out) as a
    /// JSON string.
    pub fn into_json(self) -> Value {
        match self {
            Self::Json(value) => value,
            Self::Content(parts) => Value::String(crate::conversation::text_of(&parts)),
        }
    }

    /// The text the model reads: a JSON string's text, any other JSON value
    /// as compact JSON, or every text part concatenated.
    ///
    /// Serialising recurses once per level of the value, as serde_json
    /// does: a turn refuses an output nested deeper than 128 levels
    /// ([`OutputTooDeep`](crate::bind::ToolCallErrorKind::OutputTooDeep))
    /// before it asks for its text.
    pub fn text(&self) -> String {
        match self {
            Self::Json(Value::String(text)) => text.clone(),
            Self::Json(value) => value.to_string(),
            Self::Content(parts) => crate::conversation::text_of(parts),
        }
    }

    /// `self` when every JSON value it holds (a `Json` value, the extras
    /// and provider blocks of its parts) nests at most 128 levels;
    /// otherwise `None`, and the output is dropped without recursion.
    pub(crate) fn within_depth(self) -> Option<Self> {
        let too_deep = match &self {
            Self::Json(value) => json::too_deep(value),
            Self::Content(parts) => parts
                .iter()
                .flat_map(ContentPart::json_values)
                .any(json::too_deep),
        };
        if !too_deep {
            return Some(self);
        }
        match self {
            Self::Json(value) => json::drop_deep(value),
            Self::Content(parts) => parts
                .into_iter()
                .flat_map(ContentPart::into_json_values)
                .for_each(json::drop_deep),
        }
        None
    }

    /// The image parts, in order (none for a `Json` output).
    pub fn images(&self) -> impl Iterator<Item = &ImagePart> {
        let parts = match self {
            Self::Json(_) => &[][..],
            Self::Content(parts) => parts.as_slice(),
        };
        parts.iter().filter_map(|part| match part {
            ContentPart::Image(image) => Some(image),
            _ => None,
        })
    }
}

impl From<Value> for ToolOutput {
    fn from(value: Value) -> Self {
        Self::Json(value)
    }
}

impl From<String> for ToolOutput {
    fn from(text: String) -> Self {
        Self::Json(Value::String(text))
    }
}

impl From<&str> for ToolOutput {
    fn from(text: &str) -> Self {
        Self::Json(Value::String(text.to_owned()))
    }
}

impl From<Vec<ContentPart>> for ToolOutput {
    fn from(parts: Vec<ContentPart>) -> Self {
        Self::Content(parts)
    }
}

/// A `Json` output equals the value it holds, so a test can write
/// `assert_eq!(bound.invoke("add", arguments).await?, json!(5))`.
impl PartialEq<Value> for ToolOutput {
    fn eq(&self, other: &Value) -> bool {
        self.as_json() == Some(other)
    }
}
