//! System routes: `/metrics`, `/stats`, `/clients`, `/snapshot`, `/cluster/metadata`, and the
//! 0.9-generation SDK's `/options/{scope}`.

use super::{Call, authenticate, decoded, listed};
use crate::http::bodies::{self, json};
use crate::http::operators;
use crate::http::reply::Reply;
use crate::http::state::Api;
use crate::http::views::{self, StatsView};
use hyper::StatusCode;
use hyper::header::{self, HeaderValue};
use hyper::http::request::Parts;
use rill_core::ErrorCode;
use rill_core::requests as binary;
use rill_core::responses::{ClientDetails, ClientInfo, ClusterMetadata, Stats};
use std::net::SocketAddr;

pub fn metrics(api: &Api) -> Reply {
    Reply::text(
        StatusCode::OK,
        "application/openmetrics-text; version=1.0.0; charset=utf-8",
        operators::metrics_page(&api.operators),
    )
}

/// `/stats`: GetStats for a bearer token's user (who needs read_servers, as for the binary
/// command), and for operators without one: HTTP Basic credentials or a personal access token
/// of such a user, or anyone with `http.public_stats`.
pub async fn stats(api: &Api, parts: &Parts, peer: SocketAddr) -> Reply {
    let io_driver = Some(api.operators.io_driver());
    if let Ok((user_id, _)) = authenticate(api, parts) {
        return match api
            .bridge
            .run(Some(user_id), peer, binary::GetStats {}.into())
            .await
        {
            Ok(response) => match decoded::<Stats>(response) {
                Ok(stats) => Reply::ok(&StatsView::new(&stats, io_driver)),
                Err(reply) => reply,
            },
            Err(code) => Reply::error(code),
        };
    }
    let authorization = parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let allowed = api.shared.config.http.public_stats || {
        // A password check (Argon2id) takes tens of milliseconds: off the HTTP thread's loop.
        let endpoint = api.operators.clone();
        tokio::task::spawn_blocking(move || {
            operators::may_read_stats(&endpoint, authorization.as_deref())
        })
        .await
        .unwrap_or(false)
    };
    if !allowed {
        return Reply::empty(StatusCode::UNAUTHORIZED).with_header(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"iggy\""),
        );
    }
    match api.operators.stats() {
        Some(stats) => Reply::ok(&StatsView::new(&stats, io_driver)),
        None => Reply::error_status(
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::Error,
            "shutting down",
        ),
    }
}

pub async fn cluster(call: &Call<'_>) -> Result<Reply, Reply> {
    let cluster: ClusterMetadata = call.fetch(binary::GetClusterMetadata {}).await?;
    Ok(Reply::ok(&views::Cluster::from(&cluster)))
}

pub async fn clients(call: &Call<'_>) -> Result<Reply, Reply> {
    let mut clients: Vec<ClientInfo> = listed(call.run(binary::GetClients {}).await?)?;
    clients.sort_by_key(|client| client.client_id);
    Ok(Reply::ok(
        &clients.iter().map(views::Client::from).collect::<Vec<_>>(),
    ))
}

pub async fn client(call: &Call<'_>, id: &str) -> Result<Reply, Reply> {
    let client_id = id
        .parse::<u32>()
        .map_err(|_| bodies::bad(ErrorCode::InvalidClientId, format!("client id {id:?}")))?;
    let client: ClientDetails = call.fetch(binary::GetClient { client_id }).await?;
    Ok(Reply::ok(&views::ClientWithGroups::from(&client)))
}

pub async fn snapshot(call: &Call<'_>) -> Result<Reply, Reply> {
    let body: bodies::Snapshot = json(&call.body)?;
    let archive = match call.run(body.request()?).await? {
        crate::handlers::Response::Bytes(bytes) => bytes,
        _ => Vec::new(),
    };
    let name = format!(
        "attachment; filename=\"iggy_snapshot_{}.zip\"",
        crate::time::now_micros() / 1_000_000
    );
    let mut reply = Reply::text(StatusCode::OK, "application/zip", archive);
    if let Ok(value) = HeaderValue::from_str(&name) {
        reply = reply.with_header(header::CONTENT_DISPOSITION, value);
    }
    Ok(reply)
}

/// `GET /options/{topic|stream|user}` (the 0.9-generation SDK's HTTP DescribeOptions): the keys
/// each create command takes, their kind, default (as a list of bytes) and description.
pub fn options(scope: &str) -> Result<Reply, Reply> {
    let scope = match scope {
        "topic" => 1,
        "stream" => 2,
        "user" => 3,
        other => {
            return Err(bodies::bad(
                ErrorCode::InvalidCommand,
                format!("unknown options scope {other:?}: topic, stream or user"),
            ));
        }
    };
    let specs = rill_core::v09::options::specs(scope).map_err(|error| Reply::error(error.code))?;
    let specs: Vec<serde_json::Value> = specs
        .iter()
        .map(|spec| {
            serde_json::json!({
                "key": spec.key,
                "kind": spec.kind.name(),
                "default_value": spec.default,
                "description": spec.description,
            })
        })
        .collect();
    Ok(Reply::ok(&specs))
}
