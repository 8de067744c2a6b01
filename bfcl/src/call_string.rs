//! BFCL's multi-turn ground truth: Python call strings such as
//! `mv(source='a.txt', destination='b')` or `sort('report.pdf')`, parsed
//! into a tool name and JSON arguments.
//!
//! BFCL's own harness runs these strings with Python's `eval` against its
//! backend classes. The replay needs only the literal subset the data uses,
//! so this is a small recursive-descent parser for one call whose
//! arguments are Python literals:
//!
//! | Python | JSON |
//! | --- | --- |
//! | `'text'`, `"text"` (with `\\`, `\'`, `\"`, `\n`, `\t`, `\r`, `\a`, `\b`, `\f`, `\v`, octal `\0`, `\xhh`, `\uhhhh`, `\Uhhhhhhhh` escapes; adjacent strings concatenate; an unknown escape such as `\d` kept as written, as Python keeps it) | string |
//! | `42`, `-7`, `1_000` | integer (within `i64`/`u64`) |
//! | `36.0`, `.5`, `1e-3`, `-2.5` | number |
//! | `True`, `False`, `None` | `true`, `false`, `null` |
//! | `[…]`, `(…,)` | array |
//! | `{'key': …}` | object (keys must be strings, as JSON's are) |
//!
//! Keyword and positional arguments are both kept; [`PythonCall::arguments`]
//! maps positional ones to the declared parameters in order, as Python
//! binds them to the method's signature. Anything else (a variable, an
//! expression, a nested call, a set, bytes, raw or f-strings, nesting
//! deeper than [`MAX_DEPTH`], a named escape `\N{...}`) is a [`CallStringError`] naming the byte
//! where it starts: never a panic, never a guess.

use std::fmt;

use serde_json::{Map, Number, Value};

/// How many levels lists, tuples and dicts may nest in one argument value;
/// deeper input is refused instead of overflowing the stack.
///
/// The value travels on inside the call's arguments object, as JSON text
/// the model sends and the loop parses back with serde_json, which refuses
/// text nested 128 levels deep (its recursion limit). The arguments object
/// is one level, so a value may have 126: one more, and the call would be
/// refused as "arguments not JSON" instead of replayed.
pub const MAX_DEPTH: usize = 126;

/// One parsed call: `name(positional..., keyword=value...)`.
#[derive(Debug, Clone, PartialEq)]
pub struct PythonCall {
    /// The called name, dots kept (`math.sqrt`).
    pub name: String,
    /// Positional arguments, in order.
    pub positional: Vec<Value>,
    /// Keyword arguments, in order; a name appears at most once.
    pub keyword: Vec<(String, Value)>,
}

/// Why a call string could not be parsed: the byte offset where the
/// problem starts and what was expected there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallStringError {
    /// Byte offset into the call string.
    pub position: usize,
    /// What is wrong there.
    pub message: String,
}

impl fmt::Display for CallStringError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "at byte {}: {}", self.position, self.message)
    }
}

impl std::error::Error for CallStringError {}

/// Parses one Python call string (see the module docs for what it accepts).
pub fn parse(text: &str) -> Result<PythonCall, CallStringError> {
    let mut parser = Parser { text, position: 0 };
    let call = parser.call()?;
    parser.whitespace();
    if parser.position < text.len() {
        return Err(parser.error("text after the call's closing `)`"));
    }
    Ok(call)
}

impl PythonCall {
    /// The arguments as a JSON object: keyword arguments by name, and
    /// positional ones under the names of `parameters` (the declared
    /// parameters, in declaration order), as Python binds them.
    ///
    /// Errors: more positional arguments than declared parameters, or a
    /// parameter given both positionally and by keyword (Python's own
    /// `TypeError`s for these calls).
    pub fn arguments(&self, parameters: &[String]) -> Result<Map<String, Value>, String> {
        if self.positional.len() > parameters.len() {
            return Err(format!(
                "`{}` takes {} parameter(s), {} given positionally",
                self.name,
                parameters.len(),
                self.positional.len()
            ));
        }
        let mut arguments: Map<String, Value> = parameters
            .iter()
            .cloned()
            .zip(self.positional.iter().cloned())
            .collect();
        for (name, value) in &self.keyword {
            if arguments.insert(name.clone(), value.clone()).is_some() {
                return Err(format!(
                    "`{}` got `{name}` both positionally and by keyword",
                    self.name
                ));
            }
        }
        Ok(arguments)
    }
}

