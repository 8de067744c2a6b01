use agent_loop::tool;

fn call(search: tool::Definition) {
    let _ = search.invoke(serde_json::json!({}));
}

fn main() {}
