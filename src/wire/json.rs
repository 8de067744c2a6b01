//! A cursor over a `serde_json::Value` that knows its JSON path, so every
//! parse error names the exact field (`messages[3].tool_calls[0].id`) and a
//! typed kind, which serde's derived errors cannot give.

use serde_json::{Map, Value};

use super::error::{WireError, WireErrorKind, WireFormat};
use crate::json::type_name;
use crate::tool::ToolInfo;

/// One value inside a payload, with the path that leads to it.
#[derive(Clone, Debug)]
pub(super) struct Node<'a> {
    format: WireFormat,
    path: String,
    /// The field name this value sits under (an array element inherits its
    /// array's name); used in `WrongType` errors.
    name: &'static str,
    value: &'a Value,
}

impl<'a> Node<'a> {
    /// The root of a payload; `name` starts every error path.
    pub(super) fn root(format: WireFormat, name: &'static str, value: &'a Value) -> Self {
        Self {
            format,
            path: name.to_owned(),
            name,
            value,
        }
    }

    /// An error located at this value.
    pub(super) fn error(&self, kind: WireErrorKind) -> WireError {
        WireError::new(self.format, self.path.clone(), kind)
    }

    pub(super) fn value(&self) -> &'a Value {
        self.value
    }

    fn wrong_type(&self, expected: &'static str) -> WireError {
        self.error(WireErrorKind::WrongType {
            field: self.name,
            expected,
            found: type_name(self.value),
        })
    }

    pub(super) fn object(&self) -> Result<&'a Map<String, Value>, WireError> {
        self.value
            .as_object()
            .ok_or_else(|| self.wrong_type("an object"))
    }

    /// A required field: absent is `MissingField`; `null` is kept and fails
    /// later as `WrongType` if a type is asked of it.
    pub(super) fn field(&self, name: &'static str) -> Result<Node<'a>, WireError> {
        self.optional_field_raw(name)?
            .ok_or_else(|| self.error(WireErrorKind::MissingField { field: name }))
    }

    /// An optional field: absent and `null` both mean "not given", as in the
    /// providers' references.
    pub(super) fn optional_field(&self, name: &'static str) -> Result<Option<Node<'a>>, WireError> {
        Ok(self
            .optional_field_raw(name)?
            .filter(|node| !node.value.is_null()))
    }

    fn optional_field_raw(&self, name: &'static str) -> Result<Option<Node<'a>>, WireError> {
        Ok(self.object()?.get(name).map(|value| Node {
            format: self.format,
            path: format!("{}.{name}", self.path),
            name,
            value,
        }))
    }

    pub(super) fn str(&self) -> Result<&'a str, WireError> {
        self.value
            .as_str()
            .ok_or_else(|| self.wrong_type("a string"))
    }

    pub(super) fn bool(&self) -> Result<bool, WireError> {
        self.value
            .as_bool()
            .ok_or_else(|| self.wrong_type("a boolean"))
    }

    /// The elements of an array, each with its `[index]` path.
    pub(super) fn items(&self) -> Result<Vec<Node<'a>>, WireError> {
        let array = self
            .value
            .as_array()
            .ok_or_else(|| self.wrong_type("an array"))?;
        Ok(array
            .iter()
            .enumerate()
            .map(|(index, value)| Node {
                format: self.format,
                path: format!("{}[{index}]", self.path),
                name: self.name,
                value,
            })
            .collect())
    }

    /// The value of a required string field, e.g. `role` or `id`.
    pub(super) fn str_field(&self, name: &'static str) -> Result<&'a str, WireError> {
        self.field(name)?.str()
    }

    /// A tool declared as `{"name", "description"?, <schema_field>}`, the
    /// shape Anthropic (`input_schema`) and MCP (`inputSchema`) share. A
    /// missing or `null` description becomes `""`.
    pub(super) fn tool_info(&self, schema_field: &'static str) -> Result<ToolInfo, WireError> {
        Ok(ToolInfo::new(
            self.str_field("name")?,
            self.str_field_or_empty("description")?,
            self.field(schema_field)?.value().clone(),
        ))
    }

    /// The value of an optional string field, `""` when absent or `null`
    /// (as for a tool's `description`, optional in every format).
    pub(super) fn str_field_or_empty(&self, name: &'static str) -> Result<&'a str, WireError> {
        match self.optional_field(name)? {
            Some(field) => field.str(),
            None => Ok(""),
        }
    }

    /// Text content as both providers accept it: a string, or an array of
    /// `{"type": "text", "text": ...}` parts. Parts are concatenated as they
    /// are, with no separator: providers split one text into several parts
    /// (Anthropic does so around citations), so a separator would change it.
    pub(super) fn text(&self) -> Result<String, WireError> {
        if let Some(text) = self.value.as_str() {
            return Ok(text.to_owned());
        }
        if !self.value.is_array() {
            return Err(self.wrong_type("a string or an array of text parts"));
        }
        let mut text = String::new();
        for part in self.items()? {
            part.expect_type("text")?;
            text.push_str(part.str_field("text")?);
        }
        Ok(text)
    }

    /// The required `type` field, which must equal `expected`.
    pub(super) fn expect_type(&self, expected: &str) -> Result<(), WireError> {
        let found = self.str_field("type")?;
        if found == expected {
            Ok(())
        } else {
            Err(self.unknown_type(found))
        }
    }

    pub(super) fn unknown_type(&self, found: &str) -> WireError {
        self.error(WireErrorKind::UnknownType {
            found: found.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn root(value: &Value) -> Node<'_> {
        Node::root(WireFormat::OpenAiChat, "messages", value)
    }

    #[test]
    fn paths_name_array_index_and_field() {
        let value = json!([{ "role": "user" }, { "tool_calls": [{ "id": 7 }] }]);
        let items = root(&value).items().unwrap();
        let call = &items[1].field("tool_calls").unwrap().items().unwrap()[0];
        let error = call.str_field("id").unwrap_err();
        assert_eq!(error.path(), "messages[1].tool_calls[0].id");
        assert_eq!(
            error.kind(),
            &WireErrorKind::WrongType {
                field: "id",
                expected: "a string",
                found: "a number"
            }
        );
    }

    #[test]
    fn missing_field_is_reported_at_the_parent() {
        let value = json!({ "name": "x" });
        let error = root(&value).field("id").unwrap_err();
        assert_eq!(error.path(), "messages");
        assert_eq!(error.kind(), &WireErrorKind::MissingField { field: "id" });
    }

    #[test]
    fn null_optional_field_counts_as_absent() {
        let value = json!({ "content": null });
        assert!(root(&value).optional_field("content").unwrap().is_none());
    }

    #[test]
    fn text_parts_are_concatenated_without_separator() {
        let value = json!([
            { "type": "text", "text": "The grass is " },
            { "type": "text", "text": "green." }
        ]);
        assert_eq!(root(&value).text().unwrap(), "The grass is green.");
    }

    #[test]
    fn non_text_part_is_an_unknown_type() {
        let value = json!([{ "type": "image_url", "image_url": { "url": "x" } }]);
        let error = root(&value).text().unwrap_err();
        assert_eq!(error.path(), "messages[0]");
        assert_eq!(
            error.kind(),
            &WireErrorKind::UnknownType {
                found: "image_url".into()
            }
        );
    }
}
