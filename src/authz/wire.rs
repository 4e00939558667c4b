//! A serialized `mesos.authorization.Request` read in place: only the fields
//! a decision reads, borrowed from the bytes, into the one [`ObjectView`].
//!
//! Why: decoding the whole message with prost (every string owned, the
//! parent chain boxed, a `Request` of kilobytes zeroed and dropped) cost
//! twelve times the decision itself on the Mesos shim's `authorized()` path
//! (issue 29: 403 ns against 33 ns at 10,000 entries).
//!
//! The rule that keeps it exact: this reader either answers with the same
//! fields prost would decode, or declines ([`read_request`] returns `None`)
//! and the caller decodes in full with prost. It declines on anything it
//! does not serve: a malformed or truncated field, a wire type other than
//! the field's, an unknown field of `Request` or `Object`, the object fields
//! only other actions read (task, resource, ...), a subject without a value
//! (claims), an action whose rule reads beyond the named fields, a container
//! id nested deeper than [`MAX_CONTAINER_DEPTH`]. So every error a caller
//! sees, and its text, is prost's.
//!
//! Protobuf's merge rules are followed as prost applies them: a later
//! occurrence of a singular scalar or string wins; a singular message that
//! occurs twice is merged (its fields read in byte order, so a later value
//! wins at every level, and a container id's parent chain is the merge of
//! every chain). Fields a decision does not read but prost still checks are
//! checked as prost checks them: a length-delimited field the message does
//! not know is skipped, a `bytes` field taken, a `string` field checked for
//! UTF-8, all in place whatever their length (the message's descriptor
//! says which is which); anything else (wire types of scalars, nested
//! messages, packed lists, groups) is handed to prost's own `merge_field`
//! on a scratch message of the right type, so it is accepted or refused
//! exactly as prost does.

use std::sync::LazyLock;

use prost::Message;
use prost::encoding::{DecodeContext, WireType, decode_key, decode_varint};
use prost_reflect::{Kind, MessageDescriptor, ReflectMessage};

use super::lists::{Route, route};
use super::view::{Lowered, ObjectView};
use crate::proto::mesos::authorization::{Action, Subject};
use crate::proto::mesos::{CommandInfo, ContainerId, ExecutorId, ExecutorInfo, FrameworkInfo};

/// How deep a container id's parents are read here (a Mesos agent nests a
/// few levels); deeper ones are decoded by prost.
pub const MAX_CONTAINER_DEPTH: usize = 16;

/// The most bytes of one field handed to prost on a scratch message. prost
/// refuses messages nested 100 deep, counting from the request; a scratch
/// message starts its count afresh. Every nested level costs at least two
/// bytes (a key and a length, or a group's start and end), and scratch
/// fields sit at most `MAX_CONTAINER_DEPTH + 3` levels down, so a field this
/// small nests far below the limit either way: both accept it or both
/// refuse it for another reason. Larger fields are left to prost whole.
const MAX_SCRATCH_BYTES: usize = 128;

/// What a decision reads from a request.
#[derive(Debug, Clone, Copy)]
pub struct WireRequest<'a> {
    /// `Request.action`, a known `Action` that [`read_request`] serves.
    pub action: Action,
    /// `Request.subject.value` (`None`: no subject, unauthenticated).
    pub principal: Option<&'a [u8]>,
    /// `Request.object`, as the fields the action's rule reads.
    pub object: Option<ObjectView<'a>>,
}

/// "Decode this one with prost."
struct Decline;

impl From<prost::DecodeError> for Decline {
    fn from(_: prost::DecodeError) -> Self {
        Decline
    }
}

type Read<T> = Result<T, Decline>;

/// The fields of a request that decide it, borrowed from `bytes`, or `None`
/// when prost must decode it (see the module notes).
pub fn read_request(bytes: &[u8]) -> Option<WireRequest<'_>> {
    read(bytes).ok()
}

