use agent_loop::Definition;

fn main() {
    let _ = Definition::builder()
        .name("agent")
        .instructions("Be brief.")
        .instructions("Be thorough.")
        .build();
}
