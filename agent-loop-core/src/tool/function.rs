//! Tools from functions: a [`ToolInfo`] plus an async handler, or a typed
//! handler whose arguments type gives the schema.

use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::tool::checked::Declared;
use crate::tool::definition::Build;
use crate::tool::{BoxError, CallContext, Definition, Handler, ToolInfo, ToolOutput};

impl Definition {
    /// A definition of one stateless tool from data: its [`ToolInfo`] (from
    /// code or from JSON) and an async handler taking the JSON arguments and
    /// the call's [`CallContext`]. The handler returns anything that
    /// converts into a [`ToolOutput`]: a JSON [`Value`], a `String`, or
    /// content parts (text and images).
    ///
    /// The definition and the tool are both named `info.name`. Every binding
    /// builds a fresh tool that shares the handler and the info. The schema
    /// is checked and compiled here, once, and the compiled validator is
    /// shared by every binding (a bad schema fails every bind alike, with
    /// [`InvalidToolInfo`](crate::bind::BindErrorKind::InvalidToolInfo)). A `parameters` or extras value nested deeper than 128
    /// levels is dropped here, without recursion, and every bind refuses
    /// the definition with
    /// [`InvalidToolInfo`](crate::bind::BindErrorKind::InvalidToolInfo).
    ///
    /// ```
    /// use agent_loop_core::tool::{self, ToolInfo};
    /// use serde_json::{json, Value};
    ///
    /// let info: ToolInfo = serde_json::from_value(json!({
    ///     "name": "add",
    ///     "description": "Adds two integers.",
    ///     "parameters": {
    ///         "type": "object",
    ///         "properties": { "a": { "type": "integer" }, "b": { "type": "integer" } },
    ///         "required": ["a", "b"]
    ///     }
    /// }))
    /// .unwrap();
    /// let add = tool::Definition::from_fn(info, |arguments: Value, _context| async move {
    ///     let sum = arguments["a"].as_i64().unwrap_or(0) + arguments["b"].as_i64().unwrap_or(0);
    ///     Ok::<_, tool::BoxError>(json!(sum))
    /// });
    /// ```
    pub fn from_fn<H, Fut, O, E>(info: ToolInfo, handler: H) -> Self
    where
        H: Fn(Value, CallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, E>> + Send + 'static,
        O: Into<ToolOutput>,
        E: Into<BoxError>,
    {
        let handler = Arc::new(handler);
        // The tool's info is fixed here: every binding's tool shares it, and
        // bind recognises it by address, so its schema is compiled once.
        Definition::declared(
            Declared::new(info),
            Build::Instant(Box::new(move || Arc::new(FnHandler(Arc::clone(&handler))))),
        )
    }

    /// A definition of one stateless tool whose arguments are a Rust type:
    /// the JSON Schema comes from its `schemars::JsonSchema` derive and the
    /// arguments are parsed into it before the handler runs. The output is
    /// serialised to JSON.
    ///
    /// The generated schema drops the top-level `$schema` and `title`
    /// (noise to a model). A parse failure reaches the model as an error
    /// result naming the serde error.
    ///
    /// ```
    /// use agent_loop_core::tool;
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    ///
    /// /// Arguments of `get_weather`.
    /// #[derive(Deserialize, JsonSchema)]
    /// struct GetWeather {
    ///     /// City name, e.g. "Paris".
    ///     city: String,
    /// }
    ///
    /// let weather = tool::Definition::typed_fn(
    ///     "get_weather",
    ///     "Current weather for a city.",
    ///     |arguments: GetWeather, _context| async move {
    ///         Ok::<_, tool::BoxError>(format!("sunny in {}", arguments.city))
    ///     },
    /// );
    /// assert_eq!(weather.tool_names(), ["get_weather"]);
    /// ```
    pub fn typed_fn<A, H, Fut, O, E>(
        name: impl Into<String>,
        description: impl Into<String>,
        handler: H,
    ) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        H: Fn(A, CallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, E>> + Send + 'static,
        O: Serialize,
        E: Into<BoxError>,
    {
        let info = ToolInfo::new(name, description, schema_of::<A>());
        let handler = Arc::new(handler);
        Definition::from_fn(info, move |arguments: Value, context| {
            let handler = Arc::clone(&handler);
            async move {
                let arguments: A = serde_json::from_value(arguments)
                    .map_err(|error| format!("invalid arguments: {error}"))?;
                let output = handler(arguments, context).await.map_err(Into::into)?;
                Ok::<_, BoxError>(ToolOutput::Json(serde_json::to_value(output)?))
            }
        })
    }
}

/// The JSON Schema of `A` as a tool's `parameters`.
pub fn schema_of<A: JsonSchema>() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(A)).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
        map.remove("title");
    }
    schema
}

/// The handler of a [`from_fn`](Definition::from_fn) tool: the function
/// its declaration shares.
struct FnHandler<H>(Arc<H>);

#[async_trait]
impl<H, Fut, O, E> Handler for FnHandler<H>
where
    H: Fn(Value, CallContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, E>> + Send + 'static,
    O: Into<ToolOutput>,
    E: Into<BoxError>,
{
    async fn invoke(
        &self,
        arguments: Value,
        context: &CallContext,
    ) -> Result<ToolOutput, BoxError> {
        match (self.0)(arguments, context.clone()).await {
            Ok(output) => Ok(output.into()),
            Err(error) => Err(error.into()),
        }
    }
}