/// Whether the rule of `action` reads only the named fields of the view
/// (not [`Lowered`]) and the principal: the actions read here.
pub fn serves(action: Action) -> bool {
    use Action as A;
    match route(action) {
        Route::Nested { .. } => true,
        Route::Generic(_) => !matches!(
            action,
            A::RunTask
                | A::ViewTask
                | A::TeardownFramework
                | A::DestroyVolume
                | A::UnreserveResources
        ),
        Route::Roles(_) | Route::Reject => false,
    }
}

fn read(mut buf: &[u8]) -> Read<WireRequest<'_>> {
    let mut subject: Option<Option<&[u8]>> = None;
    let mut action = None;
    let mut object: Option<Obj<'_>> = None;
    while !buf.is_empty() {
        let (tag, wire_type) = decode_key(&mut buf)?;
        match (tag, wire_type) {
            (1, WireType::LengthDelimited) => {
                let value = subject.get_or_insert(None);
                read_subject(delimited(&mut buf)?, value)?;
            }
            (2, WireType::Varint) => action = Some(decode_varint(&mut buf)? as i32),
            (3, WireType::LengthDelimited) => {
                read_object(delimited(&mut buf)?, object.get_or_insert_default())?;
            }
            _ => return Err(Decline),
        }
    }
    let action = action
        .and_then(|a| Action::try_from(a).ok())
        .filter(|&a| serves(a))
        .ok_or(Decline)?;
    let principal = match subject {
        None => None,
        // Claims only (or an invalid subject): prost's path says which.
        Some(None) => return Err(Decline),
        Some(value) => value,
    };
    let object = match object {
        None => None,
        Some(o) if !o.accepted() => return Err(Decline),
        Some(o) => Some(o.view()),
    };
    Ok(WireRequest {
        action,
        principal,
        object,
    })
}

/// A length-delimited field's bytes.
fn delimited<'a>(buf: &mut &'a [u8]) -> Read<&'a [u8]> {
    let len = decode_varint(buf)?;
    let len = usize::try_from(len).map_err(|_| Decline)?;
    if len > buf.len() {
        return Err(Decline);
    }
    let (field, rest) = buf.split_at(len);
    *buf = rest;
    Ok(field)
}

/// A `string` field's bytes, checked as prost checks them.
fn string<'a>(wire_type: WireType, buf: &mut &'a [u8]) -> Read<&'a [u8]> {
    if wire_type != WireType::LengthDelimited {
        return Err(Decline);
    }
    let bytes = delimited(buf)?;
    std::str::from_utf8(bytes).map_err(|_| Decline)?;
    Ok(bytes)
}

/// A message field's bytes.
fn message<'a>(wire_type: WireType, buf: &mut &'a [u8]) -> Read<&'a [u8]> {
    if wire_type != WireType::LengthDelimited {
        return Err(Decline);
    }
    delimited(buf)
}

/// The descriptor of `M` (the same protos prost generated `M` from).
fn descriptor<M: ReflectMessage + Default>() -> MessageDescriptor {
    M::default().descriptor()
}

static SUBJECT: LazyLock<MessageDescriptor> = LazyLock::new(descriptor::<Subject>);
static FRAMEWORK_INFO: LazyLock<MessageDescriptor> = LazyLock::new(descriptor::<FrameworkInfo>);
static EXECUTOR_INFO: LazyLock<MessageDescriptor> = LazyLock::new(descriptor::<ExecutorInfo>);
static EXECUTOR_ID: LazyLock<MessageDescriptor> = LazyLock::new(descriptor::<ExecutorId>);
static COMMAND_INFO: LazyLock<MessageDescriptor> = LazyLock::new(descriptor::<CommandInfo>);
static CONTAINER_ID: LazyLock<MessageDescriptor> = LazyLock::new(descriptor::<ContainerId>);

