//! The Restate-server harness of the integration tests (`agent_loop_test::restate_server`)
//! works: the pinned server starts on free loopback ports, answers on its
//! admin API and its ingress, and comes back after a graceful restart and
//! after a crash.

use agent_loop_test::restate_server as support;

use support::{RestateServer, http_client};

/// The admin API is healthy and the ingress knows no service `Nowhere`.
async fn assert_answers(server: &RestateServer) {
    let client = http_client();
    let health = client
        .get(format!("{}/health", server.admin_url()))
        .send()
        .await
        .expect("GET /health on the admin API");
    assert_eq!(health.status(), reqwest::StatusCode::OK);

    let unknown = client
        .post(format!("{}/Nowhere/key/handler", server.ingress_url()))
        .json(&serde_json::json!({}))
        .send()
        .await
        .expect("POST to an unknown service on the ingress");
    assert_eq!(unknown.status(), reqwest::StatusCode::NOT_FOUND);
    let body = unknown.text().await.expect("the ingress's 404 body");
    assert!(body.contains("Nowhere"), "unexpected 404 body: {body}");
}

#[tokio::test]
async fn the_server_starts_answers_and_restarts() {
    let Some(mut server) = RestateServer::start().await else {
        return;
    };
    assert_answers(&server).await;

    let admin = server.admin_url();
    let ingress = server.ingress_url();
    server.restart().await;
    assert_eq!((server.admin_url(), server.ingress_url()), (admin, ingress));
    assert_answers(&server).await;

    server.crash_and_restart().await;
    assert_answers(&server).await;

    // A restart keeps the data: the node is the one provisioned at first.
    let log = server.log();
    assert_eq!(
        log.matches("has been automatically provisioned").count(),
        1,
        "the server provisioned a new cluster on restart; its log:\n{log}"
    );
}
