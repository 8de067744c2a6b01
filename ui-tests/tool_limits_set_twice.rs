use agent_loop::{Definition, ToolLimits};

fn main() {
    let _ = Definition::builder()
        .name("agent")
        .tool_limits(ToolLimits::default())
        .tool_limits(ToolLimits::default())
        .build();
}
