//! Why one request failed, in words a user can act on.
//!
//! object_store words its errors for its own developers: `Generic HTTP
//! error: Error performing GET http://... in 983µs - Server returned non-2xx
//! status code: 503 Service Unavailable: ` (a duration in microseconds, an
//! empty body). [`describe`] keeps what matters: the HTTP status and reason,
//! the error code and message an S3-style server sent in its body, or what
//! happened to the connection ("timed out after 30 s", "connection reset by
//! the server"). The URL and byte range are added by the caller.

use std::time::Duration;

/// Why one attempt failed.
pub(super) enum Failure {
    /// The store answered with fewer bytes than asked for.
    Short { got: usize, expected: u64 },
    /// The store failed.
    Store(object_store::Error),
}

impl From<object_store::Error> for Failure {
    fn from(e: object_store::Error) -> Failure {
        Failure::Store(e)
    }
}

impl Failure {
    /// Whether trying again may succeed: short bodies and object_store's
    /// generic errors (statuses other than 404/403/401/304/412, timeouts,
    /// dropped connections, bad `Content-Range`).
    pub(super) fn transient(&self) -> bool {
        match self {
            Failure::Short { .. } => true,
            Failure::Store(e) => matches!(e, object_store::Error::Generic { .. }),
        }
    }

    /// Plain words for this failure of a request to a `remote` (or local)
    /// store whose requests time out after `timeout`.
    pub(super) fn describe(&self, remote: bool, timeout: Duration) -> String {
        match self {
            Failure::Short { got, expected } => {
                format!("short read: expected {expected} bytes, got {got}")
            }
            Failure::Store(e) => describe(e, remote, timeout),
        }
    }
}

/// Plain words for `e` (see the module documentation).
pub(super) fn describe(e: &object_store::Error, remote: bool, timeout: Duration) -> String {
    use object_store::Error as E;
    match e {
        E::NotFound { .. } if remote => return "object not found".into(),
        E::NotFound { .. } => return "file not found".into(),
        _ => {}
    }
    let chain = messages(e);
    if let Some(status) = chain.iter().find_map(|m| http_status(m)) {
        let denied = match e {
            E::PermissionDenied { .. } => "access denied: ",
            E::Unauthenticated { .. } => "not authenticated: ",
            _ => "",
        };
        return match server_error(&chain) {
            Some(said) => format!("{denied}HTTP {status} ({said})"),
            None => format!("{denied}HTTP {status}"),
        };
    }
    let all = chain.join(": ");
    let text = all.to_ascii_lowercase();
    if let Some(answered) = chain.iter().find_map(|m| other_range(m)) {
        return answered;
    }
    if text.contains("timed out") || text.contains("deadline has elapsed") {
        format!("timed out after {}", seconds(timeout))
    } else if text.contains("connection reset") {
        "connection reset by the server".into()
    } else if text.contains("connection refused") {
        "connection refused".into()
    } else if text.contains("connection closed before message completed") {
        "the server closed the connection without answering".into()
    } else if text.contains("end of file before message length reached")
        || text.contains("unexpected eof")
    {
        "the connection closed before the whole answer arrived".into()
    } else if text.contains("dns error") || text.contains("failed to lookup address") {
        "the server's name could not be resolved".into()
    } else {
        // Unknown: the innermost cause, which names what happened, without
        // object_store's framing.
        strip_framing(chain.last().map_or("", String::as_str))
    }
}

/// The messages of `e` and of its causes, outermost first, each without
/// the text of the causes it already repeats.
fn messages(e: &(dyn std::error::Error + 'static)) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut cause = Some(e);
    while let Some(c) = cause {
        out.push(c.to_string());
        cause = c.source();
    }
    out
}

/// `503 Service Unavailable` out of object_store's `... status code: 503
/// Service Unavailable: <body>` (or `... error response: <body>`).
fn http_status(message: &str) -> Option<String> {
    let at = message.find("status code: ")? + "status code: ".len();
    let rest = &message[at..];
    let end = rest.find(':').unwrap_or(rest.len());
    let status = rest[..end].trim();
    (status.len() >= 3 && status.as_bytes()[..3].iter().all(u8::is_ascii_digit))
        .then(|| status.to_string())
}

/// The `Code: Message` of an S3-style XML error body (or the first line of
/// a short plain-text body) in any message of the chain.
fn server_error(chain: &[String]) -> Option<String> {
    let tag = |body: &str, name: &str| -> Option<String> {
        let open = format!("<{name}>");
        let at = body.find(&open)? + open.len();
        let end = body[at..].find('<')?;
        Some(body[at..at + end].trim().to_string()).filter(|s| !s.is_empty())
    };
    for m in chain {
        if let Some(code) = tag(m, "Code") {
            return Some(match tag(m, "Message") {
                Some(text) => format!("{code}: {text}"),
                None => code,
            });
        }
    }
    // A plain-text body after the status: `...: 503 Service Unavailable: text`.
    let m = chain.iter().find(|m| http_status(m).is_some())?;
    let after = &m[m.find("status code: ")?..];
    let body = after.splitn(3, ':').nth(2)?.trim();
    let line = body.lines().next()?.trim();
    (!line.is_empty() && !line.starts_with('<')).then(|| truncate(line, 200))
}

/// `the server answered bytes 2..4 for bytes 2..6` out of object_store's
/// `Requested 2..6, got 2..4` (a `Content-Range` other than the one asked).
fn other_range(message: &str) -> Option<String> {
    let rest = message.strip_prefix("Requested ").or_else(|| {
        message
            .find("Requested ")
            .map(|at| &message[at + "Requested ".len()..])
    })?;
    let (asked, got) = rest.split_once(", got ")?;
    Some(format!(
        "the server sent bytes {} (Content-Range) for a request of bytes {asked}",
        got.trim()
    ))
}

/// A message without object_store's framing: `Generic X error: `,
/// `Error performing GET url in 2ms - `, `HTTP error: `.
fn strip_framing(message: &str) -> String {
    let mut m = message;
    loop {
        let before = m;
        if let Some(rest) = m.strip_prefix("Generic ") {
            if let Some(at) = rest.find(" error: ") {
                m = &rest[at + " error: ".len()..];
            }
        }
        if m.starts_with("Error performing ") {
            if let Some(at) = m.find(" - ") {
                m = &m[at + " - ".len()..];
            }
        }
        m = m.strip_prefix("HTTP error: ").unwrap_or(m);
        if m == before {
            return m.to_string();
        }
    }
}

/// `30 s`, `1.5 s`.
fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s} s")
    }
}

