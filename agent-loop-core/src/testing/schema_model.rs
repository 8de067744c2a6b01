//! [`SchemaModel`]: calls each offered tool once with generated
//! arguments, then answers with what became of each call.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;
use serde_json::Value;

use crate::conversation::{AssistantMessage, Message, ModelResponse, ToolCall};
use crate::model_api::{Model, ModelError, ModelRequest};
use crate::testing::generate;
use crate::tool::STRUCTURED_OUTPUT_TOOL_NAME;

/// A [`Model`] for tests: its first response calls every tool of the
/// request (or those named with [`only`](Self::only)) once, in one batch,
/// with arguments [`generate`]d from each tool's schema; the next answers
/// with one line per call saying how it ended. A turn that asks for
/// structured output gets a value generated from the output's schema: by
/// its control tool in tool mode, as the answer's text in native mode.
/// Each call is kept for [`report`](Self::report).
///
/// The seed makes it reproducible: the same seed, tools and schemas make
/// the same arguments. Tool `i` of the request gets the seed `seed + i`.
pub struct SchemaModel {
    seed: u64,
    only: Option<HashSet<String>>,
    exercises: Mutex<Vec<Exercise>>,
    /// Structured outputs made so far: each try gets a seed of its own,
    /// so a refused value is not sent again.
    outputs: AtomicU64,
}

/// One tool call the model made, and its result once the turn answered it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Exercise {
    /// The tool called.
    pub tool: String,
    /// The tool call id (`schema_N`).
    pub tool_call_id: String,
    /// The arguments generated from its schema.
    pub arguments: Value,
    /// The schema's keywords the arguments may not satisfy
    /// ([`Generated::unsatisfied`](crate::testing::Generated::unsatisfied)).
    pub unsatisfied: Vec<String>,
    /// The result's text and error flag; `None` until the turn sent it.
    pub result: Option<(String, bool)>,
}

impl Exercise {
    /// The error text of a call whose arguments satisfied every keyword
    /// of the tool's schema and whose result is still an error: a tool
    /// that refuses what its schema admits (or that failed for its own
    /// reason). `None` for a success, or arguments that may not satisfy
    /// the schema.
    pub fn refused(&self) -> Option<&str> {
        match &self.result {
            Some((text, true)) if self.unsatisfied.is_empty() => Some(text),
            _ => None,
        }
    }
}

impl SchemaModel {
    /// A model whose arguments come from `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            seed,
            only: None,
            exercises: Mutex::new(Vec::new()),
            outputs: AtomicU64::new(0),
        }
    }

    /// Calls only the tools named (the others are offered, not called).
    pub fn only(mut self, tool_names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.only = Some(tool_names.into_iter().map(Into::into).collect());
        self
    }

    /// Every call made so far, in order, with its result once answered.
    pub fn report(&self) -> Vec<Exercise> {
        self.exercises
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

#[async_trait]
impl Model for SchemaModel {
    /// Never fails.
    async fn respond(&self, request: ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        let mut exercises = self
            .exercises
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // Results of this model's calls, as the turn answered them.
        for message in request.conversation {
            if let Message::Tool(result) = message
                && let Some(exercise) = exercises
                    .iter_mut()
                    .find(|exercise| exercise.tool_call_id == result.tool_call_id)
            {
                exercise.result = Some((result.text(), result.is_error));
            }
        }
        let called_before = !exercises.is_empty();
        let control = request
            .tools
            .iter()
            .find(|tool| tool.name == STRUCTURED_OUTPUT_TOOL_NAME);
        if !called_before {
            let mut calls = Vec::new();
            for (index, tool) in request.tools.iter().enumerate() {
                let wanted = self
                    .only
                    .as_ref()
                    .is_none_or(|only| only.contains(&tool.name));
                if tool.name == STRUCTURED_OUTPUT_TOOL_NAME || !wanted {
                    continue;
                }
                let generated = generate(&tool.parameters, self.seed.wrapping_add(index as u64));
                let tool_call_id = format!("schema_{}", exercises.len() + 1);
                calls.push(ToolCall::new(
                    tool_call_id.clone(),
                    tool.name.clone(),
                    generated.value.to_string(),
                ));
                exercises.push(Exercise {
                    tool: tool.name.clone(),
                    tool_call_id,
                    arguments: generated.value,
                    unsatisfied: generated.unsatisfied,
                    result: None,
                });
            }
            if !calls.is_empty() {
                return Ok(ModelResponse::tool_calls(calls));
            }
        }
        let output_seed = || {
            let tries = self.outputs.fetch_add(1, Ordering::Relaxed);
            self.seed.wrapping_add(1_000_003u64.wrapping_mul(tries + 1))
        };
        if let Some(control) = control {
            let generated = generate(&control.parameters, output_seed());
            return Ok(ModelResponse::tool_calls([ToolCall::new(
                "schema_output",
                STRUCTURED_OUTPUT_TOOL_NAME,
                generated.value.to_string(),
            )]));
        }
        if let Some(output) = request.output {
            let generated = generate(output.schema(), output_seed());
            return Ok(ModelResponse::answer(generated.value.to_string()));
        }
        let summary: Vec<String> = exercises
            .iter()
            .map(|exercise| match &exercise.result {
                Some((_, false)) => format!("{}: ok", exercise.tool),
                Some((text, true)) => format!("{}: error: {text}", exercise.tool),
                None => format!("{}: no result", exercise.tool),
            })
            .collect();
        let text = if summary.is_empty() {
            "No tool to call.".to_owned()
        } else {
            summary.join("\n")
        };
        Ok(ModelResponse::new(AssistantMessage::from_text(text)))
    }
}
