use agent_loop::Definition;

fn main() {
    let definition = Definition::builder().name("agent").build();
    let _ = definition.middlewares();
}
