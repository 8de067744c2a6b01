//! The turn's budgets (`requests`, `input_tokens`, `output_tokens`,
//! `total_tokens`, `cost_microdollars`): checked before each model request against what the
//! turn used so far; a budget reached fails the turn before sending, with
//! every batch that ran kept and answered.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::turn_common::*;
use agent_loop::conversation::{ModelResponse, Usage};
use agent_loop::limits::Limit;
use agent_loop::mode::Mode;
use agent_loop::turn::{
    Budget, BudgetError, ResumeErrorKind, ScriptedModel, TurnError, TurnStatus,
};
use agent_loop::{Definition, ToolLimits};
use tokio_util::sync::CancellationToken;

/// `batches` batches of one `ping` call (ids `call_1`, …), each response
/// reporting `usage`, then an answer.
fn pings(batches: usize, usage: Usage) -> ScriptedModel {
    let mut script: Vec<ModelResponse> = (1..=batches)
        .map(|b| batch([call(format!("call_{b}"), "ping", "{}")]).with_usage(usage))
        .collect();
    script.push(answer("done").with_usage(usage));
    ScriptedModel::new(script)
}

async fn budget_error(limits: ToolLimits, usage: Usage) -> (BudgetError, usize, usize, usize) {
    let invocations = Arc::new(AtomicUsize::new(0));
    let session = bind_tools([counting_tool("ping", Arc::clone(&invocations))], limits).await;
    let model = pings(10, usage);
    let mut conversation = user_says("keep pinging");
    let error = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect_err("a budget is reached");
    assert_every_call_answered(&conversation);
    let TurnError::Budget(error) = error else {
        panic!("{error:?}")
    };
    (
        error,
        model.requests().len(),
        invocations.load(Ordering::SeqCst),
        conversation.len(),
    )
}

#[tokio::test]
async fn a_request_budget_of_two_sends_two_requests_and_refuses_the_third() {
    let (error, requests, ran, messages) =
        budget_error(ToolLimits::new().requests(2), Usage::new(10, 1)).await;
    assert_eq!(
        (
            error.budget,
            error.used,
            error.max,
            error.requests,
            error.usage
        ),
        (
            Budget::Requests,
            2,
            Limit::at_most(2).unwrap(),
            2,
            Usage::new(20, 2)
        )
    );
    assert_eq!((requests, ran), (2, 2));
    // The user message, then two batches of a call and its result.
    assert_eq!(messages, 5);
    assert_eq!(
        error.to_string(),
        "turn: budget reached (requests): the turn used 2 of at most 2 after 2 model requests; the next request was not sent"
    );
}

#[tokio::test]
async fn each_token_budget_is_reached_at_or_over_what_the_provider_reported() {
    // 60 in and 5 out per response.
    let usage = Usage::new(60, 5);
    let cases = [
        // 60, then 120 ≥ 100: the third request is not sent.
        (
            ToolLimits::new().input_tokens(100),
            Budget::InputTokens,
            120,
            2,
        ),
        // Exactly at the budget after two responses: reached.
        (
            ToolLimits::new().output_tokens(10),
            Budget::OutputTokens,
            10,
            2,
        ),
        // 65, 130, 195 ≥ 150 after three.
        (
            ToolLimits::new().total_tokens(150),
            Budget::TotalTokens,
            195,
            3,
        ),
    ];
    for (limits, budget, used, sent) in cases {
        let (error, requests, ran, _) = budget_error(limits, usage).await;
        assert_eq!((error.budget, error.used), (budget, used), "{budget}");
        assert_eq!((requests, ran, error.requests as usize), (sent, sent, sent));
        let sent = sent as u64;
        assert_eq!(error.usage, Usage::new(60 * sent, 5 * sent));
    }
}

