//! Testing agents without a provider: [`SchemaModel`], a
//! [`Model`](crate::turn::Model) that
//! calls every tool it is offered with arguments made from the tool's own
//! JSON Schema ([`generate`]), seeded so a failure reproduces, and reports
//! the tools that refused arguments their schema admits.
//!
//! ```
//! use agent_loop_core::conversation::Message;
//! use agent_loop_core::testing::SchemaModel;
//! use agent_loop_core::tool::{self, BoxError, ToolInfo};
//! use agent_loop_core::{Bindings, Definition, LoopId, SessionId};
//! use serde_json::json;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let weather = tool::Definition::from_fn(
//!     ToolInfo::new("weather", "The weather.", json!({
//!         "type": "object",
//!         "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 7}},
//!         "required": ["city"]
//!     })),
//!     |arguments: serde_json::Value, _context| async move {
//!         Ok::<_, BoxError>(format!("sunny in {}", arguments["city"].as_str().unwrap_or("?")))
//!     },
//! );
//! let session = Definition::builder().name("w").tool(weather).build().validate()?
//!     .bind(Bindings::new(SessionId::new(), LoopId::new())).await?;
//! let model = SchemaModel::new(7);
//! let mut conversation = vec![Message::user("Try every tool.")];
//! session.run_turn(&model, &mut conversation, &tokio_util::sync::CancellationToken::new()).await?;
//! let report = model.report();
//! assert_eq!(report.len(), 1);
//! assert!(report[0].refused().is_none(), "the tool took what its schema admits");
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

mod generate;
mod schema_model;
mod scripted;

pub use generate::{Generated, generate};
pub use schema_model::{Exercise, SchemaModel};
pub use scripted::{RecordedRequest, ScriptExhausted, ScriptedModel};
