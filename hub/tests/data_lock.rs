//! One hub per data directory: a second one on the same directory is refused while the
//! first runs (each would keep its own view of the database and overwrite the other's
//! writes), and may start once the first has stopped.

mod common;

fn options(data: &std::path::Path) -> fleet_hub::Options {
    common::plain_http_options(data, &["local"], &[])
}

#[tokio::test]
async fn a_second_hub_on_the_same_data_is_refused_until_the_first_stops() {
    let dir = tempfile::tempdir().expect("temp dir");
    let first = fleet_hub::start(options(dir.path()))
        .await
        .expect("the first hub starts");
    let refused = fleet_hub::start(options(dir.path())).await;
    let error = refused
        .err()
        .expect("the second hub is refused")
        .to_string();
    assert_eq!(
        error,
        format!("another hub is using {}", dir.path().display())
    );
    let elsewhere = tempfile::tempdir().expect("temp dir");
    let other = fleet_hub::start(options(elsewhere.path()))
        .await
        .expect("a hub on other data starts");
    other.shutdown().await;
    first.shutdown().await;
    let again = fleet_hub::start(options(dir.path()))
        .await
        .expect("the data is free once the first hub stopped");
    again.shutdown().await;
}
