use agent_loop::{Definition, Mode};

fn main() {
    let _ = Definition::builder()
        .name("agent")
        .mode(Mode::new("plan"))
        .initial_mode("plan")
        .initial_mode("act")
        .build();
}
