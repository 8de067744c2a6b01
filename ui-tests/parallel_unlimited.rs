use agent_loop::{Limit, ToolLimits};

fn main() {
    // `parallel` is a count of calls running at once: never unlimited.
    let _ = ToolLimits::new().parallel(Limit::Unlimited);
}