struct Parser<'t> {
    text: &'t str,
    /// Byte offset of the next character; always on a char boundary.
    position: usize,
}

impl Parser<'_> {
    fn error(&self, message: impl Into<String>) -> CallStringError {
        self.error_at(self.position, message)
    }

    fn error_at(&self, position: usize, message: impl Into<String>) -> CallStringError {
        CallStringError {
            position,
            message: message.into(),
        }
    }

    fn rest(&self) -> &str {
        &self.text[self.position..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let next = self.peek()?;
        self.position += next.len_utf8();
        Some(next)
    }

    fn whitespace(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.bump();
        }
    }

    /// Skips whitespace, then consumes `expected` if it comes next.
    fn eat(&mut self, expected: char) -> bool {
        self.whitespace();
        if self.peek() == Some(expected) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, expected: char, what: &str) -> Result<(), CallStringError> {
        if self.eat(expected) {
            Ok(())
        } else {
            Err(self.error(format!("expected {what}")))
        }
    }

    /// A Python identifier (ASCII and Unicode letters, digits, `_`).
    fn identifier(&mut self) -> Option<&str> {
        self.whitespace();
        let start = self.position;
        if !self.peek().is_some_and(|c| c.is_alphabetic() || c == '_') {
            return None;
        }
        while self.peek().is_some_and(|c| c.is_alphanumeric() || c == '_') {
            self.bump();
        }
        Some(&self.text[start..self.position])
    }

    fn call(&mut self) -> Result<PythonCall, CallStringError> {
        let Some(first) = self.identifier() else {
            return Err(self.error("expected a function name"));
        };
        let mut name = first.to_owned();
        while self.eat('.') {
            let Some(part) = self.identifier() else {
                return Err(self.error("expected a name after `.`"));
            };
            name.push('.');
            name.push_str(part);
        }
        self.expect('(', "`(` after the function name")?;
        let mut call = PythonCall {
            name,
            positional: Vec::new(),
            keyword: Vec::new(),
        };
        loop {
            if self.eat(')') {
                return Ok(call);
            }
            let start = self.position;
            if let Some(keyword) = self.keyword_name() {
                let value = self.value(0)?;
                if call.keyword.iter().any(|(name, _)| *name == keyword) {
                    return Err(self.error_at(start, format!("keyword `{keyword}` repeated")));
                }
                call.keyword.push((keyword, value));
            } else {
                let value = self.value(0)?;
                if !call.keyword.is_empty() {
                    return Err(
                        self.error_at(start, "positional argument after a keyword argument")
                    );
                }
                call.positional.push(value);
            }
            if !self.eat(',') {
                self.expect(')', "`,` or `)` after an argument")?;
                return Ok(call);
            }
        }
    }

    /// `name =` (not `name ==`), consumed; otherwise nothing is consumed.
    fn keyword_name(&mut self) -> Option<String> {
        let start = self.position;
        if let Some(name) = self.identifier().map(str::to_owned) {
            self.whitespace();
            if self.rest().starts_with('=') && !self.rest().starts_with("==") {
                self.bump();
                return Some(name);
            }
        }
        self.position = start;
        None
    }

    fn value(&mut self, depth: usize) -> Result<Value, CallStringError> {
        if depth >= MAX_DEPTH {
            return Err(self.error(format!("nested deeper than {MAX_DEPTH} levels")));
        }
        self.whitespace();
        let start = self.position;
        match self.peek() {
            Some('\'' | '"') => self.strings().map(Value::String),
            Some('[') => {
                self.bump();
                self.sequence(']', depth).map(Value::Array)
            }
            Some('(') => {
                self.bump();
                self.tuple_or_group(depth)
            }
            Some('{') => {
                self.bump();
                self.dict(depth)
            }
            Some(c) if c.is_ascii_digit() || matches!(c, '-' | '+' | '.') => self.number(),
            Some(c) if c.is_alphabetic() || c == '_' => {
                let word = self.identifier().unwrap_or_default().to_owned();
                match word.as_str() {
                    "True" => Ok(Value::Bool(true)),
                    "False" => Ok(Value::Bool(false)),
                    "None" => Ok(Value::Null),
                    _ if matches!(self.peek(), Some('\'' | '"')) => {
                        Err(self
                            .error_at(start, format!("string prefix `{word}` is not supported")))
                    }
                    _ => Err(self.error_at(
                        start,
                        format!("`{word}` is not a literal (a name or an expression)"),
                    )),
                }
            }
            Some(other) => Err(self.error(format!("`{other}` cannot start a value"))),
            None => Err(self.error("the call string ends where a value should be")),
        }
    }

    /// Values up to `close`, a trailing comma allowed.
    fn sequence(&mut self, close: char, depth: usize) -> Result<Vec<Value>, CallStringError> {
        let mut items = Vec::new();
        loop {
            if self.eat(close) {
                return Ok(items);
            }
            items.push(self.value(depth + 1)?);
            if !self.eat(',') {
                self.expect(close, &format!("`,` or `{close}`"))?;
                return Ok(items);
            }
        }
    }

    /// After `(`: `()` and `(x,)`/`(x, y)` are tuples (arrays); `(x)` is x.
    fn tuple_or_group(&mut self, depth: usize) -> Result<Value, CallStringError> {
        if self.eat(')') {
            return Ok(Value::Array(Vec::new()));
        }
        let first = self.value(depth + 1)?;
        if self.eat(')') {
            return Ok(first);
        }
        self.expect(',', "`,` or `)`")?;
        let mut items = vec![first];
        items.extend(self.sequence(')', depth)?);
        Ok(Value::Array(items))
    }

    fn dict(&mut self, depth: usize) -> Result<Value, CallStringError> {
        let mut map = Map::new();
        loop {
            if self.eat('}') {
                return Ok(Value::Object(map));
            }
            self.whitespace();
            let key_start = self.position;
            let key = match self.value(depth + 1)? {
                Value::String(key) => key,
                other => {
                    return Err(self.error_at(
                        key_start,
                        format!("dict key {other} is not a string (JSON keys are strings)"),
                    ));
                }
            };
            self.expect(':', "`:` after a dict key (sets are not supported)")?;
            let value = self.value(depth + 1)?;
            // Python keeps the last value of a repeated key; so does this.
            map.insert(key, value);
            if !self.eat(',') {
                self.expect('}', "`,` or `}`")?;
                return Ok(Value::Object(map));
            }
        }
    }

    fn number(&mut self) -> Result<Value, CallStringError> {
        let start = self.position;
        let negative = match self.peek() {
            Some('-') => {
                self.bump();
                true
            }
            Some('+') => {
                self.bump();
                false
            }
            _ => false,
        };
        self.whitespace();
        let digits_start = self.position;
        let mut is_float = false;
        while let Some(c) = self.peek() {
            match c {
                '0'..='9' | '_' => {}
                '.' => is_float = true,
                'e' | 'E' => {
                    is_float = true;
                    self.bump();
                    if matches!(self.peek(), Some('+' | '-')) {
                        self.bump();
                    }
                    continue;
                }
                _ => break,
            }
            self.bump();
        }
        let digits: String = self.text[digits_start..self.position]
            .chars()
            .filter(|&c| c != '_')
            .collect();
        let text = if negative {
            format!("-{digits}")
        } else {
            digits
        };
        let number = if is_float {
            text.parse::<f64>().ok().and_then(Number::from_f64)
        } else if text.trim_start_matches('-').starts_with('0')
            && text.chars().any(|c| matches!(c, '1'..='9'))
        {
            // Python 3 refuses leading zeros in a non-zero integer (`007`);
            // zeros alone (`0`, `00`, `-0`) are 0.
            None
        } else {
            text.parse::<i64>()
                .map(Number::from)
                .ok()
                .or_else(|| text.parse::<u64>().ok().map(Number::from))
        };
        number
            .map(Value::Number)
            .ok_or_else(|| self.error_at(start, format!("`{text}` is not a number JSON can hold")))
    }

    /// One string literal, or several adjacent ones concatenated (Python's
    /// `'a' 'b'` is `'ab'`).
    fn strings(&mut self) -> Result<String, CallStringError> {
        let mut text = self.string()?;
        loop {
            self.whitespace();
            if matches!(self.peek(), Some('\'' | '"')) {
                text.push_str(&self.string()?);
            } else {
                return Ok(text);
            }
        }
    }

    fn string(&mut self) -> Result<String, CallStringError> {
        let start = self.position;
        let Some(quote) = self.bump() else {
            return Err(self.error("expected a string"));
        };
        // `''` is an empty string; `'''` opens a triple-quoted one.
        let mut rest = self.rest().chars();
        if rest.next() == Some(quote) && rest.next() == Some(quote) {
            return Err(self.error_at(start, "triple-quoted strings are not supported"));
        }
        let mut text = String::new();
        loop {
            match self.bump() {
                None | Some('\n') => {
                    return Err(self.error_at(start, "string is not closed"));
                }
                Some(c) if c == quote => return Ok(text),
                Some('\\') => self.escape(&mut text)?,
                Some(c) => text.push(c),
            }
        }
    }

    /// After a `\` inside a string: appends what the escape stands for.
    fn escape(&mut self, text: &mut String) -> Result<(), CallStringError> {
        let start = self.position - 1;
        let Some(c) = self.bump() else {
            return Err(self.error_at(start, "string is not closed"));
        };
        let hex_digits = match c {
            '\\' | '\'' | '"' => {
                text.push(c);
                return Ok(());
            }
            'n' | 't' | 'r' | 'a' | 'b' | 'f' | 'v' => {
                text.push(match c {
                    'n' => '\n',
                    't' => '\t',
                    'r' => '\r',
                    'a' => '\u{7}',
                    'b' => '\u{8}',
                    'f' => '\u{c}',
                    _ => '\u{b}',
                });
                return Ok(());
            }
            // Kept as written, it would be a wrong value, not Python's.
            'N' => {
                return Err(self.error_at(start, "named escapes (`\\N{...}`) are not supported"));
            }
            '0'..='7' => {
                // Octal: up to three digits (`\0`, `\012`).
                let mut code = c.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match self.peek().and_then(|d| d.to_digit(8)) {
                        Some(digit) => {
                            code = code * 8 + digit;
                            self.bump();
                        }
                        None => break,
                    }
                }
                // At most 0o777: always a scalar value.
                text.extend(char::from_u32(code));
                return Ok(());
            }
            // A backslash before a newline continues the line.
            '\n' => return Ok(()),
            'x' => 2,
            'u' => 4,
            'U' => 8,
            // Python keeps an unknown escape as written (`\d` is `\d`).
            other => {
                text.push('\\');
                text.push(other);
                return Ok(());
            }
        };
        let digits_start = self.position;
        for _ in 0..hex_digits {
            if !self.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
                return Err(self.error_at(start, format!("`\\{c}` needs {hex_digits} hex digits")));
            }
            self.bump();
        }
        let code = u32::from_str_radix(&self.text[digits_start..self.position], 16)
            .ok()
            .and_then(char::from_u32)
            .ok_or_else(|| self.error_at(start, "escape is not a Unicode scalar value"))?;
        text.push(code);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn arguments(text: &str, parameters: &[&str]) -> Value {
        let parameters: Vec<String> = parameters.iter().map(|p| (*p).to_owned()).collect();
        Value::Object(parse(text).unwrap().arguments(&parameters).unwrap())
    }

    #[test]
    fn keyword_and_positional_arguments_map_to_declared_parameters() {
        assert_eq!(
            arguments("cd(folder='document')", &["folder"]),
            json!({ "folder": "document" })
        );
        assert_eq!(
            arguments(
                "post_tweet('Tires ok!', tags=['#RoadTrip'], mentions=[])",
                &["content", "tags", "mentions"]
            ),
            json!({ "content": "Tires ok!", "tags": ["#RoadTrip"], "mentions": [] })
        );
        assert_eq!(arguments("ls()", &["a"]), json!({}));
        assert_eq!(
            arguments(r#"resolve(ticket_id=1, resolution='', note="")"#, &[]),
            json!({ "ticket_id": 1, "resolution": "", "note": "" })
        );
    }

    #[test]
    fn literals_of_every_kind_nest() {
        let call = parse(
            r#"f(a=[1, -2, [3.5, 1e3]], b={'k': {"n": None, 'l': (True, False)}}, c=(), d=(7), e='x' "y", f=-0.25,)"#,
        )
        .unwrap();
        assert_eq!(call.name, "f");
        assert_eq!(
            Value::Object(call.keyword.into_iter().collect()),
            json!({
                "a": [1, -2, [3.5, 1000.0]],
                "b": { "k": { "n": null, "l": [true, false] } },
                "c": [],
                "d": 7,
                "e": "xy",
                "f": -0.25
            })
        );
    }

    #[test]
    fn zeros_alone_are_zero_as_in_python() {
        let call = parse("f(-0, 00, 0_0, -00, 0)").unwrap();
        assert_eq!(
            call.positional,
            [json!(0), json!(0), json!(0), json!(0), json!(0)]
        );
        for refused in ["f(007)", "f(-01)", "f(00_1)"] {
            assert!(
                parse(refused)
                    .unwrap_err()
                    .message
                    .ends_with("is not a number JSON can hold"),
                "{refused}"
            );
        }
    }

    #[test]
    fn escapes_and_unicode() {
        let call =
            parse(r#"echo(content="it's \"quoted\"\n\x41\u00e9\\", x='caf\u00e9 ☕')"#).unwrap();
        assert_eq!(call.keyword[0].1, json!("it's \"quoted\"\nAé\\"));
        assert_eq!(call.keyword[1].1, json!("café ☕"));
        // Python's other single-letter escapes; `\d` is not one.
        let call = parse(r"f('\a\b\f\v\d')").unwrap();
        assert_eq!(call.positional[0], json!("\u{7}\u{8}\u{c}\u{b}\\d"));
        let error = parse(r"f('\N{EM DASH}')").unwrap_err();
        assert_eq!(
            error.to_string(),
            "at byte 3: named escapes (`\\N{...}`) are not supported"
        );
    }

    #[test]
    fn what_is_not_a_literal_call_is_an_error_with_its_position() {
        let cases = [
            ("cd(folder=path)", 10, "`path` is not a literal"),
            ("cd(folder='doc'", 15, "expected `,` or `)`"),
            ("cd(folder='doc)", 10, "string is not closed"),
            ("cd(folder='doc') extra", 17, "text after"),
            ("(folder='doc')", 0, "expected a function name"),
            ("f(a=1, 2)", 7, "positional argument after a keyword"),
            ("f(a=1, a=2)", 7, "keyword `a` repeated"),
            ("f(x={1: 'a'})", 5, "dict key 1 is not a string"),
            ("f(x=1e999)", 4, "not a number JSON can hold"),
            ("f(x=007)", 4, "not a number"),
            ("f(x=b'raw')", 4, "string prefix `b`"),
            ("f(x='''a''')", 4, "triple-quoted"),
            ("f(x={'a', 'b'})", 8, "expected `:` after a dict key (sets"),
            ("f(x=1 + 2)", 6, "expected `,` or `)`"),
            ("f(x=g(1))", 4, "`g` is not a literal"),
            ("f(x='\\u12')", 5, "needs 4 hex digits"),
            ("", 0, "expected a function name"),
        ];
        for (text, position, message) in cases {
            let error = parse(text).unwrap_err();
            assert!(
                error.message.contains(message) && error.position == position,
                "{text}: {error}"
            );
        }
    }

    #[test]
    fn too_deep_nesting_is_refused() {
        let deep = format!("f(x={}{})", "[".repeat(200), "]".repeat(200));
        assert!(parse(&deep).unwrap_err().message.contains("nested deeper"));
        let fine = format!("f(x={}{})", "[".repeat(100), "]".repeat(100));
        assert!(parse(&fine).is_ok());
    }

    #[test]
    fn too_many_or_repeated_arguments_are_refused_when_mapping() {
        let parameters = vec!["a".to_owned()];
        let error = parse("f(1, 2)")
            .unwrap()
            .arguments(&parameters)
            .unwrap_err();
        assert_eq!(error, "`f` takes 1 parameter(s), 2 given positionally");
        let error = parse("f(1, a=2)")
            .unwrap()
            .arguments(&parameters)
            .unwrap_err();
        assert_eq!(error, "`f` got `a` both positionally and by keyword");
    }
}
