//! What a provider's response headers say: the request id, and how long
//! the server asks a client to wait before it retries.

use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;

/// The longest wait a server's `Retry-After` can impose on a retry: a
/// longer ask is not retried (the error reports the wait asked for), so a
/// turn never sleeps for minutes on one header, nor comes back early.
pub(crate) const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// Waits beyond this are read as this (a day): no `Duration` overflows.
const LONGEST_READ: f64 = 86_400.0;

/// The server's `x-should-retry` (`true` or `false`), which the official
/// OpenAI and Anthropic SDKs read before the status; `None` when absent or
/// anything else.
pub(crate) fn should_retry(headers: &HeaderMap) -> Option<bool> {
    match headers.get("x-should-retry")?.to_str().ok()?.trim() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// The request id the server sent with its answer (`x-request-id` for
/// OpenAI, `request-id` for Anthropic), to quote to support.
pub(crate) fn request_id(headers: &HeaderMap) -> Option<String> {
    ["x-request-id", "request-id"]
        .iter()
        .find_map(|name| headers.get(*name)?.to_str().ok())
        .map(str::to_owned)
}

/// The wait a server asks for: `retry-after-ms` (milliseconds, OpenAI and
/// Anthropic), else `Retry-After` in seconds or as an HTTP date, as asked
/// (read as at most a day). `None` when absent or unreadable.
pub(crate) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let header = |name: &str| headers.get(name)?.to_str().ok().map(str::trim);
    // A number of `unit`s, capped before it becomes a `Duration`.
    let number = |text: &str, unit: f64| {
        text.parse::<f64>()
            .ok()
            .filter(|value| value.is_finite() && *value >= 0.0)
            .map(|value| Duration::from_secs_f64((value * unit).min(LONGEST_READ)))
    };
    let seconds = |text: &str| number(text, 1.0);
    let wait = header("retry-after-ms")
        .and_then(|ms| number(ms, 0.001))
        .or_else(|| {
            let value = header("retry-after")?;
            seconds(value).or_else(|| {
                let date = httpdate::parse_http_date(value).ok()?;
                Some(date.duration_since(now).unwrap_or_default())
            })
        })?;
    Some(wait.min(Duration::from_secs_f64(LONGEST_READ)))
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn retry_after_reads_milliseconds_seconds_and_dates_as_asked() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        let date = httpdate::fmt_http_date(now + Duration::from_secs(7));
        type Case<'a> = (&'a [(&'static str, &'a str)], Option<Duration>);
        let cases: [Case<'_>; 8] = [
            (&[], None),
            (&[("retry-after", "1")], Some(Duration::from_secs(1))),
            (&[("retry-after", "1.5")], Some(Duration::from_millis(1500))),
            (&[("retry-after", &date)], Some(Duration::from_secs(7))),
            (
                &[("retry-after-ms", "250"), ("retry-after", "9")],
                Some(Duration::from_millis(250)),
            ),
            (&[("retry-after", "600")], Some(Duration::from_secs(600))),
            (
                &[("retry-after", "1e300")],
                Some(Duration::from_secs(86_400)),
            ),
            (&[("retry-after", "soon")], None),
        ];
        for (pairs, expected) in cases {
            assert_eq!(retry_after(&headers(pairs), now), expected, "{pairs:?}");
        }
    }
}

#[cfg(test)]
mod should_retry_tests {
    use reqwest::header::{HeaderMap, HeaderValue};

    #[test]
    fn x_should_retry_is_true_false_or_unsaid() {
        for (value, expected) in [
            ("true", Some(true)),
            ("false", Some(false)),
            ("maybe", None),
        ] {
            let mut headers = HeaderMap::new();
            headers.insert("x-should-retry", HeaderValue::from_static(value));
            assert_eq!(super::should_retry(&headers), expected, "{value}");
        }
        assert_eq!(super::should_retry(&HeaderMap::new()), None);
    }
}
