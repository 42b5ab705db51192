//! The webhook port is open to anyone: a connection that sends nothing is closed, and a
//! payload that never finishes arriving is answered 408, so that neither holds a file
//! descriptor or its memory for ever.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fleet_gitjob::metrics::Metrics;
use fleet_gitjob::webhook;
use fleet_objects::service::connections::FIRST_REQUEST;
use fleet_objects::service::{serve_http, REQUEST_TIMEOUT};

/// Serves the webhooks with a client whose API server is never reached: nothing here gets
/// as far as asking it.
async fn webhook_port() -> SocketAddr {
    let config = kube::Config::new("http://127.0.0.1:9".parse().expect("a URL"));
    let client = kube::Client::try_from(config).expect("a client");
    let receiver = webhook::Receiver::new(
        client,
        "cattle-fleet-system",
        Arc::new(Metrics::default()),
        None,
    );
    let (bound, _) = serve_http(
        ([127, 0, 0, 1], 0).into(),
        webhook::router(receiver),
        "webhooks",
    )
    .await
    .expect("the port");
    bound
}

/// How long until the server ends the connection, and the first bytes it sent.
fn until_closed(mut connection: TcpStream) -> (Duration, String) {
    connection
        .set_read_timeout(Some(REQUEST_TIMEOUT + Duration::from_secs(20)))
        .expect("timeout");
    let started = Instant::now();
    let mut answer = Vec::new();
    let _ = connection.read_to_end(&mut answer);
    (
        started.elapsed(),
        String::from_utf8_lossy(&answer).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_and_unfinished_connections_are_closed() {
    let addr = webhook_port().await;
    let idle = tokio::task::spawn_blocking(move || {
        until_closed(TcpStream::connect(addr).expect("connects"))
    });
    let unfinished = tokio::task::spawn_blocking(move || {
        let mut connection = TcpStream::connect(addr).expect("connects");
        connection
            .write_all(
                b"POST /generic HTTP/1.1\r\nHost: gitjob\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{\"repository\":",
            )
            .expect("sends the start");
        until_closed(connection)
    });
    let (idle, unfinished) = (
        idle.await.expect("idle"),
        unfinished.await.expect("unfinished"),
    );
    assert!(
        idle.0 >= FIRST_REQUEST - Duration::from_millis(500)
            && idle.0 < FIRST_REQUEST + Duration::from_secs(5),
        "an idle connection is closed after the first-request timeout: {idle:?}"
    );
    assert!(
        unfinished.1.starts_with("HTTP/1.1 408"),
        "an unfinished payload is answered 408: {unfinished:?}"
    );
    assert!(
        unfinished.0 >= REQUEST_TIMEOUT - Duration::from_secs(1)
            && unfinished.0 < REQUEST_TIMEOUT + Duration::from_secs(10),
        "after the request timeout: {unfinished:?}"
    );
}
