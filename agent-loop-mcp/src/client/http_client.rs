//! The streamable HTTP client of a binding: the SDK's own `reqwest` client,
//! wrapped so that an answer over the SDK's message limit is reported as
//! such, not as a closed server.
//!
//! The SDK (`rmcp`) refuses, before parsing, an SSE event above its
//! `max_sse_event_size` and a JSON response body above its
//! `max_json_response_size` (both 16 MiB by default:
//! `StreamableHttpResponseLimits`). What the caller then sees is not what
//! happened: an oversized SSE event ends the request's response stream, and
//! the SDK answers the request with its "transport closed" error, which
//! reads as a server that is gone (this crate said "the MCP server is not
//! running"); an oversized JSON body fails the send, which reads the same.
//! The server is alive and answers the next call.
//!
//! [`LimitAwareClient`] passes every request to the SDK's client and looks
//! at the answer of each request: when the SDK refused it for its size, the
//! answer becomes a JSON-RPC error response to that request, whose `data`
//! carries the limit and a token of this connection
//! ([`OVER_LIMIT_KEY`]). The call then fails with
//! [`McpCallError::ResultTooLarge`](crate::client::McpCallError::ResultTooLarge),
//! naming the limit in bytes, and the connection goes on. A server cannot
//! fake that error: it does not know the token.
//!
//! An SSE event the SDK refused is told from other stream errors by the
//! SDK's error text, `SSE event exceeded the maximum size of {limit}
//! bytes`, with the limit this client set (the SDK's error type for it is
//! private); the `it` tests pin that text against the SDK at its real
//! limit.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ErrorData, RequestId, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use serde_json::{Value, json};
use sse_stream::Sse;

use crate::client::listing::ListingTap;

/// The key, in a JSON-RPC error's `data`, of an answer this client refused
/// for its size: `{"limitBytes": N, "token": "…"}`.
pub(crate) const OVER_LIMIT_KEY: &str = "agent-loop/overMessageLimit";

/// Redirects the client follows for one request, as the SDK's own client.
const MAX_REDIRECTS: usize = 10;

/// The SDK's `reqwest` client, and the token of this connection.
#[derive(Clone)]
pub(crate) struct LimitAwareClient {
    inner: rmcp_reqwest::Client,
    token: Arc<str>,
    /// Reads the `tools/list` results of the SSE streams while binding.
    listing: Arc<ListingTap>,
}

impl LimitAwareClient {
    /// A client built like the SDK's default one (`rmcp`'s
    /// `StreamableHttpClientTransport::from_config`): no idle connections
    /// kept (the SDK's fix for stalls from TCP delayed ACK), and only
    /// same-origin 307 and 308 redirects followed, at most 10, since
    /// other redirects lose a POST's body or send the session and headers
    /// to another host.
    ///
    /// Errors: `reqwest`'s, when its TLS backend cannot start.
    pub(crate) fn new(
        token: Arc<str>,
        listing: Arc<ListingTap>,
    ) -> Result<Self, rmcp_reqwest::Error> {
        let redirects = rmcp_reqwest::redirect::Policy::custom(|attempt| {
            let keeps_body = matches!(
                attempt.status(),
                rmcp_reqwest::StatusCode::TEMPORARY_REDIRECT
                    | rmcp_reqwest::StatusCode::PERMANENT_REDIRECT
            );
            let same_origin = attempt
                .previous()
                .first()
                .is_some_and(|first| first.origin() == attempt.url().origin());
            if !keeps_body || !same_origin {
                attempt.stop()
            } else if attempt.previous().len() > MAX_REDIRECTS {
                attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
            } else {
                attempt.follow()
            }
        });
        let inner = rmcp_reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .redirect(redirects)
            .build()?;
        Ok(Self {
            inner,
            token,
            listing,
        })
    }
}

/// The error response to `id` for an answer over `limit` bytes.
fn over_limit(id: RequestId, limit: usize, token: &str) -> ServerJsonRpcMessage {
    ServerJsonRpcMessage::error(
        ErrorData::internal_error(
            format!("the answer was over the client's limit of {limit} bytes per message"),
            Some(json!({ OVER_LIMIT_KEY: { "limitBytes": limit, "token": token } })),
        ),
        Some(id),
    )
}

