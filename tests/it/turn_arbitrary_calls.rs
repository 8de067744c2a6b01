//! The turn property (`properties::turn`): after any stored history, for
//! any calls a model asks for, under any limits, with or without a
//! structured output, every tool call id has exactly one result right
//! after its batch, the conversation exports within both providers' rules,
//! and the next turn takes it as it is. The `turn` fuzz target checks the
//! same on arbitrary bytes.

use proptest::prelude::*;

use crate::properties::turn::*;

fn id() -> impl Strategy<Value = Id> {
    prop_oneof![
        1 => Just(Id::Empty),
        2 => any::<u8>().prop_map(Id::Counted),
        2 => "[a-zA-Z0-9_.:-]{1,50}".prop_map(Id::Any),
        1 => any::<String>().prop_map(Id::Any),
    ]
}

fn name() -> impl Strategy<Value = Name> {
    prop_oneof![
        4 => Just(Name::Echo),
        1 => Just(Name::Fail),
        1 => Just(Name::Panic),
        1 => Just(Name::Cancel),
        1 => Just(Name::Image),
        1 => Just(Name::Output),
        1 => "[a-z .]{0,70}".prop_map(Name::Any),
    ]
}

fn arguments() -> impl Strategy<Value = Arguments> {
    prop_oneof![
        1 => Just(Arguments::Empty),
        3 => any::<String>().prop_map(Arguments::Text),
        1 => any::<String>().prop_map(Arguments::Answer),
        1 => Just(Arguments::WrongType),
        1 => prop_oneof![
            Just("null".to_owned()),
            Just("[1]".to_owned()),
            Just(r#"{"text": "h"#.to_owned()),
            any::<String>(),
        ]
        .prop_map(Arguments::Any),
    ]
}

fn call() -> impl Strategy<Value = Call> {
    (id(), name(), arguments()).prop_map(|(id, tool, arguments)| Call {
        id,
        tool,
        arguments,
    })
}

fn response() -> impl Strategy<Value = Response> {
    (
        prop_oneof![Just(String::new()), Just(" \n".to_owned()), any::<String>()],
        proptest::collection::vec(call(), 0..MAX_CALLS),
        proptest::bool::weighted(0.1),
    )
        .prop_map(|(text, calls, cut_off)| Response {
            text,
            calls,
            cut_off,
        })
}

fn history_call() -> impl Strategy<Value = HistoryCall> {
    (id(), name(), any::<bool>()).prop_map(|(id, tool, answered)| HistoryCall {
        id,
        tool,
        answered,
    })
}

fn case() -> impl Strategy<Value = TurnCase> {
    let output = proptest::option::weighted(
        0.3,
        (any::<bool>(), any::<bool>()).prop_map(|(run_all, native)| OutputCase { run_all, native }),
    );
    (
        proptest::collection::vec(proptest::collection::vec(history_call(), 0..4), 0..3),
        proptest::collection::vec(response(), 0..MAX_BATCHES),
        any::<bool>(),
        (0_u8..6, 0_u8..20, 0_u8..5),
        output,
    )
        .prop_map(
            |(history, responses, ends_with_answer, (iterations, calls, parallel), output)| {
                TurnCase {
                    history,
                    responses,
                    ends_with_answer,
                    iterations,
                    calls,
                    parallel,
                    output,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn any_turn_answers_every_call_once_and_exports_within_the_rules(case in case()) {
        check_turn(&case).map_err(TestCaseError::fail)?;
    }
}
