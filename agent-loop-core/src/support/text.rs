//! Bounding the text the model sees: tool results cut to `result_bytes`,
//! error sentences cleaned and cut to [`ERROR_TEXT_BYTES`], and JSON values
//! quoted in error messages as bounded excerpts.
//!
//! A tool result longer than its limit keeps its head and its tail (where
//! a log, a listing or a stack trace usually says the most) with a marker
//! between them that states how many bytes were left out, so the model knows
//! the text is incomplete and by how much. Every length here is in bytes of
//! UTF-8, the unit providers bill and bound by; cuts fall on character
//! boundaries, so the output is always valid UTF-8.

use std::borrow::Cow;
use std::fmt::{self, Write as _};

use serde_json::Value;
use unicode_general_category::{GeneralCategory, get_general_category};

/// The bound, in bytes of UTF-8, of the error text a model reads in an error
/// result (cleaned of control and format characters, cut in the middle
/// with a marker when longer): enough for a sentence naming a tool, a field
/// and the reason, short enough that a verbose error cannot flood the
/// context. A mode's `result_bytes`, when smaller, bounds it instead, and
/// the text stays on one line either way.
pub const ERROR_TEXT_BYTES: usize = 1024;

/// Opening and closing of the marker's core, around the omitted byte count:
/// `[… 12345 bytes omitted …]`.
const MARKER_OPEN: &str = "[… ";
const MARKER_CLOSE: &str = " bytes omitted …]";

/// What surrounds the marker's core: a line break in tool results, so the
/// marker stands on its own line; a space in error text, which must stay on
/// one line.
const RESULT_SEPARATOR: &str = "\n";
const ERROR_SEPARATOR: &str = " ";

/// Cuts `text` to at most `limit` bytes as head + marker + tail.
///
/// Returns `text` unchanged ([`Cow::Borrowed`]) when `text.len() <= limit`.
/// Otherwise the result is the head (a prefix of `text`), the marker
/// `"\n[… N bytes omitted …]\n"`, and the tail (a suffix of `text`), where
/// `N` is exactly `text.len() - head.len() - tail.len()`; [`omitted_bytes`]
/// reads it back. The marker itself is 26 bytes plus the digits of `N` (each
/// `…` is 3 bytes).
///
/// Guarantees, for every input:
///
/// - the output is at most `limit` bytes; it may be a few bytes shorter,
///   because room is reserved for a count as long as `text.len()` and the
///   cuts fall on character boundaries;
/// - the output is valid UTF-8: a multi-byte character at a cut point is
///   left out whole, and counted in `N`;
/// - the head gets the first half (rounded up) of the bytes left after the
///   marker, the tail the rest;
/// - the result is deterministic and this function never panics.
///
/// A `limit` below the smallest `result_bytes` a definition may set (256) is never set by a definition, but is
/// handled: if even the marker does not fit (a `limit` under about 30
/// bytes), the result is the longest prefix of `text` that fits, cut at a
/// character boundary, with no marker.
pub(crate) fn truncate_middle(text: &str, limit: usize) -> Cow<'_, str> {
    match plan_cut(text, limit, RESULT_SEPARATOR) {
        Cut::Fits => Cow::Borrowed(text),
        Cut::Prefix(end) => Cow::Borrowed(&text[..end]),
        Cut::Middle {
            head_end,
            tail_start,
        } => Cow::Owned(join_cut(text, head_end, tail_start, RESULT_SEPARATOR)),
    }
}

/// The omitted byte count of the first marker in `truncated`, as written by
/// `truncate_middle` or [`clean_error_text`]: `Some(12345)` for a text
/// containing `[… 12345 bytes omitted …]`, `None` if there is no marker.
///
/// The count is the number of bytes of the original text the marker stands
/// for. A text whose own head already contained marker-like text reports
/// that one, since it comes first; tool output rarely does.
#[cfg(test)]
pub(crate) fn omitted_bytes(truncated: &str) -> Option<usize> {
    truncated
        .match_indices(MARKER_OPEN)
        .find_map(|(start, _)| parse_marker_count(&truncated[start + MARKER_OPEN.len()..]))
}

/// Parses `12345 bytes omitted …]…` into 12345; `None` if `rest` does not
/// start with a count followed by the marker's closing.
#[cfg(test)]
fn parse_marker_count(rest: &str) -> Option<usize> {
    let digits_end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    if digits_end == 0 || !rest[digits_end..].starts_with(MARKER_CLOSE) {
        return None;
    }
    // Too many digits for usize: not a marker this crate wrote.
    rest[..digits_end].parse().ok()
}

