//! [`generate`]: a JSON value made from a JSON Schema, seeded, with the
//! keywords it could not satisfy named.

use serde_json::{Map, Value, json};

/// A value made from a schema, and what of the schema it may not satisfy.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Generated {
    /// The value.
    pub value: Value,
    /// Each keyword the generator could not honour, as
    /// `path: keyword` (`/properties/code: pattern`): the value may fail
    /// the schema there. Empty when it honoured every keyword it met.
    pub unsatisfied: Vec<String>,
}

/// How deep the generator goes into nested objects and arrays (and
/// `$ref`s): a recursive schema ends in an empty object or array here.
const MAX_DEPTH: usize = 8;

/// A value for `schema` (a JSON Schema of draft 2020-12 or 7, as tool
/// parameters are written), from the seed `seed`: the same seed and schema
/// give the same value.
///
/// It honours `type` (the first of a list that is not `null`), `enum`,
/// `const`, `properties` with `required` (every required property, and
/// each optional one with probability 1/2), `additionalProperties`,
/// `items` and `prefixItems`, `minItems` / `maxItems`, `minLength` /
/// `maxLength`, `minimum` / `maximum` and their exclusive forms,
/// `multipleOf`, `format` (`date-time`, `date`, `time`, `email`, `uri`,
/// `uuid`, `ipv4`, `hostname`), `default`, `anyOf` / `oneOf` (the first
/// branch), `allOf` (objects merged) and `$ref` to `#/$defs/..` or
/// `#/definitions/..`. A `pattern`, `not`, `if`, `dependentRequired` or
/// `uniqueItems` it meets is named in [`Generated::unsatisfied`] rather
/// than skipped silently; so is every keyword the value fails in the end
/// (the value is checked against the schema with `jsonschema`, each
/// failing keyword named by its schema path, `/properties/days/maximum:
/// invalid`): an empty list means the value passes the schema.
pub fn generate(schema: &Value, seed: u64) -> Generated {
    let mut generator = Generator {
        root: schema,
        random: fastrand::Rng::with_seed(seed),
        unsatisfied: Vec::new(),
    };
    let value = generator.value(schema, "", 0);
    let mut unsatisfied = generator.unsatisfied;
    // Whatever the generator got wrong is named too: the value checked
    // against the schema, each failing keyword by its place in the schema.
    if let Ok(validator) = jsonschema::validator_for(schema) {
        for error in validator.iter_errors(&value) {
            let keyword = error.schema_path().to_string();
            let note = format!("{keyword}: invalid");
            if !unsatisfied.contains(&note) {
                unsatisfied.push(note);
            }
        }
    }
    Generated { value, unsatisfied }
}

struct Generator<'r> {
    /// The whole schema, which `$ref`s point into.
    root: &'r Value,
    random: fastrand::Rng,
    unsatisfied: Vec<String>,
}

impl<'r> Generator<'r> {
    fn note(&mut self, path: &str, keyword: &str) {
        let at = if path.is_empty() { "/" } else { path };
        self.unsatisfied.push(format!("{at}: {keyword}"));
    }