/// `text` cut to at most `n` characters, with `...` when cut.
fn truncate(text: &str, n: usize) -> String {
    match text.char_indices().nth(n) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Text(String, Option<Box<Text>>);

    impl std::fmt::Display for Text {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(&self.0)
        }
    }

    impl std::error::Error for Text {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|t| t as _)
        }
    }

    /// object_store's generic error over the given chain of messages.
    fn generic(outer: &str, inner: &[&str]) -> object_store::Error {
        let mut cause: Option<Box<Text>> = None;
        for m in inner.iter().rev() {
            cause = Some(Box::new(Text(m.to_string(), cause)));
        }
        object_store::Error::Generic {
            store: "HTTP",
            source: Box::new(Text(outer.to_string(), cause)),
        }
    }

    fn said(e: object_store::Error) -> String {
        describe(&e, true, Duration::from_secs(30))
    }

    #[test]
    fn statuses_without_durations_or_empty_bodies() {
        let e = generic(
            "Error performing GET http://h/a in 983µs - Server returned non-2xx status code: 503 Service Unavailable: ",
            &[],
        );
        assert_eq!(said(e), "HTTP 503 Service Unavailable");
        let e = generic(
            "Error performing GET http://h/a in 2ms - Server returned non-2xx status code: 500 Internal Server Error: <?xml version=\"1.0\"?><Error><Code>InternalError</Code><Message>We encountered an internal error.</Message></Error>",
            &[],
        );
        assert_eq!(
            said(e),
            "HTTP 500 Internal Server Error (InternalError: We encountered an internal error.)"
        );
        let e = generic(
            "Error performing GET http://h/a in 2ms - Server returned non-2xx status code: 429 Too Many Requests: slow down please",
            &[],
        );
        assert_eq!(said(e), "HTTP 429 Too Many Requests (slow down please)");
    }

    #[test]
    fn connections_in_plain_words() {
        let cases = [
            ("error sending request: operation timed out", "timed out after 30 s"),
            (
                "error sending request: client error (SendRequest): connection closed before message completed",
                "the server closed the connection without answering",
            ),
            (
                "request or response body error: error reading a body from connection: end of file before message length reached",
                "the connection closed before the whole answer arrived",
            ),
            ("Connection reset by peer (os error 104)", "connection reset by the server"),
            ("tcp connect error: Connection refused (os error 111)", "connection refused"),
        ];
        for (inner, want) in cases {
            let e = generic(
                "Error performing GET http://h/a in 1.001537413s - HTTP error: x",
                &["HTTP error: x", inner],
            );
            assert_eq!(said(e), want, "{inner}");
        }
        assert_eq!(
            describe(
                &generic("x", &["operation timed out"]),
                true,
                Duration::from_millis(1500)
            ),
            "timed out after 1.5 s"
        );
    }

    #[test]
    fn a_shifted_content_range_says_what_came() {
        let e = generic("Requested 0..953, got 100..1053", &[]);
        assert_eq!(
            said(e),
            "the server sent bytes 100..1053 (Content-Range) for a request of bytes 0..953"
        );
    }

    #[test]
    fn unknown_errors_keep_their_causes_without_framing() {
        let e = generic(
            "Error performing GET http://h/a in 2ms - HTTP error: something odd",
            &[],
        );
        assert_eq!(said(e), "something odd");
        let e = object_store::Error::NotFound {
            path: "a".into(),
            source: Box::new(Text("x".into(), None)),
        };
        assert_eq!(said(e), "object not found");
    }
}
