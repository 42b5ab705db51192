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