/// A length-delimited field that no decision reads, handled as prost
/// handles it where that needs no scratch message: a field `M` does not
/// know is skipped (prost's `skip_field`), a `bytes` field taken as it is,
/// a `string` field checked for UTF-8. `false`: a message, a map or a
/// packed list, left to prost. Why: a real agent's requests carry long
/// strings (an executor's command line) and fields newer than these protos;
/// a scratch message for each, or a decline for each over
/// [`MAX_SCRATCH_BYTES`], made such requests slower than a full decode.
fn skipped_in_place(
    desc: &MessageDescriptor,
    tag: u32,
    wire_type: WireType,
    buf: &mut &[u8],
) -> Read<bool> {
    if wire_type != WireType::LengthDelimited {
        return Ok(false);
    }
    match desc.get_field(tag).map(|f| f.kind()) {
        None | Some(Kind::Bytes) => {
            delimited(buf)?;
        }
        Some(Kind::String) => {
            string(wire_type, buf)?;
        }
        Some(_) => return Ok(false),
    }
    Ok(true)
}

/// A field of `M` (described by `desc`) that no decision reads, accepted or
/// refused as prost's own code for `M` does: in place where
/// [`skipped_in_place`] can, else by prost on a scratch message (see
/// [`MAX_SCRATCH_BYTES`] for why the size bound).
fn other<M: Message + Default>(
    desc: &MessageDescriptor,
    tag: u32,
    wire_type: WireType,
    buf: &mut &[u8],
) -> Read<()> {
    if skipped_in_place(desc, tag, wire_type, buf)? {
        return Ok(());
    }
    let small = match wire_type {
        WireType::LengthDelimited => {
            let mut peek = *buf;
            decode_varint(&mut peek)? <= MAX_SCRATCH_BYTES as u64
        }
        WireType::StartGroup => buf.len() <= MAX_SCRATCH_BYTES,
        _ => true,
    };
    if !small {
        return Err(Decline);
    }
    M::default().merge_field(tag, wire_type, buf, DecodeContext::default())?;
    Ok(())
}

fn read_subject<'a>(mut buf: &'a [u8], value: &mut Option<&'a [u8]>) -> Read<()> {
    while !buf.is_empty() {
        let (tag, wire_type) = decode_key(&mut buf)?;
        match tag {
            1 => *value = Some(string(wire_type, &mut buf)?),
            _ => other::<Subject>(&SUBJECT, tag, wire_type, &mut buf)?,
        }
    }
    Ok(())
}

/// `CommandInfo`: whether it is set, and its `user`.
#[derive(Debug, Default, Clone, Copy)]
struct Command<'a> {
    set: bool,
    user: Option<&'a [u8]>,
}

/// A container id's chain, merged: the last `value` at each depth.
#[derive(Debug, Default, Clone, Copy)]
struct Chain<'a> {
    /// How many levels exist (0: no container id).
    levels: usize,
    values: [Option<&'a [u8]>; MAX_CONTAINER_DEPTH],
}

/// `FrameworkInfo`: its `user` and `principal`.
type Framework<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

/// `Object`, as read so far.
#[derive(Debug, Default)]
struct Obj<'a> {
    value: Option<&'a [u8]>,
    framework: Option<Framework<'a>>,
    executor: Option<Command<'a>>,
    command: Command<'a>,
    container: Chain<'a>,
}

impl<'a> Obj<'a> {
    /// Mesos' check that an object carries a field it accepts (the others
    /// it accepts are declined before this).
    fn accepted(&self) -> bool {
        self.value.is_some()
            || self.framework.is_some()
            || self.executor.is_some()
            || self.container.levels > 0
    }

    /// The view [`ObjectView::lower`] makes of the same object, for an
    /// action [`serves`] accepts (which never reads `lowered`).
    fn view(&self) -> ObjectView<'a> {
        let (framework_user, framework_principal) = self.framework.unwrap_or_default();
        let container = &self.container;
        let at = |depth: usize| container.values.get(depth).copied().flatten();
        let (leaf, root) = match container.levels {
            0 => (None, None),
            n => (
                Some(at(0).unwrap_or_default()),
                Some(at(n - 1).unwrap_or_default()),
            ),
        };
        ObjectView {
            value: self.value,
            has_executor_info: self.executor.is_some(),
            executor_user: self.executor.and_then(|c| c.user),
            has_framework_info: self.framework.is_some(),
            // A required string: prost cannot tell absent from empty.
            framework_user: framework_user.filter(|u| !u.is_empty()),
            framework_principal: framework_principal.filter(|p| !p.is_empty()),
            has_command: self.command.set,
            command_user: self.command.user,
            container_id: leaf,
            root_container_id: root,
            lowered: Lowered::Fields,
        }
    }
}

