use agent_loop::{Definition, Validated};

fn list(definition: Definition<Validated>) {
    let _ = definition.tools();
}

fn main() {}