/// Makes an error text safe and short for the model.
///
/// Every control character (Unicode [`char::is_control`]: `\n`, `\r`, `\t`,
/// ESC, NUL, …) becomes a space, runs of white space ([`char::is_whitespace`])
/// collapse to one space, and the ends are trimmed, so a multi-line error or
/// a terminal escape sequence becomes one plain line. Every Unicode format
/// character (General_Category `Cf`: the bidi controls U+202A–U+202E,
/// U+2066–U+2069, U+200E/U+200F, the zero-width space, joiners and no-break
/// space U+200B–U+200D and U+FEFF, the soft hyphen, the tag characters) is
/// removed: invisible, they can make a tool name or an argument read as
/// something else than it is. The result is then cut to at most `limit`
/// bytes like `truncate_middle`, with the marker on the same line
/// (`" [… N bytes omitted …] "`, `N` counting bytes of the cleaned text)
/// and no space doubled around it. Pass [`ERROR_TEXT_BYTES`] unless there
/// is a reason not to.
///
/// The output never contains a control or format character and is at most
/// `limit` bytes. Only the kept head and tail are ever held: the cleaned
/// text is measured first, then its head is cleaned from the front and
/// its tail from the back, so a 64 MB error costs about `limit` bytes.
pub fn clean_error_text(text: &str, limit: usize) -> String {
    let total: usize = cleaned(text.chars()).map(char::len_utf8).sum();
    if total <= limit {
        return cleaned(text.chars()).collect();
    }
    // As `plan_cut` does for a text held whole: the count reserved is the
    // longest the real one can be.
    let Some(budget) = limit.checked_sub(marker_len(total, ERROR_SEPARATOR)) else {
        return prefix_of(cleaned(text.chars()), limit)
            .trim_end()
            .to_owned();
    };
    let head = prefix_of(cleaned(text.chars()), budget - budget / 2);
    // The tail also gets what the head lost to its character boundary.
    let tail: String = prefix_of(cleaned(text.chars().rev()), budget - head.len())
        .chars()
        .rev()
        .collect();
    // The separator already is a space: the ones at the cut go, counted
    // as omitted, so none is doubled.
    let (head, tail) = (head.trim_end_matches(' '), tail.trim_start_matches(' '));
    let omitted = total - head.len() - tail.len();
    join(head, omitted, tail, ERROR_SEPARATOR)
}

/// What cleaning error text does with one character.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Clean {
    Keep,
    /// White space and control characters: one space between words.
    Separate,
    /// Format characters: removed, joining what is around them.
    Remove,
}

fn clean_class(character: char) -> Clean {
    if character.is_control() || character.is_whitespace() {
        Clean::Separate
    } else if get_general_category(character) == GeneralCategory::Format {
        Clean::Remove
    } else {
        Clean::Keep
    }
}

/// The characters of cleaned error text for `characters`: kept ones, and
/// one space between two kept ones that had a separator between them (none
/// before the first or after the last). The rule reads the same both ways,
/// so `characters` reversed gives the cleaned text reversed: that is how
/// [`clean_error_text`] cleans a long text's tail without its middle.
fn cleaned(characters: impl Iterator<Item = char>) -> impl Iterator<Item = char> {
    let mut started = false;
    let mut space_pending = false;
    characters
        .flat_map(move |character| match clean_class(character) {
            Clean::Separate => {
                space_pending = started;
                [None, None]
            }
            Clean::Remove => [None, None],
            Clean::Keep => {
                let space = space_pending.then_some(' ');
                space_pending = false;
                started = true;
                [space, Some(character)]
            }
        })
        .flatten()
}

/// The longest prefix of `characters` that fits in `limit` bytes.
fn prefix_of(characters: impl Iterator<Item = char>, limit: usize) -> String {
    let mut prefix = String::new();
    for character in characters {
        if prefix.len() + character.len_utf8() > limit {
            break;
        }
        prefix.push(character);
    }
    prefix
}

