//! Property: whatever arguments text a call holds (blank, an object, an
//! object of the non-object wrapper's own shape `{"_raw_arguments": "…"}`,
//! wrappers of wrappers, JSON that is not an object, text that is not
//! JSON), exporting the conversation to OpenAI or Anthropic and parsing the
//! export back gives the same arguments: the same JSON object for an
//! object, the same text otherwise, `{}` for blank. The export goes out as
//! an object either way, and exporting what was parsed gives the same JSON.

use agent_loop::conversation::{Message, ToolCall, ToolResult};
use agent_loop::wire::{RAW_ARGUMENTS_KEY, anthropic, openai};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Short strings that may look like JSON, the wrapper, or neither.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{0,6}",
        Just("y".to_owned()),
        Just(r#"{"a": 1}"#.to_owned()),
        Just("null".to_owned()),
        Just(r#"{"city": "Par"#.to_owned()),
        any::<String>(),
    ]
}

/// A JSON object whose keys may be the wrapper's.
fn object() -> impl Strategy<Value = Value> {
    let value = prop_oneof![
        fragment().prop_map(Value::String),
        any::<i32>().prop_map(|n| json!(n)),
        Just(json!({"nested": [1, "two"]})),
        Just(Value::Null),
    ];
    proptest::collection::vec(
        (
            prop_oneof![Just(RAW_ARGUMENTS_KEY.to_owned()), "[a-z]{1,4}"],
            value,
        ),
        0..3,
    )
    .prop_map(|entries| Value::Object(Map::from_iter(entries)))
}

/// `{"_raw_arguments": text}` as JSON text, `depth` times over.
fn wrapped(mut text: String, depth: usize) -> String {
    for _ in 0..depth {
        text = json!({ RAW_ARGUMENTS_KEY: text }).to_string();
    }
    text
}

fn arguments() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just(" \n".to_owned()),
        // Groq's and other compatible servers' form of "no arguments".
        Just("null".to_owned()),
        Just(" null\n".to_owned()),
        object().prop_map(|object| object.to_string()),
        // As a model may space it.
        object().prop_map(|object| serde_json::to_string_pretty(&object).unwrap_or_default()),
        (fragment(), 1..4usize).prop_map(|(text, depth)| wrapped(text, depth)),
        Just(r#"{"_raw_arguments": "y"}"#.to_owned()),
        Just("[1, 2]".to_owned()),
        Just("42".to_owned()),
        Just(r#""text""#.to_owned()),
        fragment(),
    ]
}

/// One call with `arguments` and its result.
fn conversation(arguments: &str) -> Vec<Message> {
    vec![
        Message::user("go"),
        Message::tool_calls(None, vec![ToolCall::new("call_1", "f", arguments)]),
        Message::Tool(ToolResult::ok("call_1", "done")),
    ]
}

/// The arguments of the conversation's one call.
fn arguments_of(conversation: &[Message]) -> String {
    conversation
        .iter()
        .filter_map(Message::as_assistant)
        .flat_map(|message| message.tool_calls())
        .map(|call| call.arguments.clone())
        .next()
        .expect("one call")
}

/// What a round trip must give back for `sent`.
fn assert_same_arguments(sent: &str, back: &str) -> Result<(), TestCaseError> {
    if agent_loop_core::support::json::no_arguments(sent) {
        prop_assert_eq!(back, "{}");
        return Ok(());
    }
    match serde_json::from_str::<Value>(sent) {
        // Objects may come back re-serialised; they stay the same object.
        Ok(Value::Object(object)) => {
            prop_assert_eq!(
                serde_json::from_str::<Value>(back).ok(),
                Some(Value::Object(object))
            );
        }
        _ => prop_assert_eq!(back, sent),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn anthropic_export_then_parse_gives_the_arguments_back(arguments in arguments()) {
        let exported = serde_json::to_value(anthropic::export_messages(&conversation(&arguments)))
            .expect("serialises");
        let input = &exported["messages"][1]["content"][0]["input"];
        prop_assert!(input.is_object(), "{}", input);
        let parsed = anthropic::parse_messages(&exported["messages"]).expect("parses");
        assert_same_arguments(&arguments, &arguments_of(&parsed))?;
        let again = serde_json::to_value(anthropic::export_messages(&parsed)).expect("serialises");
        prop_assert_eq!(again, exported);
    }

    #[test]
    fn openai_export_then_parse_gives_the_arguments_back(arguments in arguments()) {
        let exported = serde_json::to_value(openai::export_messages(&conversation(&arguments)).messages)
            .expect("serialises");
        let text = exported[1]["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .expect("arguments text")
            .to_owned();
        prop_assert!(
            serde_json::from_str::<Value>(&text).is_ok_and(|value| value.is_object()),
            "{}",
            text
        );
        let parsed = openai::parse_messages(&exported).expect("parses");
        assert_same_arguments(&arguments, &arguments_of(&parsed))?;
        let again = serde_json::to_value(openai::export_messages(&parsed).messages).expect("serialises");
        prop_assert_eq!(again, exported);
    }
}

#[test]
fn a_real_input_shaped_like_the_wrapper_survives_the_anthropic_round_trip() {
    // The issue's case: a model's real call with this input parses as that
    // object, and must come back as that object, not as the text `y`.
    let response = anthropic::parse_response(&json!({
        "type": "message", "role": "assistant",
        "content": [{ "type": "tool_use", "id": "toolu_1", "name": "f",
                      "input": { "_raw_arguments": "y" } }],
        "stop_reason": "tool_use"
    }))
    .unwrap();
    let call = response.message.tool_calls().next().unwrap().clone();
    assert_eq!(call.arguments, r#"{"_raw_arguments":"y"}"#);
    let conversation = vec![
        Message::user("go"),
        Message::Assistant(response.message),
        Message::Tool(ToolResult::ok("toolu_1", "done")),
    ];
    let exported = serde_json::to_value(anthropic::export_messages(&conversation)).unwrap();
    assert_eq!(
        exported["messages"][1]["content"][0]["input"],
        json!({ "_raw_arguments": r#"{"_raw_arguments":"y"}"# })
    );
    let parsed = anthropic::parse_messages(&exported["messages"]).unwrap();
    assert_eq!(arguments_of(&parsed), r#"{"_raw_arguments":"y"}"#);
}
