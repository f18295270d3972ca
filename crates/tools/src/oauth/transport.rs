//! Bearer tokens on upstream connections: the HTTP client under rmcp's streamable HTTP
//! transport, and the helper the legacy SSE transport sends its requests through. Both
//! record an authorization failure nothing could fix in the connection's [`AuthWatch`].

use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::auth::{AuthClient, AuthError, AuthorizationManager};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::{Error as SseError, Sse};

use super::watch::{AuthWatch, SharedManager, needs_login};

type HttpError = StreamableHttpError<reqwest::Error>;

#[derive(Clone)]
enum Inner {
    /// No stored login: requests go out as configured (maybe with a static header).
    Plain(reqwest::Client),
    /// A stored login: rmcp's client adds the token, refreshes it when expired and once
    /// after a 401.
    OAuth(AuthClient<reqwest::Client>),
}

/// The streamable HTTP client of one upstream connection.
#[derive(Clone)]
pub struct HttpClient {
    inner: Inner,
    watch: Arc<AuthWatch>,
}

impl HttpClient {
    pub fn new(
        client: reqwest::Client,
        manager: Option<AuthorizationManager>,
        watch: Arc<AuthWatch>,
    ) -> HttpClient {
        let inner = match manager {
            Some(m) => Inner::OAuth(AuthClient::new(client, m)),
            None => Inner::Plain(client),
        };
        HttpClient { inner, watch }
    }

    /// Notes an error that only a new login can fix.
    fn observe<T>(&self, result: Result<T, HttpError>) -> Result<T, HttpError> {
        if let Err(e) = &result
            && let Some(why) = self.auth_failure(e)
        {
            self.watch.record(why);
        }
        result
    }

    fn auth_failure(&self, e: &HttpError) -> Option<String> {
        let with_token = matches!(self.inner, Inner::OAuth(_));
        let refused = || {
            if with_token {
                "the server refused the stored token (HTTP 401) and refreshing it did not help"
                    .to_string()
            } else {
                "the server requires authorization (HTTP 401) and no login is stored for it"
                    .to_string()
            }
        };
        match e {
            StreamableHttpError::AuthRequired(_) => Some(refused()),
            StreamableHttpError::Client(e)
                if e.status() == Some(reqwest::StatusCode::UNAUTHORIZED) =>
            {
                Some(refused())
            }
            StreamableHttpError::InsufficientScope(s) => Some(format!(
                "the token lacks a scope the server requires (HTTP 403{})",
                s.get_required_scope()
                    .map(|s| format!(", scope \"{s}\""))
                    .unwrap_or_default()
            )),
            StreamableHttpError::Auth(a) => needs_login(a).map(str::to_string),
            _ => None,
        }
    }
}

/// The same call on whichever client is inside.
macro_rules! on_inner {
    ($self:ident, $c:ident => $call:expr) => {
        match &$self.inner {
            Inner::Plain($c) => $call.await,
            Inner::OAuth($c) => $call.await,
        }
    };
}

impl HttpClient {
    /// A message went through: any recorded authorization failure is over.
    fn posted<T>(&self, result: Result<T, HttpError>) -> Result<T, HttpError> {
        if result.is_ok() {
            self.watch.clear();
        }
        self.observe(result)
    }
}

impl StreamableHttpClient for HttpClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let custom_headers = with_trace_headers(&message, custom_headers);
        let r = on_inner!(self, c => c.post_message(uri, message, session_id, auth_header, custom_headers));
        self.posted(r)
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let custom_headers = with_trace_headers(&message, custom_headers);
        let r = on_inner!(self, c => c.post_message_with_max_sse_event_size(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        ));
        self.posted(r)
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let custom_headers = with_trace_headers(&message, custom_headers);
        let r = on_inner!(self, c => c.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        ));
        self.posted(r)
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), HttpError> {
        // Closing a session is best effort; its failure says nothing about later calls.
        on_inner!(self, c => c.delete_session(uri, session_id, auth_header, custom_headers))
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, HttpError> {
        let r = on_inner!(self, c => c.get_stream(uri, session_id, last_event_id, auth_header, custom_headers));
        self.observe(r)
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, HttpError> {
        let r = on_inner!(self, c => c.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        ));
        self.observe(r)
    }
}