/// The compact JSON text of `value` (serde_json's `to_string` form) cut to
/// at most `max_bytes` bytes: the head, then `...` when anything was cut
/// (for a `max_bytes` of at least 3). Equal to `value.to_string()` when
/// that fits.
///
/// Written with an explicit stack, so a value of any depth is quoted
/// without recursion, and into a `Bounded` buffer, so it never holds
/// more than about `max_bytes` bytes: a string is escaped only as far as
/// it can show, and quoting a 64 MB value costs what quoting a small one
/// does.
pub fn json_excerpt(value: &Value, max_bytes: usize) -> String {
    let mut out = Bounded::new(max_bytes);
    // The walk stops at the buffer's first refusal.
    let _ = write_compact(value, &mut out);
    out.finish()
}

/// One open object or array of [`write_compact`]'s walk.
enum Open<'a> {
    Array(std::slice::Iter<'a, Value>),
    Object(serde_json::map::Iter<'a>),
}

/// Writes `value` as compact JSON text into `out`; stops at `out`'s first
/// error.
fn write_compact(value: &Value, out: &mut Bounded) -> fmt::Result {
    let mut open: Vec<(Open<'_>, bool)> = Vec::new();
    let mut next = Some(value);
    loop {
        match next.take() {
            Some(Value::Array(items)) => {
                out.write_str("[")?;
                open.push((Open::Array(items.iter()), true));
            }
            Some(Value::Object(map)) => {
                out.write_str("{")?;
                open.push((Open::Object(map.iter()), true));
            }
            Some(Value::String(text)) => out.write_json_string(text)?,
            // null, booleans and numbers: short, and their `Display` is
            // their JSON text.
            Some(scalar) => write!(out, "{scalar}")?,
            None => {}
        }
        let Some((children, first)) = open.last_mut() else {
            return Ok(());
        };
        let separator = if *first { "" } else { "," };
        *first = false;
        match children {
            Open::Array(items) => match items.next() {
                Some(item) => {
                    out.write_str(separator)?;
                    next = Some(item);
                }
                None => {
                    open.pop();
                    out.write_str("]")?;
                }
            },
            Open::Object(entries) => match entries.next() {
                Some((key, item)) => {
                    out.write_str(separator)?;
                    out.write_json_string(key)?;
                    out.write_str(":")?;
                    next = Some(item);
                }
                None => {
                    open.pop();
                    out.write_str("}")?;
                }
            },
        }
    }
}

/// A text buffer for at most `limit` bytes of text that keeps one byte
/// more (to know that something was cut) and refuses every write after
/// that, which stops a `Display` implementation early: formatting a value
/// into it costs memory proportional to `limit`, not to the value.
pub(crate) struct Bounded {
    text: String,
    limit: usize,
    full: bool,
}

impl Bounded {
    /// An empty buffer for text of at most `limit` bytes.
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            text: String::new(),
            limit,
            full: false,
        }
    }

    /// `text` as a JSON string literal, escaped only as far as it can show:
    /// an escaped byte is never shorter than the byte, so a prefix as long
    /// as the room left fills the buffer.
    fn write_json_string(&mut self, text: &str) -> fmt::Result {
        let room = (self.limit + 1).saturating_sub(self.text.len());
        let shown = &text[..floor_char_boundary(text, room)];
        // Serialising a `&str` cannot fail.
        let quoted = serde_json::to_string(shown).unwrap_or_default();
        if shown.len() < text.len() {
            // Cut: a closing quote would claim the string ended there.
            self.write_str(&quoted[..quoted.len() - 1])?;
            // Whatever fitted, the string goes on: mark the cut.
            return self.overflow();
        }
        self.write_str(&quoted)
    }

    /// Marks the buffer full and cut.
    fn overflow(&mut self) -> fmt::Result {
        if !self.full {
            if self.text.len() <= self.limit {
                // One byte past the limit makes `finish` mark the cut.
                self.text.push('.');
            }
            self.full = true;
        }
        Err(fmt::Error)
    }

    /// The text written, cut to `limit` bytes with `...` at the end when
    /// more was written than fits.
    pub(crate) fn finish(self) -> String {
        const ELLIPSIS: &str = "...";
        let mut text = self.text;
        if text.len() > self.limit {
            let keep = floor_char_boundary(&text, self.limit.saturating_sub(ELLIPSIS.len()));
            text.truncate(keep);
            if self.limit >= ELLIPSIS.len() {
                text.push_str(ELLIPSIS);
            }
        }
        text
    }
}

impl fmt::Write for Bounded {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        if self.full {
            return Err(fmt::Error);
        }
        let room = (self.limit + 1) - self.text.len();
        if text.len() <= room {
            self.text.push_str(text);
            return Ok(());
        }
        self.text.push_str(&text[..floor_char_boundary(text, room)]);
        self.overflow()
    }
}

