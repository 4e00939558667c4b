//! The CRAM-MD5 state machines against each other: Mesos' flow, refusals,
//! replay, out-of-order messages, bounds and timeouts.

use std::sync::Arc;
use std::time::{Duration, Instant};

use nestguard::credentials::cram_md5::{
    Authenticatee, Authenticator, ClientConfig, ClientOutcome, Message, MessageKind, ServerConfig,
    ServerOutcome, hex_digest,
};
use nestguard::credentials::{Credential, CredentialStore, Secret};
use nestguard::proto::mesos::internal::{
    AuthenticationMechanismsMessage, AuthenticationStartMessage,
};

const PRINCIPAL: &str = "nestguard-agent";
const SECRET: &str = "cram-test-secret-7f3a";

fn store() -> Arc<CredentialStore> {
    Arc::new(
        CredentialStore::from_credentials([
            Credential::new(PRINCIPAL, Secret::from(SECRET)),
            Credential::new("other", Secret::from("cram-test-other-secret")),
        ])
        .unwrap(),
    )
}

fn server(now: Instant) -> (Authenticator, Message) {
    let config = ServerConfig {
        hostname: Some("nestguard.test".into()),
        ..ServerConfig::default()
    };
    Authenticator::new(store(), config, now)
}

/// Runs a whole exchange through encode/decode, as a transport would.
fn exchange(principal: &str, secret: &str) -> (Option<ServerOutcome>, Option<ClientOutcome>) {
    let now = Instant::now();
    let (mut client, first) = Authenticatee::new(
        Credential::new(principal, Secret::from(secret)),
        "scheduler(1)@127.0.0.1:4040",
        ClientConfig::default(),
        now,
    );
    assert_eq!(
        first.reply.as_ref().map(Message::kind),
        Some(MessageKind::Authenticate)
    );
    let (mut server, offer) = server(now);
    let mut to_client = Some(offer);
    while let Some(msg) = to_client.take() {
        let msg = Message::decode(msg.kind(), &msg.encode()).unwrap();
        let step = client.receive(msg, now);
        if let Some(reply) = step.reply {
            let reply = Message::decode(reply.kind(), &reply.encode()).unwrap();
            to_client = server.receive(reply, now).reply;
        }
    }
    (server.outcome().cloned(), client.outcome().cloned())
}

#[test]
fn right_secret_authenticates() {
    let (s, c) = exchange(PRINCIPAL, SECRET);
    assert_eq!(s, Some(ServerOutcome::Authenticated(PRINCIPAL.into())));
    assert_eq!(c, Some(ClientOutcome::Authenticated));
}

#[test]
fn wrong_secret_and_unknown_principal_are_refused() {
    assert_eq!(
        exchange(PRINCIPAL, "wrong"),
        (Some(ServerOutcome::Refused), Some(ClientOutcome::Refused))
    );
    assert_eq!(
        exchange("nobody", SECRET),
        (Some(ServerOutcome::Refused), Some(ClientOutcome::Refused))
    );
    // Another principal's secret does not work either.
    assert_eq!(
        exchange(PRINCIPAL, "cram-test-other-secret"),
        (Some(ServerOutcome::Refused), Some(ClientOutcome::Refused))
    );
}

fn start() -> Message {
    Message::Start(AuthenticationStartMessage {
        mechanism: "CRAM-MD5".into(),
        data: Some(Vec::new()),
    })
}

fn challenge_of(step: Option<Message>) -> Vec<u8> {
    match step {
        Some(Message::Step(s)) => s.data,
        other => panic!("expected a challenge, got {other:?}"),
    }
}

fn answer(challenge: &[u8]) -> Message {
    let digest = hex_digest(&Secret::from(SECRET), challenge);
    let mut data = format!("{PRINCIPAL} ").into_bytes();
    data.extend_from_slice(&digest[..]);
    Message::step(data)
}

#[test]
fn challenge_has_cyrus_form_and_is_fresh() {
    let now = Instant::now();
    let (mut a, _) = server(now);
    let (mut b, _) = server(now);
    let ca = challenge_of(a.receive(start(), now).reply);
    let cb = challenge_of(b.receive(start(), now).reply);
    assert_ne!(ca, cb);
    let text = String::from_utf8(ca).unwrap();
    let inner = text
        .strip_prefix('<')
        .unwrap()
        .strip_suffix("@nestguard.test>")
        .unwrap();
    let (random, timestamp) = inner.split_once('.').unwrap();
    assert!(
        random.parse::<u64>().is_ok() && timestamp.parse::<u64>().is_ok(),
        "{text}"
    );
}