#[tokio::test]
async fn a_turn_within_its_budgets_completes_and_the_first_request_is_always_sent() {
    let invocations = Arc::new(AtomicUsize::new(0));
    let session = bind_tools(
        [counting_tool("ping", Arc::clone(&invocations))],
        ToolLimits::new().requests(3).total_tokens(1_000),
    )
    .await;
    let model = pings(2, Usage::new(100, 10));
    let mut conversation = user_says("ping twice");
    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("three requests, 330 tokens: within both budgets");
    assert!(matches!(outcome.status, TurnStatus::Completed { .. }));
    assert_eq!(model.requests().len(), 3);
    assert_eq!(outcome.stats.usage.total_tokens(), 330);
}

#[tokio::test]
async fn a_mode_inherits_the_base_budgets_and_overrides_one() {
    let definition = Definition::builder()
        .name("budgets")
        .tool(counting_tool("ping", Arc::new(AtomicUsize::new(0))))
        .tool_limits(ToolLimits::new().requests(5).input_tokens(1_000))
        .mode(Mode::new("long").tool_limits(ToolLimits::new().input_tokens(Limit::Unlimited)))
        .initial_mode("long")
        .build()
        .validate()
        .expect("valid");
    let bound = bind(&definition).await;
    let base = bound.base_mode().tool_limits;
    assert_eq!(
        (base.requests.get(), base.input_tokens.get()),
        (Some(5), Some(1_000))
    );
    assert_eq!(base.output_tokens, Limit::Unlimited);
    let long = bound.mode("long").unwrap().tool_limits;
    assert_eq!(
        (long.requests.get(), long.input_tokens),
        (Some(5), Limit::Unlimited)
    );
}

