//! A connection that sends nothing is closed: it must not hold a file descriptor (and a
//! connection slot) forever.

mod common;

use std::io::Read;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_sends_no_request_is_closed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let options = common::plain_http_options(dir.path(), &["local"], &[]);
    let hub = fleet_hub::start(options).await.expect("the hub starts");
    let addr = hub.addr;
    let waited = tokio::task::spawn_blocking(move || {
        let mut idle = std::net::TcpStream::connect(addr).expect("connects");
        idle.set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        let started = Instant::now();
        let mut buffer = [0u8; 16];
        let read = idle.read(&mut buffer);
        (started.elapsed(), read.map_err(|e| e.kind()))
    })
    .await
    .expect("the idle client");
    assert!(
        matches!(waited.1, Ok(0)) || waited.1.is_err() && waited.0 < Duration::from_secs(29),
        "closed by the hub: {waited:?}"
    );
    assert!(
        waited.0 >= fleet_hub::connections::FIRST_REQUEST - Duration::from_millis(500)
            && waited.0 < fleet_hub::connections::FIRST_REQUEST + Duration::from_secs(5),
        "after the first-request timeout: {:?}",
        waited.0
    );
    hub.shutdown().await;
}

/// A kept-alive HTTP/1.1 connection may sit idle between requests longer than the 90 s
/// kube-rs's (hyper's) and Go's client pools keep one: a hub that closed it sooner (it
/// did after 10 s) raced the client's next request on it, which then failed with a send
/// error (the controllers' requests did, under load). Here the second request comes after
/// more than those 10 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_alive_connection_serves_a_request_after_an_idle_spell() {
    use std::io::Write;
    let dir = tempfile::tempdir().expect("temp dir");
    let options = common::plain_http_options(dir.path(), &["local"], &[]);
    let hub = fleet_hub::start(options).await.expect("the hub starts");
    let addr = hub.addr;
    let answers = tokio::task::spawn_blocking(move || {
        let mut connection = std::net::TcpStream::connect(addr).expect("connects");
        connection
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let mut ask = || {
            connection
                .write_all(b"GET /healthz HTTP/1.1\r\nHost: hub\r\n\r\n")
                .map_err(|e| e.to_string())?;
            let mut answer = Vec::new();
            let mut buffer = [0u8; 512];
            while !answer.ends_with(b"\r\n\r\nok") {
                match connection.read(&mut buffer) {
                    Ok(0) => return Err(format!("closed after {answer:?}")),
                    Ok(n) => answer.extend_from_slice(&buffer[..n]),
                    Err(e) => return Err(e.to_string()),
                }
            }
            Ok(String::from_utf8_lossy(&answer).into_owned())
        };
        let first = ask();
        std::thread::sleep(Duration::from_secs(12));
        (first, ask())
    })
    .await
    .expect("the client");
    for answer in [&answers.0, &answers.1] {
        assert!(
            answer.as_ref().is_ok_and(|a| a.starts_with("HTTP/1.1 200")),
            "{answers:?}"
        );
    }
    assert!(
        fleet_hub::connections::KEEP_ALIVE_IDLE > Duration::from_secs(90),
        "longer than clients keep an idle connection"
    );
    hub.shutdown().await;
}
