//! A turn's rules for a batch of calls, before any runs: a response the
//! output limit cut off runs none of its calls, and the turn's structured
//! output (the control tool's call) decides what becomes of the others.
//! The call pipeline (`bind::call`) prepares each call; these rules are
//! the turn's, which alone has a control tool.

use crate::bind::call::Arguments;
use crate::bind::call::{Prepared, cut_off_error, not_run};
use crate::conversation::ToolCall;
use crate::tool::STRUCTURED_OUTPUT_TOOL_NAME;
use crate::turn::context::TurnContext;

impl TurnContext<'_> {
    /// Steps 1 and 2 of the call pipeline for every call of a batch, with
    /// the batch's rules: when `cut_off` (the response was cut off by the
    /// output limit, so its arguments may be incomplete) none runs;
    /// otherwise the first call of the control tool that passes its schema
    /// is the turn's output and later ones are answered "not run", and
    /// when the turn's output ends a batch
    /// ([`MixedBatch::EndEarly`](crate::turn::MixedBatch::EndEarly), the default) a batch
    /// with the output runs none of its other calls either.
    pub(super) fn prepare_batch(&self, batch: &[&ToolCall], cut_off: bool) -> Vec<Prepared<'_>> {
        let table = self.table();
        let output_ends_batch = self.output.ends_batch();
        if cut_off {
            return batch
                .iter()
                .map(|call| Prepared::Answered(cut_off_error(&call.name)))
                .collect();
        }
        if !table.has_control() {
            // No control tool: each call stands alone.
            return batch
                .iter()
                .map(|call| {
                    table.gate(
                        call,
                        table.prepare(&call.name, Arguments::Text(&call.arguments)),
                    )
                })
                .collect();
        }
        let is_control = |call: &ToolCall| call.name == STRUCTURED_OUTPUT_TOOL_NAME;
        // The control calls first: whether the batch has its output
        // decides what becomes of the others.
        let mut has_output = false;
        let mut prepared: Vec<Option<Prepared<'_>>> = batch
            .iter()
            .map(|call| {
                if !is_control(call) {
                    return None;
                }
                Some(match table.prepare(&call.name, Arguments::Text(&call.arguments)) {
                    Prepared::Ready(_) if has_output => Prepared::Answered(not_run(
                        &call.name,
                        "not run: the turn already has its output from an earlier `structured_output` call",
                    )),
                    Prepared::Ready(ready) => {
                        has_output = true;
                        Prepared::Ready(ready)
                    }
                    answered => answered,
                })
            })
            .collect();
        batch
            .iter()
            .zip(&mut prepared)
            .map(|(call, prepared)| match prepared.take() {
                Some(prepared) => prepared,
                None if has_output && output_ends_batch => {
                    Prepared::Answered(not_run(&call.name, "not run: the turn has its output"))
                }
                None => match table.gate(
                    call,
                    table.prepare(&call.name, Arguments::Text(&call.arguments)),
                ) {
                    // The batch's output ends the turn: nothing waits.
                    Prepared::Pending(_) if has_output => {
                        Prepared::Answered(not_run(&call.name, "not run: the turn has its output"))
                    }
                    prepared => prepared,
                },
            })
            .collect()
    }
}
