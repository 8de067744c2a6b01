//! `bind` refuses nil session and loop ids before anything runs.

use crate::common::{Counter, counted};
use agent_loop::{BindErrorKind, Definition, Mode, Validated};
use agent_loop::{Bindings, LoopId, SessionId};

fn definition(counter: &Counter) -> Definition<Validated> {
    Definition::builder()
        .name("agent")
        .tool(counted("search", counter))
        .mode(Mode::new("review").tool(counted("read", counter)))
        .initial_mode("review")
        .build()
        .validate()
        .unwrap()
}

#[tokio::test]
async fn nil_session_id_is_refused_before_any_factory_runs() {
    let counter = Counter::new();
    let extra = Counter::new();
    let error = definition(&counter)
        .bind(
            Bindings::new(SessionId::from_uuid(uuid::Uuid::nil()), LoopId::new())
                .tool(counted("extra", &extra)),
        )
        .await
        .unwrap_err();
    assert_eq!(error.kind, BindErrorKind::InvalidSessionId);
    assert_eq!(counter.get(), 0);
    assert_eq!(extra.get(), 0);
    assert!(!error.to_string().contains('\n'));
}

#[tokio::test]
async fn nil_session_id_parsed_from_text_is_refused() {
    let counter = Counter::new();
    let session: SessionId = "00000000-0000-0000-0000-000000000000".parse().unwrap();
    let error = definition(&counter)
        .bind(Bindings::new(session, LoopId::new()))
        .await
        .unwrap_err();
    assert_eq!(error.kind, BindErrorKind::InvalidSessionId);
    assert_eq!(counter.get(), 0);
}

#[tokio::test]
async fn nil_loop_id_is_refused_before_any_factory_runs() {
    let counter = Counter::new();
    let error = definition(&counter)
        .bind(Bindings::new(
            SessionId::new(),
            LoopId::from_uuid(uuid::Uuid::nil()),
        ))
        .await
        .unwrap_err();
    assert_eq!(error.kind, BindErrorKind::InvalidLoopId);
    assert_eq!(counter.get(), 0);
}

#[tokio::test]
async fn session_id_is_checked_before_loop_id() {
    let counter = Counter::new();
    let error = definition(&counter)
        .bind(Bindings::new(
            SessionId::from_uuid(uuid::Uuid::nil()),
            LoopId::from_uuid(uuid::Uuid::nil()),
        ))
        .await
        .unwrap_err();
    assert_eq!(error.kind, BindErrorKind::InvalidSessionId);
}

#[tokio::test]
async fn valid_ids_bind_and_are_kept() {
    let counter = Counter::new();
    let (session, loop_id) = (SessionId::new(), LoopId::new());
    let bound = definition(&counter)
        .bind(Bindings::new(session, loop_id))
        .await
        .unwrap();
    assert_eq!(bound.session_id(), session);
    assert_eq!(bound.loop_id(), loop_id);
    assert_eq!(counter.get(), 2, "each of the two definitions built once");
}