/// The limit an over-limit error of this connection names, if `data` is
/// one.
pub(crate) fn over_limit_bytes(data: Option<&Value>, token: &str) -> Option<usize> {
    let marker = data?.get(OVER_LIMIT_KEY)?;
    (marker.get("token")?.as_str()? == token)
        .then(|| marker.get("limitBytes")?.as_u64())
        .flatten()
        .and_then(|limit| usize::try_from(limit).ok())
}

/// `true` when `error` is the SDK refusing an SSE event over `limit`.
fn is_event_over(error: &SseError, limit: usize) -> bool {
    matches!(error, SseError::Body(body)
        if body.to_string() == format!("SSE event exceeded the maximum size of {limit} bytes"))
}

/// The response stream of request `id`, with an event the SDK refused for
/// its size turned into the error response to the request (the stream ends
/// there, as the SDK ends it), and each event's data read by `listing`
/// while it is active.
fn watched(
    stream: BoxStream<'static, Result<Sse, SseError>>,
    id: RequestId,
    limit: usize,
    token: Arc<str>,
    listing: Arc<ListingTap>,
) -> BoxStream<'static, Result<Sse, SseError>> {
    stream
        .map(move |event| match event {
            Ok(event) => {
                if let Some(data) = event.data.as_deref().filter(|_| listing.is_active()) {
                    listing.read_line(data.as_bytes());
                }
                (Ok(event), false)
            }
            Err(error) if is_event_over(&error, limit) => {
                let answer = serde_json::to_string(&over_limit(id.clone(), limit, &token));
                match answer {
                    Ok(answer) => (Ok(Sse::default().data(answer)), true),
                    Err(_) => (Err(error), true),
                }
            }
            other => (other, false),
        })
        .scan(false, |ended, (event, last)| {
            let next = (!*ended).then_some(event);
            *ended = last;
            std::future::ready(next)
        })
        .boxed()
}

impl StreamableHttpClient for LimitAwareClient {
    type Error = rmcp_reqwest::Error;

    fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>>>
    + Send
    + '_ {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
    }

    fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> impl Future<Output = Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>>>
    + Send
    + '_ {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
    }

    fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> impl Future<Output = Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>>>
    + Send
    + '_ {
        let id = match &message {
            ClientJsonRpcMessage::Request(request) => Some(request.id.clone()),
            _ => None,
        };
        async move {
            let answer = self
                .inner
                .post_message_with_response_limits(
                    uri,
                    message,
                    session_id,
                    auth_header,
                    custom_headers,
                    limits,
                )
                .await;
            let Some(id) = id else {
                return answer;
            };
            match answer {
                Err(StreamableHttpError::ResponseBodyTooLarge { max_size }) => Ok(
                    StreamableHttpPostResponse::Json(over_limit(id, max_size, &self.token), None),
                ),
                Ok(StreamableHttpPostResponse::Sse(stream, session)) => {
                    Ok(StreamableHttpPostResponse::Sse(
                        watched(
                            stream,
                            id,
                            limits.max_sse_event_size,
                            Arc::clone(&self.token),
                            Arc::clone(&self.listing),
                        ),
                        session,
                    ))
                }
                other => other,
            }
        }
    }

    fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<(), StreamableHttpError<Self::Error>>> + Send + '_ {
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
    }

    fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<
        Output = Result<
            BoxStream<'static, Result<Sse, SseError>>,
            StreamableHttpError<Self::Error>,
        >,
    > + Send
    + '_ {
        self.inner
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
    }

    fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> impl Future<
        Output = Result<
            BoxStream<'static, Result<Sse, SseError>>,
            StreamableHttpError<Self::Error>,
        >,
    > + Send
    + '_ {
        self.inner.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_this_connections_token_makes_an_over_limit_error() {
        let answer = over_limit(RequestId::Number(7), 1024, "secret");
        let ServerJsonRpcMessage::Error(error) = answer else {
            panic!("an error response");
        };
        assert_eq!(
            over_limit_bytes(error.error.data.as_ref(), "secret"),
            Some(1024)
        );
        assert_eq!(over_limit_bytes(error.error.data.as_ref(), "other"), None);
        assert_eq!(over_limit_bytes(None, "secret"), None);
    }
}
