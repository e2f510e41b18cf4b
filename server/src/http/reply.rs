//! What a route answers, and how a status code of the binary protocol becomes an HTTP status
//! and upstream's error body.

use bytes::Bytes;
use http_body_util::Full;
use hyper::StatusCode;
use hyper::header::{self, HeaderName, HeaderValue};
use rill_core::ErrorCode;
use serde::Serialize;

#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub content_type: &'static str,
    pub body: Bytes,
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

impl Reply {
    pub fn json(status: StatusCode, value: &impl Serialize) -> Reply {
        match serde_json::to_vec(value) {
            Ok(body) => Reply {
                status,
                content_type: "application/json",
                body: body.into(),
                headers: Vec::new(),
            },
            Err(error) => Reply::error_status(
                StatusCode::INTERNAL_SERVER_ERROR,
                ErrorCode::CannotSerializeResource,
                &error.to_string(),
            ),
        }
    }

    pub fn ok(value: &impl Serialize) -> Reply {
        Reply::json(StatusCode::OK, value)
    }

    pub fn empty(status: StatusCode) -> Reply {
        Reply {
            status,
            content_type: "text/plain; charset=utf-8",
            body: Bytes::new(),
            headers: Vec::new(),
        }
    }

    pub fn text(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Reply {
        Reply {
            status,
            content_type,
            body: body.into(),
            headers: Vec::new(),
        }
    }

    /// A status of the binary protocol, with the HTTP status upstream gives it.
    pub fn error(code: ErrorCode) -> Reply {
        Reply::error_status(status_of(code), code, code.message())
    }

    pub fn error_status(status: StatusCode, code: ErrorCode, reason: &str) -> Reply {
        Reply {
            status,
            content_type: "application/json",
            body: error_body(code, reason).into(),
            headers: Vec::new(),
        }
    }

    pub fn with_header(mut self, name: HeaderName, value: HeaderValue) -> Reply {
        self.headers.push((name, value));
        self
    }

    pub fn into_response(self, head_only: bool) -> hyper::Response<Full<Bytes>> {
        let length = self.body.len();
        let body = if head_only { Bytes::new() } else { self.body };
        let mut response = hyper::Response::new(Full::new(body));
        *response.status_mut() = self.status;
        let headers = response.headers_mut();
        if length > 0 || self.status != StatusCode::NO_CONTENT {
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(self.content_type),
            );
        }
        if head_only {
            headers.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
        }
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        for (name, value) in self.headers {
            headers.insert(name, value);
        }
        response
    }
}

/// Upstream's error body: the numeric code, its name in snake case, and the reason.
#[derive(Serialize)]
struct ErrorBody<'a> {
    id: u32,
    code: String,
    reason: &'a str,
    field: Option<&'a str>,
}

pub fn error_body(code: ErrorCode, reason: &str) -> String {
    serde_json::to_string(&ErrorBody {
        id: code.code(),
        code: snake_case(code.name()),
        reason,
        field: None,
    })
    .unwrap_or_default()
}

/// The HTTP status of a refusal, as upstream gives it. Not found is exactly 404, which the
/// official SDK maps to `Ok(None)`; a missing or bad token 401 (a wrong password is 400, as
/// upstream); a missing permission 403; everything else 400. Nothing deterministic is 5xx: the
/// SDK retries 5xx.
pub fn status_of(code: ErrorCode) -> StatusCode {
    match code {
        code if code.name().ends_with("NotFound") => StatusCode::NOT_FOUND,
        ErrorCode::Unauthenticated
        | ErrorCode::InvalidAccessToken
        | ErrorCode::AccessTokenMissing
        | ErrorCode::JwtMissing
        | ErrorCode::InvalidPersonalAccessToken => StatusCode::UNAUTHORIZED,
        ErrorCode::Unauthorized => StatusCode::FORBIDDEN,
        _ => StatusCode::BAD_REQUEST,
    }
}

fn snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 8);
    for (index, character) in name.chars().enumerate() {
        if character.is_ascii_uppercase() {
            if index > 0 {
                out.push('_');
            }
            out.push(character.to_ascii_lowercase());
        } else {
            out.push(character);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_follow_what_the_sdk_maps() {
        assert_eq!(
            status_of(ErrorCode::StreamIdNotFound),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            status_of(ErrorCode::ResourceNotFound),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            status_of(ErrorCode::ConsumerGroupNameNotFound),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            status_of(ErrorCode::Unauthenticated),
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(status_of(ErrorCode::Unauthorized), StatusCode::FORBIDDEN);
        assert_eq!(
            status_of(ErrorCode::StreamNameAlreadyExists),
            StatusCode::BAD_REQUEST
        );
    }

    #[test]
    fn error_bodies_name_the_code() {
        let body: serde_json::Value =
            serde_json::from_str(&error_body(ErrorCode::StreamIdNotFound, "gone")).unwrap();
        assert_eq!(body["id"], 1009);
        assert_eq!(body["code"], "stream_id_not_found");
        assert_eq!(body["reason"], "gone");
    }
}