/// A `tools/call` carries its trace context (`_meta.traceparent`, `_meta.tracestate`, see
/// `crate::trace`) in the W3C headers too, for HTTP servers and proxies that read those.
fn with_trace_headers(
    message: &ClientJsonRpcMessage,
    mut headers: HashMap<HeaderName, HeaderValue>,
) -> HashMap<HeaderName, HeaderValue> {
    use rmcp::model::ClientRequest;
    if let ClientJsonRpcMessage::Request(r) = message
        && let ClientRequest::CallToolRequest(call) = &r.request
        && let Some(meta) = &call.params.meta
    {
        for key in [
            crate::trace::META_TRACEPARENT,
            crate::trace::META_TRACESTATE,
        ] {
            if let Some(v) = meta.get(key).and_then(|v| v.as_str())
                && let Ok(v) = HeaderValue::from_str(v)
            {
                headers.insert(HeaderName::from_static(key), v);
            }
        }
    }
    headers
}

/// Authorization for the legacy SSE transport's requests (the event-stream GET and each
/// message POST).
/// Why an authorized request could not be sent, or was refused.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// A (new) login is needed; the reason is recorded in the server's [`AuthWatch`].
    #[error("{0}")]
    NeedsLogin(&'static str),
    #[error("{0}")]
    Auth(AuthError),
    #[error("OAuth token refresh failed: {0}")]
    Refresh(AuthError),
    #[error("{0}")]
    Http(#[from] reqwest::Error),
}

pub struct SseAuth {
    manager: Option<SharedManager>,
    watch: Arc<AuthWatch>,
}

impl SseAuth {
    pub fn new(manager: Option<AuthorizationManager>, watch: Arc<AuthWatch>) -> SseAuth {
        SseAuth {
            manager: manager.map(|m| Arc::new(tokio::sync::Mutex::new(m))),
            watch,
        }
    }

    /// Sends the request `make` builds, with the stored token when there is one (refreshed
    /// first if it expired); after a 401, refreshes once and sends it again. A 401 that
    /// remains is recorded and returned as an error.
    pub async fn send(
        &self,
        make: impl Fn(Option<&str>) -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, SendError> {
        let token = match &self.manager {
            None => None,
            Some(m) => {
                let got = m.lock().await.get_access_token().await;
                match got {
                    Ok(t) => Some(t),
                    Err(e) => return Err(self.fail(e)),
                }
            }
        };
        let response = make(token.as_deref()).send().await?;
        if response.status() != reqwest::StatusCode::UNAUTHORIZED {
            self.watch.clear();
            return Ok(response);
        }
        if let (Some(m), Some(sent)) = (&self.manager, token) {
            let refreshed = m.lock().await.refresh_token().await;
            match refreshed {
                Ok(_) => {
                    let fresh = m.lock().await.get_access_token().await;
                    match fresh {
                        Ok(fresh) if fresh != sent => {
                            let again = make(Some(&fresh)).send().await?;
                            if again.status() != reqwest::StatusCode::UNAUTHORIZED {
                                self.watch.clear();
                                return Ok(again);
                            }
                        }
                        Ok(_) => {}
                        Err(e) => return Err(self.fail(e)),
                    }
                }
                Err(e) if needs_login(&e).is_some() => return Err(self.fail(e)),
                Err(e) => return Err(SendError::Refresh(e)),
            }
            let why =
                "the server refused the stored token (HTTP 401) and refreshing it did not help";
            self.watch.record(why);
            return Err(SendError::NeedsLogin(why));
        }
        let why = "the server requires authorization (HTTP 401) and no login is stored for it";
        self.watch.record(why);
        Err(SendError::NeedsLogin(why))
    }

    fn fail(&self, e: AuthError) -> SendError {
        match needs_login(&e) {
            Some(why) => {
                self.watch.record(why);
                SendError::NeedsLogin(why)
            }
            None => SendError::Auth(e),
        }
    }
}
