use agent_loop::{Bound, Definition};

fn keep_after_drop(bound: Definition<Bound>) {
    let handle = bound.tools()[0].clone();
    drop(bound);
    let _ = handle.name();
}

fn main() {}