    /// The schema `#/$defs/name` (or `#/definitions/name`) points at.
    fn resolve(&self, reference: &str) -> Option<&'r Value> {
        crate::support::json::resolve_local_reference(self.root, reference)
    }

    fn value(&mut self, schema: &Value, path: &str, depth: usize) -> Value {
        let Value::Object(schema) = schema else {
            // `true` (anything) or `false` (nothing can pass).
            if *schema == Value::Bool(false) {
                self.note(path, "false");
            }
            return Value::Null;
        };
        for keyword in [
            "pattern",
            "not",
            "if",
            "dependentRequired",
            "uniqueItems",
            "patternProperties",
        ] {
            if schema.contains_key(keyword)
                && !(keyword == "uniqueItems" && schema[keyword] == json!(false))
            {
                self.note(path, keyword);
            }
        }
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            return match self.resolve(reference) {
                Some(target) if depth < MAX_DEPTH => self.value(target, path, depth + 1),
                _ => {
                    self.note(path, "$ref");
                    Value::Null
                }
            };
        }
        if let Some(constant) = schema.get("const") {
            return constant.clone();
        }
        if let Some(Value::Array(choices)) = schema.get("enum") {
            if choices.is_empty() {
                self.note(path, "enum");
                return Value::Null;
            }
            return choices[self.random.usize(..choices.len())].clone();
        }
        for keyword in ["anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = schema.get(keyword)
                && let Some(first) = branches.iter().find(|branch| !is_null_type(branch))
            {
                return self.value(first, path, depth + 1);
            }
        }
        if let Some(Value::Array(parts)) = schema.get("allOf") {
            let mut merged = schema.clone();
            merged.remove("allOf");
            for part in parts {
                let part = match part.get("$ref").and_then(Value::as_str) {
                    Some(reference) => self.resolve(reference).unwrap_or(part),
                    None => part,
                };
                if let Value::Object(part) = part {
                    merge_into(&mut merged, part);
                }
            }
            return self.value(&Value::Object(merged), path, depth + 1);
        }
        let kind = match schema.get("type") {
            Some(Value::String(kind)) => kind.as_str(),
            Some(Value::Array(kinds)) => kinds
                .iter()
                .filter_map(Value::as_str)
                .find(|kind| *kind != "null")
                .unwrap_or("null"),
            _ if schema.contains_key("properties") => "object",
            _ if schema.contains_key("items") => "array",
            _ => match schema.get("default") {
                Some(default) => return default.clone(),
                None => "string",
            },
        };
        match kind {
            "object" => self.object(schema, path, depth),
            "array" => self.array(schema, path, depth),
            "string" => self.string(schema, path),
            "integer" => self.number(schema, path, true),
            "number" => self.number(schema, path, false),
            "boolean" => Value::Bool(self.random.bool()),
            "null" => Value::Null,
            other => {
                self.note(path, &format!("type {other}"));
                Value::Null
            }
        }
    }

    fn object(&mut self, schema: &Map<String, Value>, path: &str, depth: usize) -> Value {
        let mut object = Map::new();
        if depth >= MAX_DEPTH {
            return Value::Object(object);
        }
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if let Some(Value::Object(properties)) = schema.get("properties") {
            for (name, property) in properties {
                if required.contains(&name.as_str()) || self.random.bool() {
                    let at = format!("{path}/properties/{name}");
                    object.insert(name.clone(), self.value(property, &at, depth + 1));
                }
            }
        }
        for name in &required {
            if !object.contains_key(*name) {
                // Required but not described: whatever additionalProperties allow.
                let at = format!("{path}/required/{name}");
                let value = match schema.get("additionalProperties") {
                    Some(additional @ Value::Object(_)) => self.value(additional, &at, depth + 1),
                    _ => Value::String("x".to_owned()),
                };
                object.insert((*name).to_owned(), value);
            }
        }
        if let Some(minimum) = schema.get("minProperties").and_then(Value::as_u64) {
            let mut extra = 0;
            while (object.len() as u64) < minimum {
                let name = format!("extra_{extra}");
                extra += 1;
                if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
                    self.note(path, "minProperties");
                    break;
                }
                object.insert(name, Value::String("x".to_owned()));
            }
        }
        Value::Object(object)
    }

    fn array(&mut self, schema: &Map<String, Value>, path: &str, depth: usize) -> Value {
        let minimum = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0) as usize;
        let maximum = schema
            .get("maxItems")
            .and_then(Value::as_u64)
            .map_or(minimum.max(2), |maximum| maximum as usize);
        if maximum < minimum {
            self.note(path, "maxItems");
        }
        if depth >= MAX_DEPTH {
            if minimum > 0 {
                self.note(path, "minItems");
            }
            return Value::Array(Vec::new());
        }
        let length = if maximum > minimum {
            self.random.usize(minimum..=maximum.min(minimum + 3))
        } else {
            minimum
        };
        let prefix: Vec<&Value> = schema
            .get("prefixItems")
            .and_then(Value::as_array)
            .map(|items| items.iter().collect())
            .unwrap_or_default();
        let length = length.max(prefix.len().min(maximum.max(minimum)));
        let items = schema.get("items");
        (0..length)
            .map(|index| {
                let at = format!("{path}/items/{index}");
                match (prefix.get(index), items) {
                    (Some(item), _) => self.value(item, &at, depth + 1),
                    (None, Some(item)) => self.value(item, &at, depth + 1),
                    (None, None) => Value::String("x".to_owned()),
                }
            })
            .collect::<Vec<_>>()
            .into()
    }

    fn string(&mut self, schema: &Map<String, Value>, path: &str) -> Value {
        if let Some(format) = schema.get("format").and_then(Value::as_str) {
            let made = match format {
                "date-time" => Some("2026-01-02T03:04:05Z"),
                "date" => Some("2026-01-02"),
                "time" => Some("03:04:05Z"),
                "email" => Some("user@example.com"),
                "uri" | "url" | "iri" => Some("https://example.com/a"),
                "uuid" => Some("0b6f3c1e-9d2a-4f4b-8c7d-1e2f3a4b5c6d"),
                "ipv4" => Some("192.0.2.1"),
                "ipv6" => Some("2001:db8::1"),
                "hostname" => Some("example.com"),
                _ => None,
            };
            match made {
                Some(text) => return Value::String(text.to_owned()),
                None => self.note(path, &format!("format {format}")),
            }
        }
        let maximum_given = schema.get("maxLength").and_then(Value::as_u64);
        let minimum = schema
            .get("minLength")
            .and_then(Value::as_u64)
            .unwrap_or(u64::from(maximum_given != Some(0))) as usize;
        let maximum = maximum_given.map_or(minimum.max(8), |maximum| maximum as usize);
        if maximum < minimum {
            self.note(path, "maxLength");
        }
        let length = if maximum > minimum {
            self.random.usize(minimum..=maximum.min(minimum + 8))
        } else {
            minimum
        };
        Value::String(
            (0..length)
                .map(|_| self.random.alphanumeric().to_ascii_lowercase())
                .collect(),
        )
    }

    fn number(&mut self, schema: &Map<String, Value>, path: &str, integer: bool) -> Value {
        let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
        // Draft 4 writes exclusiveness as a flag beside the bound.
        let flag = |key: &str| schema.get(key) == Some(&Value::Bool(true));
        // The admitted range, each end inclusive or not.
        let mut low = (f64::NEG_INFINITY, false);
        let mut high = (f64::INFINITY, false);
        if let Some(minimum) = bound("minimum") {
            low = (minimum, flag("exclusiveMinimum"));
        }
        if let Some(exclusive) = bound("exclusiveMinimum")
            && exclusive >= low.0
        {
            low = (exclusive, true);
        }
        if let Some(maximum) = bound("maximum") {
            high = (maximum, flag("exclusiveMaximum"));
        }
        if let Some(exclusive) = bound("exclusiveMaximum")
            && exclusive <= high.0
        {
            high = (exclusive, true);
        }
        if integer {
            let lowest = if low.1 {
                low.0.floor() + 1.0
            } else {
                low.0.ceil()
            };
            let highest = if high.1 {
                high.0.ceil() - 1.0
            } else {
                high.0.floor()
            };
            let (lowest, highest) = match (lowest.is_finite(), highest.is_finite()) {
                (false, false) => (0.0, 100.0),
                (true, false) => (lowest, lowest + 100.0),
                (false, true) => (highest - 100.0, highest),
                (true, true) => (lowest, highest),
            };
            if highest < lowest {
                self.note(path, "maximum");
            }
            let (lowest, highest) = (lowest as i64, (highest as i64).max(lowest as i64));
            let mut value = self.random.i64(lowest..=highest);
            if let Some(multiple) =
                bound("multipleOf").filter(|multiple| *multiple >= 1.0 && multiple.fract() == 0.0)
            {
                let multiple = multiple as i64;
                value = value.div_euclid(multiple) * multiple;
                if value < lowest {
                    value += multiple;
                }
            }
            json!(value)
        } else {
            let (lowest, highest) = match (low.0.is_finite(), high.0.is_finite()) {
                (false, false) => (0.0, 100.0),
                (true, false) => (low.0, low.0 + 100.0),
                (false, true) => (high.0 - 100.0, high.0),
                (true, true) => (low.0, high.0),
            };
            if highest < lowest || (highest == lowest && (low.1 || high.1)) {
                self.note(path, "maximum");
            }
            // Strictly inside when an end is exclusive: never on it.
            let mut value = lowest + (highest - lowest) * (0.25 + 0.5 * self.random.f64());
            if let Some(multiple) = bound("multipleOf").filter(|multiple| *multiple > 0.0) {
                // A whole multiple, written from the multiple's own digits
                // (0.1 * 7 is 0.7000000000000001 otherwise).
                let count = (value / multiple).round();
                let decimals = multiple.to_string().split('.').nth(1).map_or(0, str::len);
                let rounded = format!("{:.*}", decimals, count * multiple);
                value = rounded.parse().unwrap_or(count * multiple);
            }
            json!(value)
        }
    }
}

/// `true` for `{"type": "null"}`: the branch an optional `anyOf` adds.
fn is_null_type(schema: &Value) -> bool {
    schema.get("type") == Some(&json!("null"))
}

/// `part`'s keywords into `merged`: `properties` and `required` joined,
/// the rest taken where `merged` has none.
fn merge_into(merged: &mut Map<String, Value>, part: &Map<String, Value>) {
    for (key, value) in part {
        match (key.as_str(), merged.get_mut(key), value) {
            ("properties", Some(Value::Object(into)), Value::Object(from)) => {
                for (name, schema) in from {
                    into.entry(name.clone()).or_insert_with(|| schema.clone());
                }
            }
            ("required", Some(Value::Array(into)), Value::Array(from)) => {
                for name in from {
                    if !into.contains(name) {
                        into.push(name.clone());
                    }
                }
            }
            (_, None, _) => {
                merged.insert(key.clone(), value.clone());
            }
            _ => {}
        }
    }
}
