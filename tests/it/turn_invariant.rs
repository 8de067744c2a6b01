//! DESIGN.md section 8.7 over random scripts: whatever the model asks for
//! (valid calls, unknown tools, broken arguments, panicking and failing
//! tools, empty batches, a cancellation mid-batch) and whatever the limits, every tool call id in the
//! returned conversation has exactly one result, for completed,
//! interrupted and failed turns alike. The outcome itself is predicted from the script and
//! checked too.

use std::sync::Arc;

use crate::turn_common::*;
use agent_loop::conversation::{Message, ModelResponse, ToolResult};
use agent_loop::turn::{ExceededLimit, ScriptedModel, ToolLimitError, TurnError, TurnStatus};
use agent_loop::{Limit, ToolLimits, tool};
use proptest::prelude::*;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// The panic message of the `boom` tool, kept out of the test output.
const BOOM: &str = "expected panic: turn_invariant's boom tool";

/// One call the random model may make.
#[derive(Clone, Copy, Debug)]
enum CallKind {
    Valid,
    EmptyArguments,
    UnknownTool,
    NotJson,
    Null,
    Array,
    MissingField,
    WrongType,
    Panics,
    Fails,
    /// Cancels the turn's token from inside the tool, then never finishes:
    /// the turn is interrupted at a random point of the script.
    CancelsTurn,
}

