//! Answers that are not answers (issue: "An answer that is not an answer
//! ends the turn as a success"): an empty answer is told and asked again
//! once, then fails typed; one the output limit cut fails at once; a tool
//! call written as text is told and asked again like a failed call; an
//! agent's answer cut by its output limit reaches the lead marked as cut.
//! Never an empty `Completed`.

use agent_loop::conversation::{
    AssistantMessage, ContentPart, FinishReason, Message, ModelResponse, ReasoningPart, WireFormat,
};
use agent_loop::turn::{Agent, ScriptedModel, TurnError};
use agent_loop::{Definition, ToolLimits, tool};
use tokio_util::sync::CancellationToken;

use crate::turn_common::*;

const TOLD_EMPTY: &str =
    "Your last reply was empty. Answer the user, or call a tool if you need one.";

const TOLD_AS_TEXT: &str = "Your last reply wrote a tool call as text (`<tool_call>…</tool_call>`), which was not read as a call. Call the tool through the tools you were given, with its arguments as one JSON object, or answer in text.";

/// A Responses answer of reasoning alone: no text, no call.
fn reasoning_only() -> ModelResponse {
    ModelResponse::new(AssistantMessage::new(vec![ContentPart::Reasoning(
        ReasoningPart::new("thinking it over", WireFormat::OpenAiResponses),
    )]))
}

async fn turn(
    responses: impl IntoIterator<Item = ModelResponse>,
) -> (
    Result<agent_loop::turn::TurnOutcome, TurnError>,
    Vec<Message>,
    ScriptedModel,
) {
    let session = bind_tools([echo_tool("echo")], ToolLimits::default()).await;
    let model = ScriptedModel::new(responses);
    let mut conversation = user_says("hello");
    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await;
    (outcome, conversation, model)
}

#[tokio::test]
async fn an_empty_answer_is_told_and_asked_again() {
    for empty in [
        answer(""),
        answer(" \n"),
        reasoning_only(),
        // Gemini's malformed call without content.
        answer("").with_finish_reason(FinishReason::Other("MALFORMED_FUNCTION_CALL".into())),
    ] {
        let (outcome, conversation, model) = turn([empty, answer("Hi there.")]).await;
        let outcome = outcome.expect("asked again, then answered");
        assert_eq!(outcome.answer(), Some("Hi there."));
        assert_eq!(model.requests().len(), 2);
        // The instruction, not the empty message, sits between.
        let texts: Vec<String> = conversation.iter().map(Message::text).collect();
        assert_eq!(texts, ["hello", TOLD_EMPTY, "Hi there."]);
        assert_eq!(outcome.stats.iterations.len(), 1, "the empty one counts");
    }
}

#[tokio::test]
async fn a_second_empty_answer_in_a_row_fails_the_turn() {
    let (outcome, conversation, model) = turn([answer(""), answer("")]).await;
    let error = outcome.expect_err("never an empty completion");
    assert!(
        matches!(
            error,
            TurnError::EmptyAnswer {
                finish_reason: FinishReason::Stop,
                ..
            }
        ),
        "{error}"
    );
    assert_eq!(model.requests().len(), 2);
    assert_eq!(conversation.len(), 2, "the question and one instruction");
}

#[tokio::test]
async fn an_empty_answer_the_output_limit_cut_fails_at_once() {
    let (outcome, _, model) =
        turn([reasoning_only().with_finish_reason(FinishReason::Length)]).await;
    assert!(
        matches!(
            outcome,
            Err(TurnError::EmptyAnswer {
                finish_reason: FinishReason::Length,
                ..
            })
        ),
        "{outcome:?}"
    );
    assert_eq!(
        model.requests().len(),
        1,
        "asking again would end the same way"
    );
}

#[tokio::test]
async fn a_tool_call_written_as_text_is_told_and_asked_again() {
    let as_text = "<tool_call>\n{\"name\": \"echo\", \"arguments\": {}}\n</tool_call>";
    let (outcome, conversation, _) = turn([
        answer(as_text),
        batch([call("c1", "echo", "{}")]),
        answer("Done."),
    ])
    .await;
    assert_eq!(outcome.expect("completes").answer(), Some("Done."));
    // The text stays, so the model sees what it wrote.
    assert_eq!(conversation[1].text(), as_text);
    assert_eq!(conversation[2].text(), TOLD_AS_TEXT);

    let (outcome, _, model) = turn([answer(as_text), answer(as_text), answer(as_text)]).await;
    assert!(
        matches!(outcome, Err(TurnError::ToolCallAsText { .. })),
        "{outcome:?}"
    );
    assert_eq!(model.requests().len(), 3, "the first and two more");
}

/// A text that mentions the tag, or quotes a whole block while
/// explaining it, is an answer.
#[tokio::test]
async fn an_answer_that_mentions_or_quotes_the_tag_is_an_answer() {
    for text in [
        "Qwen writes calls as <tool_call> blocks.",
        "The format: <tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>, one per call.",
    ] {
        let (outcome, _, _) = turn([answer(text)]).await;
        assert_eq!(outcome.expect("completes").answer(), Some(text));
    }
}

/// Gemini keeps a blank signed part of an empty answer as a provider
/// part: the answer is still empty.
#[tokio::test]
async fn an_answer_of_a_signed_blank_part_alone_is_empty() {
    let signed = ModelResponse::new(AssistantMessage::new(vec![ContentPart::Provider(
        agent_loop::conversation::ProviderPart::new(
            WireFormat::Gemini,
            serde_json::json!({ "text": "", "thoughtSignature": "c2ln" }),
        ),
    )]));
    let (outcome, conversation, _) = turn([signed, answer("Here.")]).await;
    assert_eq!(outcome.expect("asked again").answer(), Some("Here."));
    assert_eq!(conversation[1].text(), TOLD_EMPTY);
}

#[tokio::test]
async fn an_agents_answer_cut_by_its_output_limit_reaches_the_lead_marked() {
    let researcher = Definition::builder()
        .name("researcher")
        .build()
        .validate()
        .unwrap();
    let cut =
        ScriptedModel::new([answer("Paris is the cap").with_finish_reason(FinishReason::Length)]);
    let research = tool::Definition::agent("research", "Researches.", Agent::new(researcher, cut));
    let lead = Definition::builder()
        .name("lead")
        .tool(research)
        .build()
        .validate()
        .unwrap();
    let session = bind(&lead).await;
    let model = ScriptedModel::new([
        batch([call("r1", "research", r#"{"task": "Capital of France?"}"#)]),
        answer("It is Paris."),
    ]);
    let mut conversation = user_says("Capital of France?");
    session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        result_for(&conversation, "r1").text(),
        "Paris is the cap\n[the agent's answer was cut off by its output limit]"
    );
}