fn read_object<'a>(mut buf: &'a [u8], o: &mut Obj<'a>) -> Read<()> {
    while !buf.is_empty() {
        let (tag, wire_type) = decode_key(&mut buf)?;
        match tag {
            1 => o.value = Some(string(wire_type, &mut buf)?),
            2 => {
                let f = o.framework.get_or_insert_default();
                read_framework(message(wire_type, &mut buf)?, f)?;
            }
            5 => {
                let e = o.executor.get_or_insert_default();
                read_executor(message(wire_type, &mut buf)?, e)?;
            }
            9 => read_command(message(wire_type, &mut buf)?, &mut o.command)?,
            10 => read_container(message(wire_type, &mut buf)?, 0, &mut o.container)?,
            // task, task_info, quota_info, weight_info, resource, machine_id
            // and unknown fields: read by other actions, or left to prost.
            _ => return Err(Decline),
        }
    }
    Ok(())
}

fn read_framework<'a>(mut buf: &'a [u8], (user, principal): &mut Framework<'a>) -> Read<()> {
    while !buf.is_empty() {
        let (tag, wire_type) = decode_key(&mut buf)?;
        match tag {
            1 => *user = Some(string(wire_type, &mut buf)?),
            8 => *principal = Some(string(wire_type, &mut buf)?),
            _ => other::<FrameworkInfo>(&FRAMEWORK_INFO, tag, wire_type, &mut buf)?,
        }
    }
    Ok(())
}

/// `ExecutorInfo`, whose `command.user` is kept in `command`.
fn read_executor<'a>(mut buf: &'a [u8], command: &mut Command<'a>) -> Read<()> {
    while !buf.is_empty() {
        let (tag, wire_type) = decode_key(&mut buf)?;
        match tag {
            // executor_id: read here, as every executor has one (a scratch
            // message would allocate its string).
            1 => read_id(message(wire_type, &mut buf)?)?,
            7 => read_command(message(wire_type, &mut buf)?, command)?,
            _ => other::<ExecutorInfo>(&EXECUTOR_INFO, tag, wire_type, &mut buf)?,
        }
    }
    Ok(())
}

/// An `ExecutorID`: checked, not kept.
fn read_id(mut buf: &[u8]) -> Read<()> {
    while !buf.is_empty() {
        let (tag, wire_type) = decode_key(&mut buf)?;
        match tag {
            1 => {
                string(wire_type, &mut buf)?;
            }
            _ => other::<ExecutorId>(&EXECUTOR_ID, tag, wire_type, &mut buf)?,
        }
    }
    Ok(())
}

fn read_command<'a>(mut buf: &'a [u8], command: &mut Command<'a>) -> Read<()> {
    command.set = true;
    while !buf.is_empty() {
        let (tag, wire_type) = decode_key(&mut buf)?;
        match tag {
            5 => command.user = Some(string(wire_type, &mut buf)?),
            _ => other::<CommandInfo>(&COMMAND_INFO, tag, wire_type, &mut buf)?,
        }
    }
    Ok(())
}

fn read_container<'a>(mut buf: &'a [u8], depth: usize, chain: &mut Chain<'a>) -> Read<()> {
    if depth >= MAX_CONTAINER_DEPTH {
        return Err(Decline);
    }
    chain.levels = chain.levels.max(depth + 1);
    while !buf.is_empty() {
        let (tag, wire_type) = decode_key(&mut buf)?;
        match tag {
            1 => {
                let value = string(wire_type, &mut buf)?;
                if let Some(slot) = chain.values.get_mut(depth) {
                    *slot = Some(value);
                }
            }
            2 => read_container(message(wire_type, &mut buf)?, depth + 1, chain)?,
            _ => other::<ContainerId>(&CONTAINER_ID, tag, wire_type, &mut buf)?,
        }
    }
    Ok(())
}
