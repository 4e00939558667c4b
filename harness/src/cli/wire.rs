//! The one conversion between Mesos' `mesos.v1` messages (the agent API)
//! and their unversioned twins (the modules' and the executor's view).

/// The unversioned twin of a `mesos.v1` message, or the v1 twin of an
/// unversioned one.
///
/// Panics only on a bug in our own protos: the two packages are
/// wire-identical and the message was itself decoded by prost (same
/// recursion limit), so re-decoding cannot fail. A default or a `None`
/// instead would validate, authorize or launch something else than asked.
#[expect(
    clippy::expect_used,
    reason = "the two packages are wire-identical: re-decoding what prost decoded cannot fail"
)]
pub fn twin<A: prost::Message, B: prost::Message + Default>(message: &A) -> B {
    nestguard::proto::convert(message).expect("v1 and unversioned messages are wire-identical")
}
