use agent_loop::{Bindings, Definition, LoopId, SessionId};

fn main() {
    let definition = Definition::builder().name("agent").build();
    let _ = definition.bind(Bindings::new(SessionId::new(), LoopId::new()));
}
