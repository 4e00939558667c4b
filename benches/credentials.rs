//! Credential hot paths: CRAM-MD5 server verification of a response and
//! JWT (HS256) verification. Target: ≤ 5 µs each.
//!
//! Run: `cargo bench --bench credentials`.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use nestguard::credentials::cram_md5::{
    Authenticator, Message, ServerConfig, ServerOutcome, response,
};
use nestguard::credentials::{Credential, CredentialStore, Secret, jwt};
use nestguard::proto::mesos::internal::AuthenticationStartMessage;

fn cram_md5(c: &mut Criterion) {
    let store = Arc::new(
        CredentialStore::from_credentials((0..100).map(|i| {
            Credential::new(
                format!("principal-{i}"),
                Secret::from(format!("secret-{i}").as_str()),
            )
        }))
        .expect("unique principals"),
    );
    let secret = Secret::from("secret-42");
    let config = ServerConfig {
        hostname: Some("bench.nestguard".into()),
        ..ServerConfig::default()
    };
    c.bench_function("cram_md5_server_verify_response", |b| {
        b.iter_batched(
            || {
                let now = Instant::now();
                let (mut server, _) = Authenticator::new(store.clone(), config.clone(), now);
                let start = Message::Start(AuthenticationStartMessage {
                    mechanism: "CRAM-MD5".into(),
                    data: Some(Vec::new()),
                });
                let Some(Message::Step(challenge)) = server.receive(start, now).reply else {
                    unreachable!("a challenge")
                };
                let answer =
                    Message::step(response("principal-42", &secret, &challenge.data).to_vec());
                (server, answer, now)
            },
            |(mut server, answer, now)| {
                let step = server.receive(answer, now);
                assert!(matches!(
                    step.outcome,
                    Some(ServerOutcome::Authenticated(_))
                ));
                black_box(step)
            },
            BatchSize::SmallInput,
        )
    });
}

fn jwt_verify(c: &mut Criterion) {
    let key = Secret::from("bench-signing-key-0123456789abcdef");
    let claims = BTreeMap::from([
        (
            "cid".to_owned(),
            "5e4ac7d5-8f2a-4b3f-9c1d-1234567890ab".to_owned(),
        ),
        ("eid".to_owned(), "default-executor".to_owned()),
        (
            "fid".to_owned(),
            "c1d5e5f0-0a3b-4f42-9d7b-7f7f7f7f7f7f-0001".to_owned(),
        ),
    ]);
    let token = jwt::issue(&claims, &key);
    let now = jwt::now_secs();
    c.bench_function("jwt_verify_hs256", |b| {
        b.iter(|| black_box(jwt::verify(black_box(&token), &key, now).expect("valid")))
    });
    c.bench_function("jwt_issue_hs256", |b| {
        b.iter(|| black_box(jwt::issue(black_box(&claims), &key)))
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500))
        .sample_size(20);
    targets = cram_md5, jwt_verify
}
criterion_main!(benches);
