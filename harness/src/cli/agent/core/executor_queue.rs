//! The executor API's own state (Mesos' `Slave::subscribe` side of
//! `src/slave/slave.cpp`): per executor, whether it subscribed in this
//! agent's life, the queue of tasks not yet delivered and the one live
//! SUBSCRIBE stream, each executor behind its own lock. Plain state with no
//! knowledge of the agent; the calls on it are `executors.rs`.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use nestguard::proto::mesos::v1;
use nestguard::proto::mesos::v1::executor::{Event, event};
use tokio::sync::mpsc;

/// Where a SUBSCRIBE stream's events go; the HTTP side drains it
/// ([`EventReceiver`]). Counts the bytes of the tasks in flight, so a
/// stream is bounded in bytes as well as in events.
pub(super) struct EventSender {
    pub(super) events: mpsc::Sender<Event>,
    pub(super) bytes: Arc<AtomicUsize>,
}

/// The HTTP side of a SUBSCRIBE stream.
pub struct EventReceiver {
    pub(super) events: mpsc::Receiver<Event>,
    pub(super) bytes: Arc<AtomicUsize>,
}

/// A new SUBSCRIBE stream with room for `capacity` events: both ends
/// share the count of the bytes in flight.
pub(super) fn event_stream(capacity: usize) -> (EventSender, EventReceiver) {
    let (events, receiver) = mpsc::channel(capacity);
    let bytes = Arc::new(AtomicUsize::new(0));
    let sender = EventSender {
        events,
        bytes: Arc::clone(&bytes),
    };
    let receiver = EventReceiver {
        events: receiver,
        bytes,
    };
    (sender, receiver)
}

/// The bytes of the tasks an event carries (protobuf).
pub(super) fn task_bytes(event: &Event) -> usize {
    tasks_of(event)
        .into_iter()
        .map(prost::Message::encoded_len)
        .sum()
}

impl EventSender {
    /// As `mpsc::Sender::try_send`; also full when the tasks in flight
    /// would pass [`STREAM_BYTES_MAX`].
    pub(super) fn try_send(&self, event: Event) -> Result<(), NotSent> {
        let size = task_bytes(&event);
        let before = self.bytes.fetch_add(size, Ordering::SeqCst);
        if size > 0 && before + size > STREAM_BYTES_MAX {
            self.bytes.fetch_sub(size, Ordering::SeqCst);
            return Err(NotSent::Full(Box::new(event)));
        }
        self.events.try_send(event).map_err(|e| {
            self.bytes.fetch_sub(size, Ordering::SeqCst);
            match e {
                mpsc::error::TrySendError::Full(e) => NotSent::Full(Box::new(e)),
                mpsc::error::TrySendError::Closed(e) => NotSent::Closed(Box::new(e)),
            }
        })
    }
}

/// An event a stream did not take, given back.
#[derive(Debug)]
pub(super) enum NotSent {
    /// The reader does not keep up (events or bytes).
    Full(Box<Event>),
    /// The reader is gone.
    Closed(Box<Event>),
}

impl NotSent {
    pub(super) fn into_inner(self) -> Event {
        match self {
            NotSent::Full(e) | NotSent::Closed(e) => *e,
        }
    }
}