/// How [`plan_cut`] bounds a text.
#[derive(Debug, PartialEq, Eq)]
enum Cut {
    /// The text fits as it is.
    Fits,
    /// Not even the marker fits: keep `text[..end]`.
    Prefix(usize),
    /// Keep `text[..head_end]` and `text[tail_start..]` around a marker;
    /// `head_end < tail_start`, both on character boundaries.
    Middle { head_end: usize, tail_start: usize },
}

/// Decides where to cut `text` so that head + marker + tail fits in `limit`
/// bytes, whatever the omitted count turns out to be.
fn plan_cut(text: &str, limit: usize, separator: &str) -> Cut {
    if text.len() <= limit {
        return Cut::Fits;
    }
    // The omitted count is at most text.len(), so a marker sized for that
    // many digits is the longest the real one can be: reserving it up front
    // means the output can never exceed the limit.
    let marker_reserve = marker_len(text.len(), separator);
    let Some(budget) = limit.checked_sub(marker_reserve) else {
        return Cut::Prefix(floor_char_boundary(text, limit));
    };
    let head_end = floor_char_boundary(text, budget - budget / 2);
    // The tail also gets what the head lost to its character boundary.
    let tail_budget = budget - head_end;
    let tail_start = ceil_char_boundary(text, text.len() - tail_budget);
    // text.len() > limit >= budget >= head_end + tail_budget, so the two
    // parts never overlap and at least one byte is omitted.
    debug_assert!(head_end < tail_start);
    Cut::Middle {
        head_end,
        tail_start,
    }
}

/// Head, marker with the exact omitted count, tail.
fn join_cut(text: &str, head_end: usize, tail_start: usize, separator: &str) -> String {
    join(
        &text[..head_end],
        tail_start - head_end,
        &text[tail_start..],
        separator,
    )
}

/// `head`, the marker for `omitted` bytes, `tail`, in one allocation.
fn join(head: &str, omitted: usize, tail: &str, separator: &str) -> String {
    let mut joined =
        String::with_capacity(head.len() + marker_len(omitted, separator) + tail.len());
    joined.push_str(head);
    push_marker(&mut joined, omitted, separator);
    joined.push_str(tail);
    joined
}

/// The marker for `omitted` bytes, with its separators.
fn push_marker(text: &mut String, omitted: usize, separator: &str) {
    text.push_str(separator);
    text.push_str(MARKER_OPEN);
    text.push_str(&omitted.to_string());
    text.push_str(MARKER_CLOSE);
    text.push_str(separator);
}

/// Bytes of the marker for `omitted` bytes, separators included.
fn marker_len(omitted: usize, separator: &str) -> usize {
    2 * separator.len() + MARKER_OPEN.len() + decimal_digits(omitted) + MARKER_CLOSE.len()
}

fn decimal_digits(n: usize) -> usize {
    n.checked_ilog10().map_or(1, |log| log as usize + 1)
}

/// `error`'s text followed by each cause's, joined with `: `: for an event
/// or a log line that carries a whole chain as one string.
pub(crate) fn with_causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

/// The largest character boundary `<= index` (`str::floor_char_boundary` is
/// newer than this crate's minimum Rust version).
pub(crate) fn floor_char_boundary(text: &str, index: usize) -> usize {
    if index >= text.len() {
        return text.len();
    }
    (0..=index)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0)
}

