//! The integration tests, as modules of one test binary so the suite links
//! once (`cargo test --test it`); the trybuild cases stay in `tests/ui.rs`.
//! Each module is named after the behaviour it checks; `common` and
//! `arbitrary_json` are helpers shared by several, and `turn_common`,
//! `wire_rules` and `properties` come from the `agent-loop-test` crate,
//! under the same names (`properties` holds what the fuzz targets check,
//! which the `*_arbitrary_*` modules check here, on stable).

use agent_loop_test::{properties, turn_common, wire_rules};

mod arbitrary_json;
mod bind_arbitrary_schemas;
mod bind_changing_tools;
mod bind_collisions;
mod bind_discovered_tools;
mod bind_extra_tools;
mod bind_factories;
mod bind_ids;
mod bind_tool_info;
mod bound_loop;
mod builder_copies;
mod call_pipeline;
mod cassette_replay;
mod common;
mod context_compaction;
mod context_estimate;
mod deep_values;
mod error_pattern;
mod layers;
#[cfg(feature = "mcp")]
mod mcp_arbitrary_results;
#[cfg(feature = "mcp")]
mod mcp_in_process;
#[cfg(feature = "mcp")]
mod mcp_list_changed;
#[cfg(feature = "mcp")]
mod mcp_python_servers;
#[cfg(feature = "mcp")]
mod mcp_real_servers;
#[cfg(feature = "mcp")]
mod mcp_session_life;
mod middleware_order;
#[cfg(feature = "anthropic")]
mod model_anthropic;
#[cfg(all(feature = "openai", feature = "anthropic", feature = "gemini"))]
mod model_catalog;
#[cfg(any(feature = "openai", feature = "anthropic", feature = "gemini"))]
mod model_common;
#[cfg(all(feature = "openai", feature = "anthropic", feature = "gemini"))]
mod model_cost;
#[cfg(all(feature = "openai", feature = "anthropic", feature = "gemini"))]
mod model_effort;
#[cfg(feature = "openai")]
mod model_error_reports;
#[cfg(all(feature = "openai", feature = "anthropic", feature = "gemini"))]
mod model_every_provider;
#[cfg(feature = "gemini")]
mod model_gemini;
#[cfg(all(feature = "openai", feature = "anthropic", feature = "gemini"))]
mod model_native_schemas;
#[cfg(feature = "openai")]
mod model_openai;
#[cfg(feature = "openai")]
mod model_refusals;
#[cfg(feature = "openai")]
mod model_responses;
#[cfg(all(feature = "openai", feature = "anthropic"))]
mod model_retries;
#[cfg(all(feature = "openai", feature = "anthropic"))]
mod model_sse_bytes;
#[cfg(all(feature = "openai", feature = "anthropic"))]
mod model_stream;
#[cfg(all(feature = "openai", feature = "anthropic", feature = "gemini"))]
mod model_switch;
#[cfg(all(feature = "openai", feature = "gemini"))]
mod model_tool_schemas;
#[cfg(all(feature = "openai", feature = "anthropic"))]
mod model_transport;
mod send_sync;
#[cfg(all(feature = "mcp", feature = "mcp-server"))]
mod serve_mcp;
mod testing_schema_model;
mod tool_limits;
mod tool_name_sanitize;
mod turn_agents;
mod turn_arbitrary_calls;
mod turn_arbitrary_results;
mod turn_budgets;
mod turn_call_context;
mod turn_call_timeouts;
mod turn_cancellation;
mod turn_content_results;
mod turn_edges;
mod turn_empty_answers;
mod turn_error_results;
mod turn_events;
mod turn_fidelity;
mod turn_gate;
mod turn_invariant;
mod turn_limits;
mod turn_modes;
mod turn_native_output;
mod turn_panics;
mod turn_parallel;
mod turn_pause;
mod turn_pause_arbitrary;
mod turn_pause_fixture;
mod turn_result_bytes;
mod turn_steps_journal;
mod turn_structured_output;
mod turn_tool_call_ids;
mod turn_tracing;
mod turn_typed_tools;
mod validate;
mod wire_anthropic;
mod wire_arbitrary_payloads;
mod wire_arguments_round_trip;
mod wire_export_rules;
mod wire_mcp;
mod wire_openai;
mod wire_quirks;
mod wire_real;
mod wire_real_mutations;
mod wire_real_rules;
#[cfg(all(feature = "openai", feature = "anthropic"))]
mod wire_real_streams;
mod wire_stream_arbitrary_events;
