use agent_loop::Definition;
use agent_loop::tool::NameRules;

fn main() {
    let _ = Definition::builder()
        .name("agent")
        .name_rules(NameRules::OpenAi)
        .name_rules(NameRules::default())
        .build();
}
