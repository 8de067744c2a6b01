//! Credentials kept out of what is logged, debugged or put in an error: a
//! URL's userinfo (`user:pass@`), query (`?key=…`) and fragment, where
//! proxies, Gemini's OpenAI-compatible endpoint (`?key=`) and hosted MCP
//! servers (`?token=`) put secrets.

/// `url` as logs and `Debug` show it: without userinfo (`user:pass@`),
/// query (`?key=…`) or fragment, which may hold credentials.
pub fn redact_url(url: &str) -> String {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    let url = &url[..end];
    let Some(scheme_end) = url.find("://") else {
        return url.to_owned();
    };
    let (scheme, rest) = url.split_at(scheme_end + 3);
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    format!("{scheme}{host}{path}")
}

/// `text` with every URL in it (`scheme://…`, up to a space, a quote or a
/// bracket) shown as [`redact_url`] shows it. For messages a library wrote
/// around a URL it was given: reqwest's errors name the whole request URL
/// ("error sending request for url (http://host/mcp?token=…)").
pub(crate) fn redact_urls_in(text: &str) -> String {
    let mut shown = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(separator) = rest.find("://") {
        let scheme_start = rest[..separator]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |before| {
                before + rest[before..].chars().next().map_or(1, char::len_utf8)
            });
        let end = rest[separator..]
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '(' | ')'))
            .map_or(rest.len(), |length| separator + length);
        shown.push_str(&rest[..scheme_start]);
        shown.push_str(&redact_url(&rest[scheme_start..end]));
        rest = &rest[end..];
    }
    shown.push_str(rest);
    shown
}

/// An error that a library built around a URL, kept as its message chain
/// (each `source()` joined with `: `) with every URL redacted. The chain
/// is flattened because each of its errors may quote the URL again.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
#[non_exhaustive]
pub struct RedactedError(String);

impl RedactedError {
    /// `error` and its sources, joined with `: `, every URL in them
    /// redacted as [`redact_url`] shows it.
    pub fn new(error: &(dyn std::error::Error + 'static)) -> Self {
        let mut text = error.to_string();
        let mut source = error.source();
        while let Some(error) = source {
            text.push_str(": ");
            text.push_str(&error.to_string());
            source = error.source();
        }
        Self(redact_urls_in(&text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacted_urls_keep_scheme_host_and_path_only() {
        for (url, shown) in [
            ("https://api.openai.com/v1", "https://api.openai.com/v1"),
            (
                "http://user:PASS@proxy.local:8080/v1",
                "http://proxy.local:8080/v1",
            ),
            (
                "https://host/v1beta/openai?key=SECRET#x",
                "https://host/v1beta/openai",
            ),
            ("http://p@ss:w@host?x=1", "http://host"),
            ("localhost:8080/v1?key=SECRET", "localhost:8080/v1"),
        ] {
            assert_eq!(redact_url(url), shown, "{url}");
        }
    }

    #[test]
    fn every_url_in_a_message_loses_its_credentials_and_the_rest_stays() {
        for (text, shown) in [
            (
                "error sending request for url (http://127.0.0.1:9/mcp?token=SECRET)",
                "error sending request for url (http://127.0.0.1:9/mcp)",
            ),
            (
                "from https://u:PW@a.example/x?k=1 to wss://b.example/y#frag, done",
                "from https://a.example/x to wss://b.example/y done",
            ),
            ("no url here: a://", "no url here: a://"),
            ("://?secret at the start", ":// at the start"),
            ("éhttp://h?x=SECRET", "éhttp://h"),
            ("é http://h/p?q=1\"", "é http://h/p\""),
        ] {
            assert_eq!(redact_urls_in(text), shown, "{text}");
        }
    }
}