impl CallKind {
    /// Tool name, arguments text, and whether the result is an error.
    fn call(self) -> (&'static str, &'static str, bool) {
        match self {
            CallKind::Valid => ("get_weather", r#"{"city": "Lima"}"#, false),
            CallKind::EmptyArguments => ("echo", "", false),
            CallKind::UnknownTool => ("get_wether", "{}", true),
            CallKind::NotJson => ("get_weather", r#"{"city": "San Fra"#, true),
            CallKind::Null => ("get_weather", "null", true),
            CallKind::Array => ("get_weather", "[1]", true),
            CallKind::MissingField => ("get_weather", "{}", true),
            CallKind::WrongType => ("get_weather", r#"{"city": 1}"#, true),
            CallKind::Panics => ("boom", "{}", true),
            CallKind::Fails => ("flaky", "{}", true),
            // Never answered: its batch is not committed.
            CallKind::CancelsTurn => ("stop", "{}", true),
        }
    }
}

fn call_kind() -> impl Strategy<Value = CallKind> {
    prop_oneof![
        3 => Just(CallKind::Valid),
        1 => Just(CallKind::EmptyArguments),
        1 => Just(CallKind::UnknownTool),
        1 => Just(CallKind::NotJson),
        1 => Just(CallKind::Null),
        1 => Just(CallKind::Array),
        1 => Just(CallKind::MissingField),
        1 => Just(CallKind::WrongType),
        1 => Just(CallKind::Panics),
        1 => Just(CallKind::Fails),
        1 => Just(CallKind::CancelsTurn),
    ]
}

#[derive(Clone, Debug)]
struct Case {
    batches: Vec<Vec<CallKind>>,
    ends_with_answer: bool,
    limits: ToolLimits,
}

fn count(n: u32) -> Limit {
    Limit::at_most(n).expect("a positive count")
}

fn case() -> impl Strategy<Value = Case> {
    let batches = prop::collection::vec(prop::collection::vec(call_kind(), 0..6), 0..8);
    let iterations = prop_oneof![
        Just(count(1)),
        Just(count(2)),
        Just(count(3)),
        Just(count(5)),
        Just(Limit::Unlimited)
    ];
    let calls = prop_oneof![
        Just(count(1)),
        Just(count(2)),
        Just(count(4)),
        Just(count(8)),
        Just(count(16)),
        Just(Limit::Unlimited)
    ];
    (batches, any::<bool>(), iterations, calls, 1..=4_u32).prop_map(
        |(batches, ends_with_answer, iterations, calls, parallel)| Case {
            batches,
            ends_with_answer,
            limits: ToolLimits::new()
                .iterations(iterations)
                .calls(calls)
                .parallel(parallel),
        },
    )
}

/// How the turn should end.
#[derive(Debug, PartialEq)]
enum Expected {
    Answer(String),
    Limit {
        exceeded: ExceededLimit,
        iterations: u32,
        calls: u32,
    },
    ModelFailed,
    Interrupted,
    /// A second empty answer in a row.
    EmptyAnswer,
}

/// What the script makes of the turn: the batches that run, how the turn
/// ends, and the iterations it counts (its batches and the empty answers
/// it told the model about).
struct Predicted {
    /// Each batch that runs, with its place in the script.
    executed: Vec<(usize, Vec<CallKind>)>,
    expected: Expected,
    iterations: usize,
}

/// Replays the limits of DESIGN.md section 8.2 over the script: the
/// batches that run, and how the turn ends.
fn predict(case: &Case) -> Predicted {
    let limits = case
        .limits
        .resolve()
        .expect("the strategy writes valid limits");
    let (max_iterations, max_calls) = (limits.iterations.get(), limits.calls.get());
    let mut executed: Vec<(usize, Vec<CallKind>)> = Vec::new();
    let mut calls = 0_u32;
    // The empty answers told about (each batch and each empty answer is
    // one request).
    let mut empties = 0_usize;
    let mut empty_in_row = false;
    let predicted = |executed: Vec<(usize, Vec<CallKind>)>, expected, empties: usize| Predicted {
        iterations: executed.len() + empties,
        executed,
        expected,
    };
    for (place, batch) in case.batches.iter().enumerate() {
        let requests = u32::try_from(place).expect("a short script") + 1;
        if batch.is_empty() {
            // An empty answer (no text, no call): told and asked again
            // once, within the iterations; a second in a row fails.
            if empty_in_row {
                return predicted(executed, Expected::EmptyAnswer, empties);
            }
            if max_iterations.is_some_and(|max| requests > max) {
                let limit = Expected::Limit {
                    exceeded: ExceededLimit::Iterations,
                    iterations: requests,
                    calls,
                };
                return predicted(executed, limit, empties);
            }
            empty_in_row = true;
            empties += 1;
            continue;
        }
        empty_in_row = false;
        let iterations = requests;
        let would_be = calls + batch.len() as u32;
        let exceeded = if max_iterations.is_some_and(|max| iterations > max) {
            Some(ExceededLimit::Iterations)
        } else if max_calls.is_some_and(|max| would_be > max) {
            Some(ExceededLimit::Calls)
        } else {
            None
        };
        if let Some(exceeded) = exceeded {
            let limit = Expected::Limit {
                exceeded,
                iterations,
                calls: would_be,
            };
            return predicted(executed, limit, empties);
        }
        if batch
            .iter()
            .any(|kind| matches!(kind, CallKind::CancelsTurn))
        {
            return predicted(executed, Expected::Interrupted, empties);
        }
        executed.push((place, batch.clone()));
        calls = would_be;
    }
    let end = if case.ends_with_answer {
        Expected::Answer("done".into())
    } else {
        Expected::ModelFailed
    };
    predicted(executed, end, empties)
}

fn script(case: &Case) -> Vec<ModelResponse> {
    let mut script: Vec<ModelResponse> = case
        .batches
        .iter()
        .enumerate()
        .map(|(b, kinds)| {
            batch(kinds.iter().enumerate().map(|(i, kind)| {
                let (name, arguments, _) = kind.call();
                call(format!("call_{b}_{i}"), name, arguments)
            }))
        })
        .collect();
    if case.ends_with_answer {
        script.push(answer("done"));
    }
    script
}

fn run_case(case: &Case) -> Result<(), TestCaseError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let failing = tool::Definition::from_fn(
            tool::ToolInfo::without_parameters("flaky", "Always fails."),
            |_arguments: Value, _context| async move { Err::<Value, _>("flaky failed\nagain") },
        );
        let stop = tool::Definition::from_fn(
            tool::ToolInfo::without_parameters("stop", "Cancels the turn."),
            |_arguments: Value, context: tool::CallContext| async move {
                context.cancellation().cancel();
                std::future::pending::<Result<tool::ToolOutput, tool::BoxError>>().await
            },
        );
        let session = bind_tools(
            [
                weather_tool(Arc::default()),
                echo_tool("echo"),
                panicking_tool("boom", BOOM),
                failing,
                stop,
            ],
            case.limits,
        )
        .await;
        let model = ScriptedModel::new(script(case));
        let mut conversation = vec![Message::user("go")];
        let result = session
            .run_turn(&model, &mut conversation, &CancellationToken::new())
            .await;

        // The invariant, whatever the outcome.
        check_every_call_answered(&conversation).map_err(TestCaseError::fail)?;

        let Predicted {
            executed,
            expected,
            iterations,
        } = predict(case);
        match (&result, &expected) {
            (Ok(outcome), Expected::Answer(answer)) => {
                prop_assert_eq!(
                    &outcome.status,
                    &TurnStatus::Completed {
                        answer: answer.clone()
                    }
                );
                prop_assert_eq!(outcome.messages(&conversation), &conversation[1..]);
                prop_assert_eq!(outcome.stats.iteration_count() as usize, iterations);
            }
            (
                Err(TurnError::ToolLimit(ToolLimitError {
                    kind: exceeded,
                    iterations,
                    calls,
                    ..
                })),
                Expected::Limit {
                    exceeded: want_exceeded,
                    iterations: want_iterations,
                    calls: want_calls,
                },
            ) => {
                prop_assert_eq!(exceeded, want_exceeded);
                prop_assert_eq!(iterations, want_iterations);
                prop_assert_eq!(calls, want_calls);
            }
            (Err(TurnError::Model { .. }), Expected::ModelFailed) => {}
            (Err(TurnError::EmptyAnswer { .. }), Expected::EmptyAnswer) => {}
            (Ok(outcome), Expected::Interrupted) => {
                prop_assert_eq!(&outcome.status, &TurnStatus::Interrupted);
                prop_assert_eq!(outcome.messages(&conversation), &conversation[1..]);
                prop_assert_eq!(outcome.stats.iteration_count() as usize, iterations);
            }
            _ => prop_assert!(false, "got {:?}, expected {:?}", result, expected),
        }

        // Exactly the executed batches are in the conversation, each call
        // with the result its kind calls for.
        let batches_in_conversation = conversation
            .iter()
            .filter(|m| m.as_assistant().is_some_and(|a| a.has_tool_calls()))
            .count();
        prop_assert_eq!(batches_in_conversation, executed.len());
        let want: Vec<(String, bool)> = executed
            .iter()
            .flat_map(|(b, kinds)| {
                kinds
                    .iter()
                    .enumerate()
                    .map(move |(i, kind)| (format!("call_{b}_{i}"), kind.call().2))
            })
            .collect();
        let got: Vec<(String, bool)> = tool_results(&conversation)
            .iter()
            .map(|r| (r.tool_call_id.clone(), r.is_error))
            .collect();
        prop_assert_eq!(got, want);
        for result in tool_results(&conversation) {
            prop_assert!(has_no_control_characters(&result.text()));
        }
        Ok(())
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn every_tool_call_has_exactly_one_result_whatever_the_script(case in case()) {
        quiet_expected_panics();
        run_case(&case)?;
    }
}

#[test]
fn the_invariant_check_catches_broken_conversations() {
    let calls = vec![call("a", "echo", "{}"), call("b", "echo", "{}")];
    let asked = Message::tool_calls(None, calls);
    let ok = |id: &str| Message::Tool(ToolResult::ok(id, "x"));

    let valid = vec![Message::user("u"), asked.clone(), ok("a"), ok("b")];
    assert_eq!(check_every_call_answered(&valid), Ok(()));

    let missing = vec![asked.clone(), ok("a")];
    assert!(check_every_call_answered(&missing).is_err());
    let doubled = vec![asked.clone(), ok("a"), ok("b"), ok("b")];
    assert!(check_every_call_answered(&doubled).is_err());
    let orphan = vec![asked.clone(), ok("a"), ok("b"), ok("c")];
    assert!(check_every_call_answered(&orphan).is_err());
    let out_of_order = vec![asked.clone(), ok("b"), ok("a")];
    assert!(check_every_call_answered(&out_of_order).is_err());
    let detached = vec![asked, ok("a"), Message::user("u"), ok("b")];
    assert!(check_every_call_answered(&detached).is_err());
}