/// The smallest character boundary `>= index`.
fn ceil_char_boundary(text: &str, index: usize) -> usize {
    (index..text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Splits a `truncate_middle` output into head, count and tail.
    fn split(cut: &str) -> (&str, usize, &str) {
        let omitted = omitted_bytes(cut).expect("a marker");
        let marker = format!("\n[… {omitted} bytes omitted …]\n");
        let start = cut.find(&marker).expect("the marker text");
        (&cut[..start], omitted, &cut[start + marker.len()..])
    }

    #[test]
    fn marker_length_matches_the_written_marker() {
        for omitted in [1, 9, 10, 99, 12345, usize::MAX] {
            let marker = format!("\n[… {omitted} bytes omitted …]\n");
            assert_eq!(marker.len(), marker_len(omitted, RESULT_SEPARATOR));
        }
        assert_eq!(marker_len(1, RESULT_SEPARATOR), 27);
        let written = join_cut("abc", 1, 2, RESULT_SEPARATOR);
        assert_eq!(written, "a\n[… 1 bytes omitted …]\nc");
        assert_eq!(written.len(), 2 + marker_len(1, RESULT_SEPARATOR));
    }

    #[test]
    fn decimal_digits_counts_digits() {
        assert_eq!(decimal_digits(0), 1);
        assert_eq!(decimal_digits(9), 1);
        assert_eq!(decimal_digits(10), 2);
        assert_eq!(decimal_digits(usize::MAX), usize::MAX.to_string().len());
    }

    #[test]
    fn text_that_fits_is_borrowed_unchanged() {
        let text = "x".repeat(300);
        assert!(matches!(truncate_middle(&text, 300), Cow::Borrowed(t) if t == text));
        assert!(matches!(truncate_middle(&text, 301), Cow::Borrowed(t) if t == text));
        assert!(matches!(truncate_middle("", 0), Cow::Borrowed("")));
    }

    #[test]
    fn one_byte_over_is_cut_with_a_marker() {
        let text = "x".repeat(257);
        let cut = truncate_middle(&text, 256);
        assert!(cut.len() <= 256);
        let (head, omitted, tail) = split(&cut);
        assert_eq!(omitted, text.len() - head.len() - tail.len());
        // 256 - 29 (marker reserve for 3 digits) = 227: head 114, tail 113.
        assert_eq!((head.len(), tail.len()), (114, 113));
    }

    #[test]
    fn ascii_is_cut_into_head_and_tail_halves() {
        let text: String = (0..10_000)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let cut = truncate_middle(&text, 256);
        let (head, omitted, tail) = split(&cut);
        // Reserve for 5 digits: 31 bytes; 225 left, head 113, tail 112.
        assert_eq!((head.len(), tail.len()), (113, 112));
        assert_eq!(omitted, 10_000 - 225);
        assert!(text.starts_with(head) && text.ends_with(tail));
        // The real count (9775) has 4 digits: one reserved byte unused.
        assert_eq!(cut.len(), 255);
    }

    #[test]
    fn multibyte_characters_at_the_cut_are_left_out_whole() {
        for unit in ["é", "€", "🦀"] {
            let text = unit.repeat(1000);
            for limit in [256, 257, 258, 259, 300] {
                let cut = truncate_middle(&text, limit);
                assert!(cut.len() <= limit, "{unit} {limit}");
                let (head, omitted, tail) = split(&cut);
                assert!(head.chars().all(|c| c.to_string() == unit));
                assert!(tail.chars().all(|c| c.to_string() == unit));
                assert_eq!(omitted, text.len() - head.len() - tail.len());
                assert_eq!(omitted % unit.len(), 0);
            }
        }
    }

    #[test]
    fn tail_takes_what_the_head_lost_to_a_boundary() {
        // Head budget lands inside an emoji; the tail may use the bytes.
        let text = format!("a{}", "🦀".repeat(200));
        let cut = truncate_middle(&text, 256);
        let (head, _, tail) = split(&cut);
        assert!(head.len() + tail.len() <= 256 - marker_len(text.len(), "\n"));
        assert!(head.len() + tail.len() + 4 > 256 - marker_len(text.len(), "\n"));
    }

    #[test]
    fn tiny_limits_fall_back_to_a_prefix() {
        let text = "héllo wörld, this is longer than the limit";
        assert_eq!(truncate_middle(text, 0), "");
        assert_eq!(truncate_middle(text, 1), "h");
        // 2 would split `é`: the prefix stops before it.
        assert_eq!(truncate_middle(text, 2), "h");
        assert_eq!(truncate_middle(text, 3), "hé");
        assert_eq!(omitted_bytes(&truncate_middle(text, 10)), None);
    }

    #[test]
    fn limit_exactly_the_marker_keeps_only_the_marker() {
        let text = "x".repeat(500);
        let limit = marker_len(500, RESULT_SEPARATOR);
        let cut = truncate_middle(&text, limit);
        assert_eq!(cut, "\n[… 500 bytes omitted …]\n");
        assert_eq!(omitted_bytes(&cut), Some(500));
    }

    #[test]
    fn omitted_bytes_reads_both_marker_forms() {
        assert_eq!(
            omitted_bytes("a\n[… 12345 bytes omitted …]\nb"),
            Some(12345)
        );
        assert_eq!(omitted_bytes("a [… 7 bytes omitted …] b"), Some(7));
        assert_eq!(omitted_bytes("no marker"), None);
        assert_eq!(omitted_bytes("[… x bytes omitted …]"), None);
        assert_eq!(omitted_bytes("[…  bytes omitted …]"), None);
        assert_eq!(omitted_bytes("[… 12 bytes"), None);
        assert_eq!(
            omitted_bytes("[… 99999999999999999999999 bytes omitted …]"),
            None
        );
        // A broken marker-like prefix does not hide a real marker after it.
        assert_eq!(omitted_bytes("[… oops [… 3 bytes omitted …]"), Some(3));
    }

    #[test]
    fn clean_error_text_flattens_control_characters_and_white_space() {
        assert_eq!(
            clean_error_text("  line one\r\n\tline two\x1b[0m\0end  ", 1024),
            "line one line two [0m end"
        );
        assert_eq!(
            clean_error_text("a\u{85}b\u{2028}c\u{a0}d", 1024),
            "a b c d"
        );
        assert_eq!(clean_error_text(" \n\t ", 1024), "");
        assert_eq!(clean_error_text("", 1024), "");
    }

    #[test]
    fn clean_error_text_removes_bidi_zero_width_and_other_format_characters() {
        // An "unknown tool" sentence quoting a name built to mislead: after
        // a right-to-left override, `rmfdp.exe` shows as `rmexe.pdf`.
        assert_eq!(
            clean_error_text("unknown tool `rm\u{202E}fdp.exe`", 1024),
            "unknown tool `rmfdp.exe`"
        );
        for (text, cleaned) in [
            (
                "\u{FEFF}a\u{200B}b\u{200C}c\u{200D}d\u{200E}e\u{200F}f\u{2066}g\u{2069}h\u{AD}i\u{E0041}j",
                "abcdefghij",
            ),
            // Removed without separating or joining words.
            ("a \u{200B} \u{202E}b\u{FEFF}", "a b"),
            ("\u{200B}\u{FEFF}", ""),
            // Visible text of other scripts is kept.
            ("مرحبا שלום", "مرحبا שלום"),
        ] {
            assert_eq!(clean_error_text(text, 1024), cleaned, "{text:?}");
        }
    }

    #[test]
    fn clean_error_text_bounds_with_a_one_line_marker() {
        let text = "word ".repeat(1000);
        let cleaned = clean_error_text(&text, ERROR_TEXT_BYTES);
        assert!(cleaned.len() <= ERROR_TEXT_BYTES);
        assert!(!cleaned.contains('\n'));
        assert!(!cleaned.contains("  "), "{cleaned:?}");
        let omitted = omitted_bytes(&cleaned).unwrap();
        let marker = format!(" [… {omitted} bytes omitted …] ");
        let start = cleaned.find(&marker).unwrap();
        let (head, tail) = (&cleaned[..start], &cleaned[start + marker.len()..]);
        let flat = text.trim_end();
        assert!(flat.starts_with(head) && flat.ends_with(tail));
        assert_eq!(omitted, flat.len() - head.len() - tail.len());
    }

    #[test]
    fn clean_error_text_with_a_tiny_limit_keeps_a_trimmed_prefix() {
        assert_eq!(clean_error_text("ab cd ef gh ij kl mn op", 3), "ab");
    }

    #[test]
    fn json_excerpt_is_the_compact_text_when_it_fits() {
        let value = serde_json::json!({
            "b": [1, 2.5, -3, null, true, false],
            "a": "x\"\n\u{1}é",
            "c": {},
            "d": [[], {"e": [{}]}]
        });
        assert_eq!(json_excerpt(&value, 1000), value.to_string());
        assert_eq!(json_excerpt(&serde_json::json!("plain"), 7), "\"plain\"");
    }

    #[test]
    fn json_excerpt_cuts_to_the_limit_with_an_ellipsis() {
        let value = serde_json::json!({"text": "y".repeat(10_000)});
        let cut = json_excerpt(&value, 20);
        assert_eq!(cut, "{\"text\":\"yyyyyyyy...");
        assert_eq!(cut.len(), 20);
        // A multi-byte character at the cut is left out whole.
        assert_eq!(json_excerpt(&serde_json::json!("ééééé"), 8), "\"éé...");
        // Escapes count as written.
        assert_eq!(
            json_excerpt(&serde_json::json!("\u{1}\u{1}\u{1}"), 10),
            "\"\\u0001..."
        );
        assert_eq!(
            json_excerpt(&serde_json::json!([1, 2, 3, 4, 5]), 6),
            "[1,..."
        );
        // A string that only just does not fit is marked cut too.
        assert_eq!(json_excerpt(&serde_json::json!("abcdef"), 7), "\"abc...");
    }

    #[test]
    fn json_excerpt_of_a_deep_value_takes_no_stack_per_level() {
        std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(|| {
                let mut deep = serde_json::json!(1);
                for _ in 0..100_000 {
                    deep = Value::Array(vec![deep]);
                }
                assert_eq!(json_excerpt(&deep, 8), "[[[[[...");
                // serde_json's drop would recurse: leaked instead.
                std::mem::forget(deep);
            })
            .expect("a thread")
            .join()
            .expect("no overflow");
    }

    #[test]
    fn bounded_stops_a_display_early() {
        let mut out = Bounded::new(10);
        let long = "z".repeat(1 << 20);
        assert!(write!(out, "{long} and more").is_err());
        assert!(write!(out, "again").is_err());
        assert_eq!(out.finish(), "zzzzzzz...");
        let mut out = Bounded::new(10);
        write!(out, "fits").unwrap();
        assert_eq!(out.finish(), "fits");
    }

    #[test]
    fn char_boundary_helpers_stay_in_range() {
        let text = "a🦀b";
        assert_eq!(floor_char_boundary(text, 0), 0);
        assert_eq!(floor_char_boundary(text, 3), 1);
        assert_eq!(floor_char_boundary(text, 5), 5);
        assert_eq!(floor_char_boundary(text, 99), 6);
        assert_eq!(ceil_char_boundary(text, 2), 5);
        assert_eq!(ceil_char_boundary(text, 6), 6);
        assert_eq!(ceil_char_boundary(text, 99), 6);
    }
}

/// Properties: bounded, valid UTF-8, exact omitted counts.
#[cfg(test)]
mod properties {
    use std::borrow::Cow;

    use proptest::prelude::*;

    use super::*;

    /// The smallest `result_bytes` a definition may set
    /// (`limits::ResultBytes::MIN`; text sits below limits, so it is not
    /// imported).
    const MIN_RESULT_BYTES: usize = 256;

    /// Random text: arbitrary strings, plus long strings of multi-byte
    /// characters so cuts land inside 2-, 3- and 4-byte sequences.
    fn any_text() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<String>(),
            prop::collection::vec(any::<char>(), 0..3_000).prop_map(String::from_iter),
            prop::collection::vec(
                prop::sample::select(vec!['a', 'é', '€', '🦀', '\n', ' ']),
                0..10_000
            )
            .prop_map(String::from_iter),
            prop::collection::vec(prop::sample::select(vec!['a', 'b', '\n']), 0..10_000)
                .prop_map(String::from_iter),
            prop::collection::vec(
                prop::sample::select(vec![
                    'a', ' ', '\n', '\u{202E}', '\u{200B}', '\u{FEFF}', '🦀'
                ]),
                0..3_000
            )
            .prop_map(String::from_iter),
        ]
    }

    /// `clean_error_text` as it was written before it learnt to clean only
    /// the head and the tail: the whole text cleaned, then cut.
    fn clean_whole_then_cut(text: &str, limit: usize) -> String {
        let mut cleaned = String::new();
        let mut space_pending = false;
        for character in text.chars() {
            match clean_class(character) {
                Clean::Separate => space_pending = !cleaned.is_empty(),
                Clean::Remove => {}
                Clean::Keep => {
                    if space_pending {
                        cleaned.push(' ');
                        space_pending = false;
                    }
                    cleaned.push(character);
                }
            }
        }
        match plan_cut(&cleaned, limit, ERROR_SEPARATOR) {
            Cut::Fits => cleaned,
            Cut::Prefix(end) => cleaned[..end].trim_end().to_owned(),
            Cut::Middle {
                head_end,
                tail_start,
            } => {
                let head_end = cleaned[..head_end].trim_end_matches(' ').len();
                let tail_start =
                    cleaned.len() - cleaned[tail_start..].trim_start_matches(' ').len();
                join_cut(&cleaned, head_end, tail_start, ERROR_SEPARATOR)
            }
        }
    }

    fn is_format(character: char) -> bool {
        get_general_category(character) == GeneralCategory::Format
    }

    fn any_limit() -> impl Strategy<Value = usize> {
        prop_oneof![
            MIN_RESULT_BYTES..MIN_RESULT_BYTES + 64,
            MIN_RESULT_BYTES..2_000,
            MIN_RESULT_BYTES..12_000,
        ]
    }

    /// Head, omitted count and tail of a cut text, found through the documented
    /// marker.
    fn split(cut: &str) -> Option<(&str, usize, &str)> {
        let omitted = omitted_bytes(cut)?;
        let marker = format!("\n[… {omitted} bytes omitted …]\n");
        let start = cut.find(&marker)?;
        Some((&cut[..start], omitted, &cut[start + marker.len()..]))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn output_never_exceeds_the_limit(text in any_text(), limit in any_limit()) {
            prop_assert!(truncate_middle(&text, limit).len() <= limit);
        }

        #[test]
        fn text_that_fits_is_unchanged(text in any_text(), limit in any_limit()) {
            if text.len() <= limit {
                prop_assert!(matches!(truncate_middle(&text, limit), Cow::Borrowed(t) if t == text));
            }
        }

        #[test]
        fn cut_text_is_head_marker_tail_with_exact_count(text in any_text(), limit in any_limit()) {
            let cut = truncate_middle(&text, limit);
            if text.len() > limit {
                let (head, omitted, tail) = split(&cut).expect("a cut text has a marker");
                // Slicing `text` at these lengths panics unless they are character
                // boundaries: the cuts kept UTF-8 intact.
                prop_assert_eq!(&text[..head.len()], head);
                prop_assert_eq!(&text[text.len() - tail.len()..], tail);
                prop_assert_eq!(omitted, text.len() - head.len() - tail.len());
                prop_assert!(omitted > 0);
                // About half each: the head gets the rounded-up half of the
                // budget, less up to 3 bytes at a character boundary, which the
                // tail may take; the tail loses up to 3 bytes at its own.
                prop_assert!(head.len().abs_diff(tail.len()) <= 6, "head {} tail {}", head.len(), tail.len());
            }
        }

        #[test]
        fn cut_wastes_at_most_a_few_bytes(text in any_text(), limit in any_limit()) {
            // Up to 3 bytes each at two character boundaries, plus reserved
            // count digits the real count did not need.
            let cut = truncate_middle(&text, limit);
            if text.len() > limit {
                let unused_digits = text.len().to_string().len()
                    - omitted_bytes(&cut).unwrap().to_string().len();
                prop_assert!(cut.len() + 6 + unused_digits >= limit, "{} of {}", cut.len(), limit);
            }
        }

        #[test]
        fn any_limit_at_all_is_respected(text in any_text(), limit in 0usize..400) {
            // Below MIN_RESULT_BYTES too: never longer, always a prefix or a cut.
            let cut = truncate_middle(&text, limit);
            prop_assert!(cut.len() <= limit);
            if split(&cut).is_none() && text.len() > limit {
                prop_assert!(text.starts_with(cut.as_ref()));
            }
        }

        #[test]
        fn error_text_has_no_control_characters_and_fits(text in any_text(), limit in any_limit()) {
            let cleaned = clean_error_text(&text, limit);
            prop_assert!(cleaned.len() <= limit);
            prop_assert!(!cleaned.chars().any(char::is_control), "{:?}", cleaned);
            prop_assert!(!cleaned.chars().any(is_format), "{:?}", cleaned);
            prop_assert!(!cleaned.contains("  "));
            prop_assert_eq!(cleaned.trim(), cleaned.as_str());
        }

        #[test]
        fn error_text_cut_from_both_ends_equals_the_whole_text_cleaned_then_cut(
            text in any_text(),
            limit in prop_oneof![0usize..64, any_limit()],
        ) {
            prop_assert_eq!(clean_error_text(&text, limit), clean_whole_then_cut(&text, limit));
        }

        #[test]
        fn error_text_at_default_bound_fits(text in any_text()) {
            let cleaned = clean_error_text(&text, ERROR_TEXT_BYTES);
            prop_assert!(cleaned.len() <= ERROR_TEXT_BYTES);
            prop_assert!(!cleaned.chars().any(char::is_control));
        }

        #[test]
        fn error_text_with_tiny_limits_fits(text in any_text(), limit in 0usize..64) {
            let cleaned = clean_error_text(&text, limit);
            prop_assert!(cleaned.len() <= limit);
            prop_assert!(!cleaned.chars().any(char::is_control));
        }
    }
}
