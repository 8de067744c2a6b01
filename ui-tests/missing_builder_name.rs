use agent_loop::Definition;

fn main() {
    let _ = Definition::builder().build();
}