#[test]
fn budgets_read_and_write_the_config_form() {
    let json =
        r#"{"requests":3,"input_tokens":"unlimited","output_tokens":500,"total_tokens":9000}"#;
    let limits: ToolLimits = serde_json::from_str(json).unwrap();
    assert_eq!(
        limits,
        ToolLimits::new()
            .requests(3)
            .input_tokens(Limit::Unlimited)
            .output_tokens(500)
            .total_tokens(9000)
    );
    assert_eq!(serde_json::to_string(&limits).unwrap(), json);
    let error = serde_path_to_error::deserialize::<_, ToolLimits>(
        &mut serde_json::Deserializer::from_str(r#"{"total_tokens": 0}"#),
    )
    .unwrap_err();
    assert_eq!(error.path().to_string(), "total_tokens");
    assert!(
        error.to_string().contains("invalid `total_tokens` limit 0"),
        "{error}"
    );
}

/// With `BudgetPolicy::Pause` a reached budget pauses the turn before the
/// request (nothing pending); a resume with a raised budget sends that
/// request and goes on, the counts carried across.
#[tokio::test]
async fn a_budget_pauses_the_turn_and_a_resume_with_a_raised_budget_goes_on() {
    use agent_loop::turn::{BudgetPolicy, Resume, TurnOptions};
    let invocations = Arc::new(AtomicUsize::new(0));
    let session = bind_tools(
        [counting_tool("ping", Arc::clone(&invocations))],
        ToolLimits::new().total_tokens(100),
    )
    .await;
    // 65 tokens a response: the budget is reached after two.
    let model = pings(3, Usage::new(60, 5));
    let mut conversation = user_says("keep pinging");
    let outcome = session
        .run_turn(
            &model,
            &mut conversation,
            TurnOptions::builder()
                .budget_policy(BudgetPolicy::Pause)
                .build(),
        )
        .await
        .expect("pauses");
    let TurnStatus::Paused(paused) = outcome.status else {
        panic!("{:?}", outcome.status)
    };
    assert_eq!(paused.budget, Some(Budget::TotalTokens));
    assert!(paused.pending.is_empty());
    assert_eq!(
        (
            paused.requests,
            paused.iterations,
            paused.calls,
            paused.message_index
        ),
        (2, 2, 2, 5)
    );
    assert_eq!(paused.usage, Usage::new(120, 10));
    assert_eq!(model.requests().len(), 2);
    assert_every_call_answered(&conversation);

    // Still over the same budget: pauses again at once, nothing sent.
    let same = Resume::new((*paused).clone(), []);
    let again = session
        .run_turn(
            &model,
            &mut conversation,
            TurnOptions::builder()
                .resume(&same)
                .budget_policy(BudgetPolicy::Pause)
                .build(),
        )
        .await
        .expect("pauses again");
    let TurnStatus::Paused(again) = again.status else {
        panic!("{:?}", again.status)
    };
    assert_eq!(model.requests().len(), 2);
    // A pause goes on once: the one that resume claimed is refused now,
    // and the one it paused with (another id) goes on.
    assert_ne!(again.pause_id, paused.pause_id);
    let claimed = session
        .run_turn(
            &model,
            &mut conversation,
            TurnOptions::builder()
                .resume(&Resume::new((*paused).clone(), []))
                .budget_policy(BudgetPolicy::Pause)
                .build(),
        )
        .await;
    assert!(
        matches!(&claimed, Err(TurnError::Resume(error)) if error.kind == ResumeErrorKind::Claimed),
        "{claimed:?}"
    );

    let raised = Resume::new(*again, []).with_limits(ToolLimits::new().total_tokens(1_000));
    let outcome = session
        .run_turn(
            &model,
            &mut conversation,
            TurnOptions::builder().resume(&raised).build(),
        )
        .await
        .expect("goes on");
    assert_eq!(outcome.answer(), Some("done"));
    assert_eq!(model.requests().len(), 4);
    assert_eq!(invocations.load(Ordering::SeqCst), 3);
    // Usage of the whole turn: four responses of 65.
    assert_eq!(outcome.stats.usage.total_tokens(), 260);
}

/// The cost budget (`cost_microdollars`): what the turn's usage cost at
/// its prices, checked before each request like the token budgets.
#[tokio::test]
async fn a_cost_budget_is_reached_at_the_turns_prices_and_a_resume_with_a_raised_one_goes_on() {
    use agent_loop::conversation::{Cost, Prices};
    use agent_loop::turn::{BudgetPolicy, Resume, TurnOptions};
    let invocations = Arc::new(AtomicUsize::new(0));
    // $1 in, $10 out per million; a response of 1,000 in and 100 out costs
    // $0.001 + $0.001 = 2,000 microdollars: the budget of 5,000 is reached
    // after three.
    let prices = Prices::new(1.0, 10.0);
    let session = bind_tools(
        [counting_tool("ping", Arc::clone(&invocations))],
        ToolLimits::new().cost_microdollars(5_000),
    )
    .await;
    let model = pings(4, Usage::new(1_000, 100));
    let mut conversation = user_says("keep pinging");
    let error = session
        .run_turn(
            &model,
            &mut conversation,
            TurnOptions::builder().prices(prices).build(),
        )
        .await
        .expect_err("the cost budget is reached");
    let TurnError::Budget(reached) = &error else {
        panic!("{error:?}")
    };
    assert_eq!(
        (reached.budget, reached.used, reached.max, reached.requests),
        (
            Budget::CostMicrodollars,
            6_000,
            Limit::at_most(5_000).unwrap(),
            3
        )
    );
    assert_eq!(
        error.to_string(),
        "turn: budget reached (cost_microdollars): the turn's tokens cost $0.006000 of at most $0.005000 after 3 model requests; the next request was not sent"
    );
    assert_eq!(model.requests().len(), 3);
    assert_every_call_answered(&conversation);

    // Without prices a cost budget cannot be kept: refused before sending.
    let unpriced = pings(1, Usage::new(1_000, 100));
    let mut conversation = user_says("keep pinging");
    let error = session
        .run_turn(&unpriced, &mut conversation, &CancellationToken::new())
        .await
        .expect_err("no prices");
    assert!(matches!(error, TurnError::Unpriced), "{error:?}");
    assert!(unpriced.requests().is_empty());

    // Paused instead, then resumed with a raised budget: the turn goes on
    // to its answer, and its cost is the whole turn's.
    let model = pings(4, Usage::new(1_000, 100));
    let mut conversation = user_says("keep pinging");
    let outcome = session
        .run_turn(
            &model,
            &mut conversation,
            TurnOptions::builder()
                .prices(prices)
                .budget_policy(BudgetPolicy::Pause)
                .build(),
        )
        .await
        .expect("pauses");
    let TurnStatus::Paused(paused) = outcome.status else {
        panic!("{:?}", outcome.status)
    };
    assert_eq!(paused.budget, Some(Budget::CostMicrodollars));
    assert_eq!(
        outcome.stats.cost,
        Some(Cost::from_picodollars(6_000_000_000))
    );
    let raised = Resume::new(*paused, []).with_limits(ToolLimits::new().cost_microdollars(50_000));
    let outcome = session
        .run_turn(
            &model,
            &mut conversation,
            TurnOptions::builder()
                .resume(&raised)
                .prices(prices)
                .build(),
        )
        .await
        .expect("goes on");
    assert_eq!(outcome.answer(), Some("done"));
    assert_eq!(model.requests().len(), 5);
    // Five responses of 2,000 microdollars: the usage (and so the cost)
    // carried across the pause is the whole turn's.
    assert_eq!(outcome.stats.usage, Usage::new(5_000, 500));
    assert_eq!(outcome.stats.cost.map(Cost::usd), Some(0.01));
}

/// A model that knows its window (`Model::context_window`), as the HTTP
/// models know theirs from the catalog.
struct Windowed(ScriptedModel, u32);

#[async_trait::async_trait]
impl agent_loop::turn::Model for Windowed {
    async fn respond(
        &self,
        request: agent_loop::turn::ModelRequest<'_>,
    ) -> Result<ModelResponse, agent_loop::turn::ModelError> {
        self.0.respond(request).await
    }

    fn context_window(&self) -> Option<u32> {
        Some(self.1)
    }
}

/// The context budget is never larger than the model's window: unset (or
/// unlimited) in the mode, it is the window; set smaller, the mode's.
#[tokio::test]
async fn the_context_budget_is_the_smaller_of_the_modes_and_the_models_window() {
    use agent_loop::turn::TurnOptions;
    // About 2,500 tokens of text: over a window of 1,000.
    let long = "word ".repeat(2_500);
    let reached = |limits: ToolLimits, window: u32, options: TurnOptions<'static>| {
        let long = long.clone();
        async move {
            let session = bind_tools([counting_tool("ping", Arc::default())], limits).await;
            let model = Windowed(ScriptedModel::new([answer("done")]), window);
            let mut conversation = user_says(&long);
            let result = session.run_turn(&model, &mut conversation, options).await;
            (result, model.0.requests().len())
        }
    };
    let (result, sent) = reached(ToolLimits::new(), 1_000, TurnOptions::default()).await;
    let Err(TurnError::Budget(error)) = result else {
        panic!("{result:?}")
    };
    assert_eq!(
        (error.budget, error.max, sent),
        (Budget::ContextTokens, Limit::at_most(1_000).unwrap(), 0)
    );
    // An explicit "unlimited" cannot go past the window either.
    let (result, _) = reached(
        ToolLimits::new().context_tokens(Limit::Unlimited),
        1_000,
        TurnOptions::default(),
    )
    .await;
    assert!(
        matches!(result, Err(TurnError::Budget(ref e)) if e.max == Limit::at_most(1_000).unwrap()),
        "{result:?}"
    );
    // The mode's smaller budget wins over a larger window.
    let (result, _) = reached(
        ToolLimits::new().context_tokens(500),
        100_000,
        TurnOptions::default(),
    )
    .await;
    assert!(
        matches!(result, Err(TurnError::Budget(ref e)) if e.max == Limit::at_most(500).unwrap()),
        "{result:?}"
    );
    // A window that fits, or the options' own window over the model's.
    let (result, sent) = reached(ToolLimits::new(), 100_000, TurnOptions::default()).await;
    assert!(result.is_ok() && sent == 1, "{result:?}");
    let (result, sent) = reached(
        ToolLimits::new(),
        1_000,
        TurnOptions::builder().context_window(100_000).build(),
    )
    .await;
    assert!(result.is_ok() && sent == 1, "{result:?}");
}
