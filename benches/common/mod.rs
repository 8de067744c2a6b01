//! What the benches share: the tool schema every benchmarked tool declares.

use serde_json::{Value, json};

/// A small, typical tool schema: two properties, one required.
pub fn parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "city": { "type": "string", "description": "City name." },
            "days": { "type": "integer", "minimum": 1, "maximum": 14 }
        },
        "required": ["city"]
    })
}
