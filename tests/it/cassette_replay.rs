//! Cassettes: a turn recorded through `cassette::Recorder` replays offline
//! through `cassette::Replayer` to the same conversation and events; a
//! request that differs is refused naming the first difference; ids minted
//! from another session pass `IgnoreVolatile` only.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use agent_loop::cassette::{Cassette, Recorder, ReplayMismatch, Replayer, Strictness};
use agent_loop::conversation::{Message, ModelResponse, ToolCall};
use agent_loop::turn::{
    Model, ModelError, ModelRequest, ScriptedModel, TurnError, TurnEvent, TurnEvents, TurnOptions,
};
use agent_loop::{Bindings, Bound, Definition, LoopId, SessionId, Validated};
use async_trait::async_trait;

use crate::turn_common::{counting_tool, echo_tool};

/// A scripted model that streams: each response's text reaches the turn's
/// events in pieces of three characters before the response returns.
struct Streaming(ScriptedModel);

#[async_trait]
impl Model for Streaming {
    async fn respond(&self, request: ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        let events = request.events;
        let response = self.0.respond(request).await?;
        let text: Vec<char> = response.message.text().chars().collect();
        for piece in text.chunks(3) {
            events.emit(|| TurnEvent::TextDelta {
                text: piece.iter().collect(),
            });
        }
        Ok(response)
    }
}

fn definition() -> Definition<Validated> {
    Definition::builder()
        .name("recorded")
        .tools([
            echo_tool("echo"),
            counting_tool("count", Arc::new(AtomicUsize::new(0))),
        ])
        .build()
        .validate()
        .unwrap()
}

async fn bind(definition: &Definition<Validated>, session_id: SessionId) -> Definition<Bound> {
    definition
        .bind(Bindings::new(session_id, LoopId::new()))
        .await
        .unwrap()
}