impl EventReceiver {
    /// The next event, as `mpsc::Receiver::poll_recv`.
    pub fn poll_recv(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Option<Event>> {
        let polled = self.events.poll_recv(cx);
        if let std::task::Poll::Ready(Some(event)) = &polled {
            self.bytes.fetch_sub(task_bytes(event), Ordering::SeqCst);
        }
        polled
    }
}

/// Events queued for one executor's stream. An executor that does not read
/// its stream loses it when the queue is full (as a broken connection: it
/// re-subscribes), so the agent's memory stays bounded.
pub(super) const EVENTS_QUEUED_MAX: usize = 1024;

/// The most tasks queued for one executor that has no live stream; one
/// more launch is refused (409) until it subscribes.
pub const QUEUED_TASKS_MAX: usize = 256;
/// The most bytes of one executor's queue, counted as its checkpoint is
/// written (JSON, bytes as base64): what is accepted is what is read back.
pub const QUEUED_BYTES_MAX: usize = 4 * 1024 * 1024;
/// The largest `TaskInfo` (protobuf-encoded) sent to an executor, queued or
/// live: one task cannot take a large share of the queue, and the events in
/// flight on a stream stay bounded in bytes, not only in number.
pub const TASK_MAX_BYTES: usize = QUEUED_BYTES_MAX / 16;
/// The most bytes of tasks (protobuf) in flight on one stream: sent, not
/// yet taken by the HTTP side. Over it the stream is closed as a full one
/// (the executor re-subscribes; a launch meanwhile is queued). Twice the
/// queue's bound, so a full queue is always delivered at SUBSCRIBE.
pub(super) const STREAM_BYTES_MAX: usize = 2 * QUEUED_BYTES_MAX;
/// The largest queue checkpoint read back (above [`QUEUED_BYTES_MAX`], so a
/// full queue is always read back).
pub(super) const QUEUE_CHECKPOINT_MAX: u64 = 16 * 1024 * 1024;
/// The queue's checkpoint in an executor's meta directory.
pub(super) const QUEUE_FILE: &str = "queued";
/// Where an unreadable queue checkpoint is moved, for the operator.
pub(super) const QUEUE_DAMAGED_FILE: &str = "queued.damaged";

/// The executors' API state, by root container id. Each executor has its
/// own lock, held while its queue is checkpointed (fsync): the map's lock
/// is held only to find or add an entry, so one framework cycling
/// launches and kills does not stall every other executor's calls.
#[derive(Default)]
pub struct Executors {
    pub(super) inner: Mutex<HashMap<String, Arc<Mutex<ExecutorRuntime>>>>,
    /// The executors that subscribed since the agent started (Mesos'
    /// RUNNING; otherwise REGISTERING): apart from their locks, which a
    /// queue checkpoint (fsync) holds, so the check every executor call
    /// makes on the async side never waits for a disk.
    pub(super) subscribed: Mutex<HashSet<String>>,
}

#[derive(Default)]
pub(super) struct ExecutorRuntime {
    /// A task was queued or sent to it since the agent started: with
    /// nothing queued and no task ever sent (checkpointed, see
    /// `Agent::ever_sent_task`), all its tasks were killed before
    /// delivery and it gets SHUTDOWN at SUBSCRIBE.
    pub(super) ever_queued: bool,
    /// LAUNCH and LAUNCH_GROUP events not yet delivered, oldest first
    /// (checkpointed in [`QUEUE_FILE`]).
    pub(super) queued: Vec<Event>,
    /// The live stream: a counter (to tell connections apart) and its sender.
    pub(super) connection: Option<(u64, EventSender)>,
}

impl Executors {
    pub(super) fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<Mutex<ExecutorRuntime>>>> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The state of `root`'s executor, added if it has none.
    pub(super) fn runtime(&self, root: &str) -> Arc<Mutex<ExecutorRuntime>> {
        Arc::clone(self.lock().entry(root.to_owned()).or_default())
    }

    pub(super) fn subscribed(&self) -> MutexGuard<'_, HashSet<String>> {
        self.subscribed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The state of `root`'s executor, if it has one.
    pub(super) fn existing(&self, root: &str) -> Option<Arc<Mutex<ExecutorRuntime>>> {
        self.lock().get(root).cloned()
    }
}

pub(super) fn lock_runtime(runtime: &Mutex<ExecutorRuntime>) -> MutexGuard<'_, ExecutorRuntime> {
    runtime
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// An executor's identity in a call: which of the two is unknown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// No executor of this framework (Mesos: "Framework cannot be found").
    NoFramework,
    /// The framework is known, the executor is not.
    NoExecutor,
}

pub(super) fn event(kind: event::Type) -> Event {
    Event {
        r#type: Some(kind as i32),
        ..Default::default()
    }
}

/// The tasks a LAUNCH or LAUNCH_GROUP event carries.
pub(super) fn tasks_of(event: &Event) -> Vec<&v1::TaskInfo> {
    match (&event.launch, &event.launch_group) {
        (Some(launch), _) => vec![&launch.task],
        (None, Some(group)) => group.task_group.tasks.iter().collect(),
        (None, None) => Vec::new(),
    }
}

/// The IDs of the tasks of events (what `Agent::mark_staging` takes).
pub(super) fn ids_of<'a>(events: impl IntoIterator<Item = &'a Event>) -> Vec<String> {
    events
        .into_iter()
        .flat_map(tasks_of)
        .map(|t| t.task_id.value.clone())
        .collect()
}

