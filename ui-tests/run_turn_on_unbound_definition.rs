use agent_loop::turn::ScriptedModel;
use agent_loop::{Definition, Validated};
use tokio_util::sync::CancellationToken;

fn run(definition: Definition<Validated>) {
    let model = ScriptedModel::new([]);
    let mut conversation = Vec::new();
    let _ = definition.run_turn(&model, &mut conversation, &CancellationToken::new());
}

fn main() {}