/// Two tool rounds, then an answer; the tool call ids are `id` and its
/// position (empty: the runner mints them from the session).
fn responses(id: &str) -> Vec<ModelResponse> {
    let call = |n: usize, name: &str, arguments: &str| {
        let id = if id.is_empty() {
            String::new()
        } else {
            format!("{id}{n}")
        };
        ToolCall::new(id, name, arguments)
    };
    vec![
        ModelResponse::tool_calls([
            call(1, "echo", r#"{"text": "one"}"#),
            call(2, "count", "{}"),
        ]),
        ModelResponse::tool_calls([call(3, "echo", r#"{"text": "two"}"#)]),
        ModelResponse::answer("Both rounds are done."),
    ]
}

/// A cassette path of this test run, removed when dropped.
struct Path(std::path::PathBuf);

impl Path {
    fn new() -> Self {
        Self(std::env::temp_dir().join(format!("agent-loop-cassette-{}.json", SessionId::new())))
    }
}

/// What must never reach a cassette: the keys and headers the tests'
/// models use.
const SECRETS: [&str; 5] = ["SECRET", "sk-", "Bearer", "authorization", "Authorization"];

impl Drop for Path {
    /// Every cassette a test wrote is checked for secrets, then removed.
    fn drop(&mut self) {
        if let Ok(text) = std::fs::read_to_string(&self.0)
            && !std::thread::panicking()
        {
            for secret in SECRETS {
                assert!(
                    !text.contains(secret),
                    "{secret:?} reached {}",
                    self.0.display()
                );
            }
        }
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Runs one turn of `session` on `model`: the conversation and the events,
/// their durations zeroed (wall time differs from run to run).
async fn run(
    session: &Definition<Bound>,
    model: &dyn Model,
    user: &str,
) -> Result<(Vec<Message>, Vec<TurnEvent>), TurnError> {
    let (events, mut received) = TurnEvents::channel();
    let mut conversation = vec![Message::user(user)];
    session
        .run_turn(
            model,
            &mut conversation,
            TurnOptions::builder().events(&events).build(),
        )
        .await?;
    let mut all = Vec::new();
    while let Ok(mut event) = received.try_recv() {
        match &mut event {
            TurnEvent::ModelResponded { duration, .. }
            | TurnEvent::ToolCallFinished { duration, .. } => *duration = Duration::ZERO,
            _ => {}
        }
        all.push(event);
    }
    Ok((conversation, all))
}

/// The replay mismatch inside a turn's model error.
fn mismatch(error: TurnError) -> ReplayMismatch {
    let TurnError::Model { source, .. } = error else {
        panic!("not a model error: {error}");
    };
    std::error::Error::source(&source)
        .and_then(|source| source.downcast_ref::<ReplayMismatch>())
        .cloned()
        .unwrap_or_else(|| panic!("no replay mismatch in {source}"))
}

#[tokio::test]
async fn a_recorded_streamed_turn_of_two_tool_rounds_replays_offline_to_the_same_conversation_and_events()
 {
    let definition = definition();
    let session_id = SessionId::new();
    let path = Path::new();
    let recorder = Recorder::new(Streaming(ScriptedModel::new(responses("call_"))), &path.0);
    let recorded = run(&bind(&definition, session_id).await, &recorder, "Go")
        .await
        .unwrap();
    let cassette = Cassette::load(&path.0).unwrap();
    assert_eq!(cassette.exchanges.len(), 3);
    assert_eq!(
        cassette,
        recorder.cassette(),
        "what was saved is what was recorded"
    );
    // The answer was streamed in pieces of three characters.
    let pieces: Vec<&str> = cassette.exchanges[2]
        .deltas
        .iter()
        .map(|delta| match &delta.piece {
            agent_loop::cassette::DeltaPiece::Text { text } => text.as_str(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(pieces.concat(), "Both rounds are done.");
    assert_eq!(pieces[0], "Bot");

    let replayer = Replayer::new(cassette, Strictness::Exact);
    let replayed = run(&bind(&definition, session_id).await, &replayer, "Go")
        .await
        .unwrap();
    assert_eq!(replayed, recorded);
    assert_eq!(replayer.remaining(), 0);
}

#[tokio::test]
async fn a_request_with_one_character_changed_is_refused_with_its_path_and_both_values() {
    let definition = definition();
    let session_id = SessionId::new();
    let path = Path::new();
    let recorder = Recorder::new(ScriptedModel::new(responses("call_")), &path.0);
    run(&bind(&definition, session_id).await, &recorder, "Go now")
        .await
        .unwrap();
    let replayer = Replayer::new(Cassette::load(&path.0).unwrap(), Strictness::Exact);
    let error = run(&bind(&definition, session_id).await, &replayer, "Go new")
        .await
        .unwrap_err();
    assert_eq!(
        mismatch(error).to_string(),
        r#"request 0 differs from the recorded one: conversation[0].content[0].text: recorded "Go now", sent "Go new""#
    );
    // The last user message is all `LastUserMessage` compares.
    let replayer = Replayer::new(
        Cassette::load(&path.0).unwrap(),
        Strictness::LastUserMessage,
    );
    let error = run(&bind(&definition, session_id).await, &replayer, "Go new")
        .await
        .unwrap_err();
    assert_eq!(
        mismatch(error).to_string(),
        r#"request 0 differs from the recorded one: last_user_message: recorded "Go now", sent "Go new""#
    );
    assert!(
        run(&bind(&definition, session_id).await, &replayer, "Go now")
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn ids_minted_in_another_session_pass_ignore_volatile_and_fail_exact_at_the_id() {
    let definition = definition();
    let path = Path::new();
    // Empty provider ids: the runner mints them from the session's id.
    let recorder = Recorder::new(ScriptedModel::new(responses("")), &path.0);
    let recorded = run(&bind(&definition, SessionId::new()).await, &recorder, "Go")
        .await
        .unwrap();
    let other_session = SessionId::new();

    let exact = Replayer::new(Cassette::load(&path.0).unwrap(), Strictness::Exact);
    let error = run(&bind(&definition, other_session).await, &exact, "Go")
        .await
        .unwrap_err();
    let ReplayMismatch::Differs {
        exchange,
        difference,
    } = mismatch(error)
    else {
        panic!("not a difference");
    };
    assert_eq!(exchange, 1, "the first request has no minted id yet");
    assert_eq!(difference.path, "conversation[1].content[0].id");
    assert!(
        difference.recorded.starts_with("\"call_") && difference.sent.starts_with("\"call_"),
        "{difference}"
    );
    assert_ne!(difference.recorded, difference.sent);

    let volatile = Replayer::new(Cassette::load(&path.0).unwrap(), Strictness::IgnoreVolatile);
    let (conversation, _) = run(&bind(&definition, other_session).await, &volatile, "Go")
        .await
        .unwrap();
    assert_eq!(conversation.len(), recorded.0.len());
    assert_eq!(conversation.last(), recorded.0.last());
}

/// A real model over HTTP (a loopback server), recorded: the cassette
/// names the model and its format, and holds no key, header or endpoint.
#[cfg(feature = "openai")]
#[tokio::test]
async fn a_cassette_of_a_real_model_holds_no_key_header_or_endpoint() {
    use agent_loop::conversation::WireFormat;
    use agent_loop::model::OpenAiModel;
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    const KEY: &str = "sk-cassette-SECRET-4242";
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "gpt-4o",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Done."},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
        })))
        .mount(&server)
        .await;
    // Credentials in the URL too: the model keeps them to itself.
    let base = server
        .uri()
        .replacen("http://", "http://user:url-SECRET@", 1);
    let model = OpenAiModel::new("gpt-4o")
        .base_url(format!("{base}/v1"))
        .api_key(KEY);
    let path = Path::new();
    let recorder = Recorder::new(model, &path.0);
    let session = bind(&definition(), SessionId::new()).await;
    let (conversation, _) = run(&session, &recorder, "Go").await.unwrap();
    assert_eq!(
        conversation.last().map(Message::text).as_deref(),
        Some("Done.")
    );

    let text = std::fs::read_to_string(&path.0).unwrap();
    for secret in [
        KEY,
        "SECRET",
        "Bearer",
        "authorization",
        "Authorization",
        &server.uri(),
    ] {
        assert!(
            !text.contains(secret),
            "{secret:?} reached the cassette:\n{text}"
        );
    }
    let cassette = Cassette::load(&path.0).unwrap();
    assert_eq!(cassette.exchanges[0].model.name.as_deref(), Some("gpt-4o"));
    assert_eq!(
        cassette.exchanges[0].model.format,
        Some(WireFormat::OpenAiChat)
    );
}

#[tokio::test]
async fn past_the_cassettes_end_new_episodes_are_recorded_and_the_rest_replayed() {
    let definition = definition();
    let session_id = SessionId::new();
    let path = Path::new();
    let recorder = Recorder::new(ScriptedModel::new(responses("call_")), &path.0);
    let full = run(&bind(&definition, session_id).await, &recorder, "Go")
        .await
        .unwrap();
    let whole = recorder.cassette();
    // A cassette of the first exchange only.
    let mut first = whole.clone();
    first.exchanges.truncate(1);
    first.save(&path.0).unwrap();

    let rest = ScriptedModel::new(responses("call_").into_iter().skip(1));
    let replayer = Replayer::new(Cassette::load(&path.0).unwrap(), Strictness::Exact)
        .new_episodes(rest, &path.0);
    let again = run(&bind(&definition, session_id).await, &replayer, "Go")
        .await
        .unwrap();
    assert_eq!(again, full);
    assert_eq!(
        Cassette::load(&path.0).unwrap(),
        whole,
        "the missing two were recorded"
    );

    // A request that differs is refused, new episodes or not.
    let rest = ScriptedModel::new(responses("call_"));
    let replayer = Replayer::new(Cassette::load(&path.0).unwrap(), Strictness::Exact)
        .new_episodes(rest, &path.0);
    let error = run(&bind(&definition, session_id).await, &replayer, "Stop")
        .await
        .unwrap_err();
    assert!(matches!(
        mismatch(error),
        ReplayMismatch::Differs { exchange: 0, .. }
    ));
    assert_eq!(Cassette::load(&path.0).unwrap(), whole, "nothing recorded");
}

/// A streaming model that waits `pause` before each piece.
struct SlowStreaming(ScriptedModel, Duration);

#[async_trait]
impl Model for SlowStreaming {
    async fn respond(&self, request: ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        let events = request.events;
        let response = self.0.respond(request).await?;
        for word in response.message.text().split_inclusive(' ') {
            tokio::time::sleep(self.1).await;
            events.emit(|| TurnEvent::TextDelta {
                text: word.to_owned(),
            });
        }
        Ok(response)
    }
}

#[tokio::test]
async fn at_recorded_speed_the_deltas_come_no_sooner_than_they_were_recorded() {
    let path = Path::new();
    let recorder = Recorder::new(
        SlowStreaming(
            ScriptedModel::new([ModelResponse::answer("one two three four")]),
            Duration::from_millis(40),
        ),
        &path.0,
    );
    let session = bind(&definition(), SessionId::new()).await;
    let recorded = run(&session, &recorder, "Go").await.unwrap();
    let cassette = recorder.cassette();
    let times: Vec<u64> = cassette.exchanges[0]
        .deltas
        .iter()
        .map(|delta| delta.after_ms)
        .collect();
    assert_eq!(times.len(), 4);
    assert!(times.windows(2).all(|pair| pair[0] <= pair[1]), "{times:?}");
    assert!(times[3] >= 160, "{times:?}");

    let replayer = Replayer::new(cassette.clone(), Strictness::Exact).at_recorded_speed();
    let started = std::time::Instant::now();
    let replayed = run(&session, &replayer, "Go").await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(times[3]));
    assert_eq!(replayed, recorded);
    // Without pacing, the same deltas in the same order.
    let replayer = Replayer::new(cassette, Strictness::Exact);
    assert_eq!(run(&session, &replayer, "Go").await.unwrap(), recorded);
}

/// A tool that returns an order number it minted (a counter that starts
/// where `first` says: another run mints others), as a tool that mints a
/// random id or reads live state does.
fn minting_definition(first: usize) -> Definition<Validated> {
    use agent_loop::tool::{Definition as ToolDefinition, ToolInfo};
    let next = Arc::new(AtomicUsize::new(first));
    Definition::builder()
        .name("minting")
        .tool(ToolDefinition::from_fn(
            ToolInfo::new(
                "place_order",
                "Places an order.",
                serde_json::json!({"type": "object"}),
            ),
            move |_, _| {
                let number = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                async move { Ok::<_, std::convert::Infallible>(format!("order {number} placed")) }
            },
        ))
        .build()
        .validate()
        .unwrap()
}

/// Two orders, then an answer.
fn ordering() -> Vec<ModelResponse> {
    vec![
        ModelResponse::tool_calls([ToolCall::new("call_1", "place_order", "{}")]),
        ModelResponse::tool_calls([ToolCall::new("call_2", "place_order", "{}")]),
        ModelResponse::answer("Two orders placed."),
    ]
}

#[tokio::test]
async fn a_normaliser_makes_minted_tool_results_alike_where_ignore_volatile_cannot() {
    use agent_loop::cassette::ExchangeRequest;
    use agent_loop::conversation::ContentPart;
    let session_id = SessionId::new();
    let path = Path::new();
    let recorder = Recorder::new(ScriptedModel::new(ordering()), &path.0);
    let recorded = run(
        &bind(&minting_definition(1000), session_id).await,
        &recorder,
        "Order twice",
    )
    .await
    .unwrap();
    assert_eq!(recorded.0[2].text(), "order 1000 placed");

    // The next run mints other numbers: no strictness passes it.
    for strictness in [Strictness::Exact, Strictness::IgnoreVolatile] {
        let replayer = Replayer::new(Cassette::load(&path.0).unwrap(), strictness);
        let error = run(
            &bind(&minting_definition(7), session_id).await,
            &replayer,
            "Order twice",
        )
        .await
        .unwrap_err();
        let ReplayMismatch::Differs {
            exchange,
            difference,
        } = mismatch(error)
        else {
            panic!("not a difference");
        };
        assert_eq!(exchange, 1);
        assert_eq!(difference.path, "conversation[2].content[0].text");
        assert_eq!(difference.recorded, r#""order 1000 placed""#);
        assert_eq!(difference.sent, r#""order 7 placed""#);
    }

    // Normalised on both sides, it replays; the cassette is kept as it was.
    let order_number = |request: &mut ExchangeRequest| {
        for message in &mut request.conversation {
            if let Message::Tool(result) = message {
                for part in &mut result.content {
                    if let ContentPart::Text(text) = part
                        && text.text.starts_with("order ")
                    {
                        text.text = "order (number) placed".to_owned();
                    }
                }
            }
        }
    };
    let cassette = Cassette::load(&path.0).unwrap();
    let replayer = Replayer::new(cassette.clone(), Strictness::Exact).normalizing(order_number);
    let (conversation, _) = run(
        &bind(&minting_definition(7), session_id).await,
        &replayer,
        "Order twice",
    )
    .await
    .unwrap();
    assert_eq!(
        conversation[2].text(),
        "order 7 placed",
        "what the tool said reaches the model"
    );
    assert_eq!(conversation[4].text(), "order 8 placed");
    assert_eq!(conversation.last(), recorded.0.last());
    assert_eq!(replayer.remaining(), 0);
    assert_eq!(Cassette::load(&path.0).unwrap(), cassette);
}

#[tokio::test]
async fn equal_requests_are_served_first_in_first_out_and_others_by_content_in_any_order() {
    let path = Path::new();
    let recorder = Recorder::new(
        ScriptedModel::new([
            ModelResponse::answer("Alpha one."),
            ModelResponse::answer("Beta."),
            ModelResponse::answer("Alpha two."),
        ]),
        &path.0,
    );
    let session = bind(&definition(), SessionId::new()).await;
    for user in ["Alpha", "Beta", "Alpha"] {
        run(&session, &recorder, user).await.unwrap();
    }
    let answer = |(conversation, _): (Vec<Message>, Vec<TurnEvent>)| {
        conversation.last().map(Message::text).unwrap_or_default()
    };

    // Asked in another order: each gets its own answer; the two equal
    // requests get theirs in the order they were recorded.
    let replayer = Replayer::new(Cassette::load(&path.0).unwrap(), Strictness::Exact);
    assert_eq!(
        answer(run(&session, &replayer, "Beta").await.unwrap()),
        "Beta."
    );
    assert_eq!(
        answer(run(&session, &replayer, "Alpha").await.unwrap()),
        "Alpha one."
    );
    assert_eq!(replayer.remaining(), 1);
    // One that matches none left is compared with the earliest left.
    let error = run(&session, &replayer, "Beta").await.unwrap_err();
    assert_eq!(
        mismatch(error).to_string(),
        r#"request 2 differs from the recorded one: conversation[0].content[0].text: recorded "Alpha", sent "Beta""#
    );
    assert_eq!(
        answer(run(&session, &replayer, "Alpha").await.unwrap()),
        "Alpha two."
    );
    let error = run(&session, &replayer, "Alpha").await.unwrap_err();
    assert_eq!(mismatch(error), ReplayMismatch::Exhausted { recorded: 3 });
}

#[tokio::test]
async fn two_agents_recorded_one_after_the_other_replay_in_the_other_order() {
    let path = Path::new();
    let recorder = Recorder::new(ScriptedModel::new(responses("call_")), &path.0);
    let (first, second) = (SessionId::new(), SessionId::new());
    let definition = definition();
    let recorded_first = run(&bind(&definition, first).await, &recorder, "First")
        .await
        .unwrap();
    let recorder = Recorder::appending(
        ScriptedModel::new(responses("call_")),
        &path.0,
        recorder.cassette(),
    );
    let recorded_second = run(&bind(&definition, second).await, &recorder, "Second")
        .await
        .unwrap();
    let cassette = Cassette::load(&path.0).unwrap();
    assert_eq!(cassette.exchanges.len(), 6);

    // The second agent's turn reaches the replayer first (as concurrent
    // agents' requests do in another order than recorded): each agent
    // still gets its own answers.
    let replayer = Replayer::new(cassette, Strictness::Exact);
    let replayed_second = run(&bind(&definition, second).await, &replayer, "Second").await;
    assert_eq!(replayer.remaining(), 3);
    let replayed_first = run(&bind(&definition, first).await, &replayer, "First").await;
    assert_eq!(replayed_first.unwrap(), recorded_first);
    assert_eq!(replayed_second.unwrap(), recorded_second);
    assert_eq!(replayer.remaining(), 0);
}

#[cfg(feature = "openai")]
#[tokio::test]
async fn a_refusal_the_turn_recovered_from_is_recorded_and_replayed_so_the_turn_recovers_again() {
    use agent_loop::cassette::{Answer, RecordedFailure};
    use agent_loop::conversation::WireFormat;
    use agent_loop::model::{ModelErrorKind, OpenAiModel};
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};

    // Groq refuses the model's tool call (HTTP 400 `tool_use_failed`,
    // pydantic/pydantic-ai PR #2774), the turn tells the model, which
    // then answers.
    let generation = "<function=echo{\"text\": \"hi\"</function>";
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(400).set_body_json(serde_json::json!({ "error": {
            "message": "Failed to call a function. Please adjust your prompt. See 'failed_generation' for more details.",
            "type": "invalid_request_error",
            "code": "tool_use_failed",
            "failed_generation": generation
        } })))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
            "id": "chatcmpl-2", "object": "chat.completion", "created": 0, "model": "llama-3.3-70b-versatile",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "Hi."}}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 2, "total_tokens": 42}
        })))
        .mount(&server)
        .await;
    let model = OpenAiModel::new("llama-3.3-70b-versatile")
        .base_url(format!("{}/openai/v1", server.uri()))
        .api_key("gsk-SECRET")
        .max_retries(0);
    let path = Path::new();
    let recorder = Recorder::new(model, &path.0);
    let session_id = SessionId::new();
    let recorded = run(&bind(&definition(), session_id).await, &recorder, "Say hi")
        .await
        .unwrap();
    assert_eq!(recorded.0.last().map(Message::text).as_deref(), Some("Hi."));

    let cassette = Cassette::load(&path.0).unwrap();
    assert_eq!(cassette.exchanges.len(), 2);
    let Answer::Error(error) = &cassette.exchanges[0].answer else {
        panic!(
            "the refusal was not recorded: {:?}",
            cassette.exchanges[0].answer
        );
    };
    assert_eq!(error.kind, ModelErrorKind::Http { status: 400 });
    assert_eq!(error.format, Some(WireFormat::OpenAiChat));
    assert_eq!(error.code.as_deref(), Some("tool_use_failed"));
    assert_eq!(error.error_type.as_deref(), Some("invalid_request_error"));
    assert_eq!(error.failed_generation.as_deref(), Some(generation));
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path.0).unwrap()).unwrap();
    let saved = &saved["exchanges"][0];
    assert_eq!(saved["error"]["kind"], "http");
    assert_eq!(saved["error"]["status"], 400);
    assert!(saved.get("response").is_none());
    assert!(matches!(cassette.exchanges[1].answer, Answer::Response(_)));

    // Offline, the refusal comes back as it came and the turn recovers
    // the same way, to the same conversation and events.
    let replayer = Replayer::new(cassette.clone(), Strictness::Exact);
    let replayed = run(&bind(&definition(), session_id).await, &replayer, "Say hi")
        .await
        .unwrap();
    assert_eq!(replayed, recorded);
    assert_eq!(replayer.remaining(), 0);
    let back = RecordedFailure::of(&error.to_error());
    assert_eq!(&back, error, "a recorded error reads back as itself");
    assert!(error.to_error().is_failed_tool_call());
}