/// Removes the tasks in `known` from the queued events; an event left
/// without tasks is dropped. True if anything was removed.
pub(super) fn drop_known(queued: &mut Vec<Event>, known: &HashSet<&str>) -> bool {
    let before: usize = queued.iter().map(|e| tasks_of(e).len()).sum();
    for e in queued.iter_mut() {
        if let Some(group) = &mut e.launch_group {
            group
                .task_group
                .tasks
                .retain(|t| !known.contains(t.task_id.value.as_str()));
        }
    }
    queued.retain(|e| match &e.launch {
        Some(launch) => !known.contains(launch.task.task_id.value.as_str()),
        None => !tasks_of(e).is_empty(),
    });
    before != queued.iter().map(|e| tasks_of(e).len()).sum::<usize>()
}

/// The checkpoint of a queue: JSON, each event in Mesos' JSON.
pub(super) fn queue_json(queued: &[Event]) -> String {
    serde_json::json!({
        "queued": queued.iter().map(nestguard::json::to_json_value).collect::<Vec<_>>(),
    })
    .to_string()
}

/// A connection counter shared by every executor.
pub(super) static CONNECTIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

pub(super) fn acknowledged(task_id: &str, uuid: Vec<u8>) -> Event {
    Event {
        acknowledged: Some(event::Acknowledged {
            task_id: v1::TaskId {
                value: task_id.to_owned(),
            },
            uuid,
        }),
        ..event(event::Type::Acknowledged)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch_of(bytes: usize) -> Event {
        let task = v1::TaskInfo {
            data: Some(vec![0; bytes]),
            ..Default::default()
        };
        Event {
            launch: Some(event::Launch { task }),
            ..event(event::Type::Launch)
        }
    }

    fn group_of(ids: &[&str]) -> Event {
        let tasks = ids
            .iter()
            .map(|id| v1::TaskInfo {
                task_id: v1::TaskId {
                    value: (*id).to_owned(),
                },
                ..Default::default()
            })
            .collect();
        Event {
            launch_group: Some(event::LaunchGroup {
                task_group: v1::TaskGroupInfo { tasks },
            }),
            ..event(event::Type::LaunchGroup)
        }
    }

    /// Known tasks leave the queue: a group keeps its other tasks, a group
    /// with none left and a single known task go; nothing known, no change.
    #[test]
    fn known_tasks_leave_the_queue_and_empty_groups_go() {
        let mut single = launch_of(1);
        single.launch.as_mut().unwrap().task.task_id.value = "s".into();
        let mut queued = vec![group_of(&["a", "b"]), single, group_of(&["c"])];
        assert!(!drop_known(&mut queued, &HashSet::from(["x"])));
        assert_eq!(ids_of(&queued), ["a", "b", "s", "c"]);
        assert!(drop_known(&mut queued, &HashSet::from(["b", "s", "c"])));
        assert_eq!(ids_of(&queued), ["a"]);
        assert_eq!(queued.len(), 1);
    }

    /// A stream whose reader does not read is full once the tasks in
    /// flight would pass STREAM_BYTES_MAX, however few events they are;
    /// what is read makes room again, and small events are not counted.
    #[test]
    fn a_stream_is_bounded_in_bytes_of_tasks_in_flight() {
        let (events, receiver) = mpsc::channel(EVENTS_QUEUED_MAX);
        let bytes = Arc::new(AtomicUsize::new(0));
        let sender = EventSender {
            events,
            bytes: Arc::clone(&bytes),
        };
        let mut receiver = EventReceiver {
            events: receiver,
            bytes,
        };
        let per = TASK_MAX_BYTES - 64;
        let fit =
            STREAM_BYTES_MAX / prost::Message::encoded_len(&launch_of(per).launch.unwrap().task);
        for _ in 0..fit {
            sender.try_send(launch_of(per)).unwrap();
        }
        assert!(matches!(
            sender.try_send(launch_of(per)),
            Err(NotSent::Full(_))
        ));
        sender.try_send(event(event::Type::Heartbeat)).unwrap();
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        assert!(matches!(
            receiver.poll_recv(&mut cx),
            std::task::Poll::Ready(Some(_))
        ));
        sender.try_send(launch_of(per)).unwrap();
    }
}