#[test]
fn a_response_is_accepted_once_and_replay_fails() {
    let now = Instant::now();
    let (mut first, _) = server(now);
    let challenge = challenge_of(first.receive(start(), now).reply);
    let response = answer(&challenge);
    let step = first.receive(response.clone(), now);
    assert!(matches!(step.reply, Some(Message::Completed)));
    assert_eq!(
        step.outcome,
        Some(ServerOutcome::Authenticated(PRINCIPAL.into()))
    );

    // Same session again: Mesos' out-of-order error, outcome unchanged.
    let again = first.receive(response.clone(), now);
    match again.reply {
        Some(Message::Error(e)) => assert_eq!(
            e.error.as_deref(),
            Some("Unexpected authentication 'step' received")
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(again.outcome, None);
    assert_eq!(
        first.outcome(),
        Some(&ServerOutcome::Authenticated(PRINCIPAL.into()))
    );

    // The recorded response replayed into a new session (new challenge) is refused.
    let (mut second, _) = server(now);
    let _ = second.receive(start(), now);
    let step = second.receive(response, now);
    assert!(matches!(step.reply, Some(Message::Failed)));
    assert_eq!(step.outcome, Some(ServerOutcome::Refused));
}

#[test]
fn out_of_order_messages_get_mesos_errors() {
    let now = Instant::now();
    let (mut s, _) = server(now);
    let step = s.receive(Message::step(b"x".to_vec()), now);
    assert_eq!(
        step.outcome,
        Some(ServerOutcome::Error(
            "Unexpected authentication 'step' received".into()
        ))
    );

    let (mut s, _) = server(now);
    let _ = s.receive(start(), now);
    let step = s.receive(start(), now);
    assert_eq!(
        step.outcome,
        Some(ServerOutcome::Error(
            "Unexpected authentication 'start' received".into()
        ))
    );

    let (mut c, _) = Authenticatee::new(
        Credential::new(PRINCIPAL, Secret::from(SECRET)),
        "p",
        ClientConfig::default(),
        now,
    );
    let step = c.receive(Message::step(b"<1.2@h>".to_vec()), now);
    assert_eq!(
        step.outcome,
        Some(ClientOutcome::Error(
            "Unexpected authentication 'step' received".into()
        ))
    );

    let (mut c, _) = Authenticatee::new(
        Credential::new(PRINCIPAL, Secret::from(SECRET)),
        "p",
        ClientConfig::default(),
        now,
    );
    let step = c.receive(Message::Completed, now);
    assert_eq!(
        step.outcome,
        Some(ClientOutcome::Error(
            "Unexpected authentication 'completed' received".into()
        ))
    );

    let (mut c, _) = Authenticatee::new(
        Credential::new(PRINCIPAL, Secret::from(SECRET)),
        "p",
        ClientConfig::default(),
        now,
    );
    let mechs = || {
        Message::Mechanisms(AuthenticationMechanismsMessage {
            mechanisms: vec!["CRAM-MD5".into()],
        })
    };
    let _ = c.receive(mechs(), now);
    let step = c.receive(mechs(), now);
    assert_eq!(
        step.outcome,
        Some(ClientOutcome::Error(
            "Unexpected authentication 'mechanisms' received".into()
        ))
    );

    let (mut c, _) = Authenticatee::new(
        Credential::new(PRINCIPAL, Secret::from(SECRET)),
        "p",
        ClientConfig::default(),
        now,
    );
    let step = c.receive(Message::error("No authenticator loaded"), now);
    assert_eq!(
        step.outcome,
        Some(ClientOutcome::Error(
            "Authentication error: No authenticator loaded".into()
        ))
    );
}

#[test]
fn other_mechanisms_and_initial_responses_are_errors() {
    let now = Instant::now();
    let (mut s, _) = server(now);
    let step = s.receive(
        Message::Start(AuthenticationStartMessage {
            mechanism: "PLAIN".into(),
            data: None,
        }),
        now,
    );
    assert!(matches!(step.outcome, Some(ServerOutcome::Error(ref e)) if e.contains("'PLAIN'")));
    assert!(matches!(step.reply, Some(Message::Error(_))));

    let (mut s, _) = server(now);
    let step = s.receive(
        Message::Start(AuthenticationStartMessage {
            mechanism: "CRAM-MD5".into(),
            data: Some(b"x".to_vec()),
        }),
        now,
    );
    assert!(matches!(step.outcome, Some(ServerOutcome::Error(_))));

    let (mut c, _) = Authenticatee::new(
        Credential::new(PRINCIPAL, Secret::from(SECRET)),
        "p",
        ClientConfig::default(),
        now,
    );
    let step = c.receive(
        Message::Mechanisms(AuthenticationMechanismsMessage {
            mechanisms: vec!["PLAIN".into()],
        }),
        now,
    );
    assert!(matches!(step.outcome, Some(ClientOutcome::Error(_))));
}

#[test]
fn inputs_over_1024_bytes_are_rejected() {
    let now = Instant::now();
    let (mut s, _) = server(now);
    let _ = s.receive(start(), now);
    let mut long = format!("{PRINCIPAL} ").into_bytes();
    long.resize(1025, b'a');
    let step = s.receive(Message::step(long), now);
    assert!(
        matches!(step.outcome, Some(ServerOutcome::Error(ref e)) if e.contains("1025 bytes")),
        "{step:?}"
    );

    let (mut c, _) = Authenticatee::new(
        Credential::new(PRINCIPAL, Secret::from(SECRET)),
        "p",
        ClientConfig::default(),
        now,
    );
    let _ = c.receive(
        Message::Mechanisms(AuthenticationMechanismsMessage {
            mechanisms: vec!["CRAM-MD5".into()],
        }),
        now,
    );
    let step = c.receive(Message::step(vec![b'<'; 1025]), now);
    assert!(matches!(step.outcome, Some(ClientOutcome::Error(_))));
    assert!(step.reply.is_none());
}

#[test]
fn malformed_responses_are_errors_not_refusals() {
    let now = Instant::now();
    for bad in [
        &b"nospace"[..],
        b"user short",
        b" 0123456789abcdef0123456789abcdef",
    ] {
        let (mut s, _) = server(now);
        let _ = s.receive(start(), now);
        let step = s.receive(Message::step(bad.to_vec()), now);
        assert!(
            matches!(step.outcome, Some(ServerOutcome::Error(_))),
            "{bad:?}"
        );
    }
}

#[test]
fn uppercase_digest_is_refused() {
    // Cyrus emits lowercase hex; we compare bytes exactly.
    let now = Instant::now();
    let (mut s, _) = server(now);
    let challenge = challenge_of(s.receive(start(), now).reply);
    let digest = hex_digest(&Secret::from(SECRET), &challenge);
    let upper = format!(
        "{PRINCIPAL} {}",
        std::str::from_utf8(&digest[..]).unwrap().to_uppercase()
    );
    assert_eq!(
        s.receive(Message::step(upper.into_bytes()), now).outcome,
        Some(ServerOutcome::Refused)
    );
}

#[test]
fn timeouts_are_configurable() {
    let now = Instant::now();
    let config = ServerConfig {
        timeout: Duration::from_millis(50),
        hostname: None,
    };
    let (mut s, _) = Authenticator::new(store(), config, now);
    assert!(s.poll_timeout(now + Duration::from_millis(10)).is_none());
    let challenge = challenge_of(s.receive(start(), now).reply);
    let step = s.receive(answer(&challenge), now + Duration::from_millis(51));
    assert!(
        matches!(step.outcome, Some(ServerOutcome::Error(ref e)) if e.contains("timed out")),
        "{step:?}"
    );
    assert!(matches!(step.reply, Some(Message::Error(_))));

    let (mut c, _) = Authenticatee::new(
        Credential::new(PRINCIPAL, Secret::from(SECRET)),
        "p",
        ClientConfig {
            timeout: Duration::from_secs(1),
        },
        now,
    );
    let step = c.poll_timeout(now + Duration::from_secs(2)).unwrap();
    assert!(matches!(step.outcome, Some(ClientOutcome::Error(_))));
}

#[test]
fn client_without_secret_is_refused_immediately() {
    let (c, step) = Authenticatee::new(
        Credential::new(PRINCIPAL, Secret::new(Vec::new())),
        "p",
        ClientConfig::default(),
        Instant::now(),
    );
    assert!(step.reply.is_none());
    assert_eq!(c.outcome(), Some(&ClientOutcome::Refused));
}

#[test]
fn message_kinds_round_trip_names() {
    for n in 1..=7 {
        let k = MessageKind::from_u32(n).unwrap();
        assert_eq!(MessageKind::from_type_name(k.type_name()), Some(k));
    }
    assert!(MessageKind::from_u32(8).is_err());
}
