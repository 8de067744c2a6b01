//! What the benches share: the tool schema every benchmarked tool declares,
//! and a long conversation.

use serde_json::{Value, json};

/// A small, typical tool schema: two properties, one required.
pub fn parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "city": { "type": "string", "description": "City name." },
            "days": { "type": "integer", "minimum": 1, "maximum": 14 }
        },
        "required": ["city"]
    })
}

/// The conversation of a long session, as it stands before the request of
/// its next iteration: a system prompt, a question, then rounds of an
/// assistant message (a sentence and up to 4 tool calls) and its 2 KB tool
/// results, 1,000 messages in all (about 2 MB of JSON).
// The overhead bench reads it only with the `openai` feature.
#[cfg_attr(not(feature = "openai"), allow(dead_code))]
pub fn long_conversation() -> Vec<agent_loop::conversation::Message> {
    use agent_loop::conversation::{Message, ToolCall, ToolResult};
    const MESSAGES: usize = 1_000;
    let mut conversation = vec![
        Message::system("You are a research assistant. Cite every source you use."),
        Message::user("Find what has been published on the topic and summarise it."),
    ];
    let mut round = 0;
    while conversation.len() < MESSAGES {
        let calls: Vec<ToolCall> = (0..4.min(MESSAGES - conversation.len() - 1))
            .map(|i| {
                ToolCall::new(
                    format!("call_{round}_{i}"),
                    format!("tool_{}", (round + i) % 10),
                    format!(r#"{{"city": "Paris {round}", "days": {}}}"#, i + 1),
                )
            })
            .collect();
        let text = format!("Searching round {round} of the sources for what is still missing.");
        conversation.push(Message::tool_calls(Some(text), calls.clone()));
        for call in calls {
            conversation.push(Message::tool_result(ToolResult::ok(
                call.id,
                tool_result_text(round),
            )));
        }
        round += 1;
    }
    conversation
}

/// 2,048 bytes of a tool's JSON listing, as text.
#[cfg_attr(not(feature = "openai"), allow(dead_code))]
fn tool_result_text(round: usize) -> String {
    let mut text = String::with_capacity(2_200);
    let mut item = 0;
    while text.len() < 2_048 {
        text.push_str(&format!(
            "{{\"id\": {item}, \"title\": \"Result {item} of round {round}\", \"snippet\": \"A short excerpt of the page, as a search tool returns it.\"}}\n"
        ));
        item += 1;
    }
    text.truncate(2_048);
    // A tool's text as the library receives it, without this builder's
    // slack, so that the memory bench counts what the conversation holds.
    text.shrink_to_fit();
    text
}
