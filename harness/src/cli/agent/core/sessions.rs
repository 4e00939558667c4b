//! The agent's calls on IO switchboards ([`super::switchboard`]): creating
//! a container's switchboard before its launch, serving it, attaching to it,
//! and the launch of a debug session (`LAUNCH_NESTED_CONTAINER_SESSION`),
//! which runs as its parent container's user only.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use nestguard::proto::mesos::slave::ContainerClass;
use nestguard::proto::mesos::{CommandInfo, ContainerInfo};

use super::records::ApiError;
use super::registry::Agent;
use super::switchboard::{Stream, Switchboard, WATCH_PERIOD, require_debug_sessions};

impl Agent {
    /// Creates the switchboard of a container about to launch, if it needs
    /// one.
    pub(super) fn prepare_switchboard(
        &self,
        sandbox: &Path,
        user: Option<&str>,
        class: ContainerClass,
        container: Option<&ContainerInfo>,
    ) -> Result<Option<Arc<Switchboard>>, ApiError> {
        if !Switchboard::required(class, container) {
            return Ok(None);
        }
        require_debug_sessions()?;
        Switchboard::create(&self.layout.work_dir, sandbox, user, class, container).map(Some)
    }

    /// Serves a launched container's switchboard until the container ends.
    /// `place` is the generation of its place among the switchboards,
    /// which it frees when it closed.
    pub(super) fn start_switchboard(
        self: &Arc<Self>,
        key: String,
        board: Arc<Switchboard>,
        place: Option<u64>,
    ) {
        // Never over a running container's switchboard (its readers and
        // writer stay attached to the one they opened).
        match self.switchboards.map().entry(key.clone()) {
            std::collections::hash_map::Entry::Occupied(_) => {
                tracing::warn!(container_id = %key, "a second switchboard for a container was dropped");
                board.close_input();
                self.free_board_place(&key, place);
                return;
            }
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(Arc::clone(&board));
            }
        }
        if board.tty {
            let b = Arc::clone(&board);
            std::thread::spawn(move || {
                if let Some(master) = &b.master {
                    b.pump(Stream::Stdout, master);
                }
            });
        } else {
            let outputs = std::mem::take(
                &mut *board
                    .outputs
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
            );
            for (stream, fd) in outputs {
                let b = Arc::clone(&board);
                std::thread::spawn(move || b.pump(stream, &fd));
            }
        }
        let agent: Weak<Agent> = Arc::downgrade(self);
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(WATCH_PERIOD);
                let ended = agent
                    .upgrade()
                    .is_none_or(|a| a.terminated(&key) != Some(false));
                if ended && !board.terminated.swap(true, Ordering::SeqCst) {
                    let _guard = board.fanout();
                    board.changed.notify_all();
                }
                if ended {
                    board.close_input();
                    if board.output_ended() {
                        break;
                    }
                }
            }
            board.close_input();
            if let Some(agent) = agent.upgrade() {
                // Only this board and its place: a later container of the
                // same ID has its own.
                let mut boards = agent.switchboards.map();
                if boards.get(&key).is_some_and(|b| Arc::ptr_eq(b, &board)) {
                    boards.remove(&key);
                }
                drop(boards);
                agent.free_board_place(&key, place);
            }
            tracing::debug!(container_id = %key, "switchboard closed");
        });
    }

    /// Frees `key`'s place among the switchboards, if it is still the one
    /// of generation `place`.
    fn free_board_place(&self, key: &str, place: Option<u64>) {
        if let Some(place) = place {
            let mut state = super::records::lock(&self.state);
            super::containers::free_place(&mut state.boards, key, place);
        }
    }

    /// Drops the switchboard of a container whose launch failed.
    pub(super) fn abandon_switchboard(board: &Switchboard) {
        board.close_input();
    }

    /// The switchboard of a running container, if it has one.
    pub fn switchboard(&self, key: &str) -> Option<Arc<Switchboard>> {
        self.switchboards.map().get(key).cloned()
    }

    /// Whether the agent runs this container (for the switchboard's
    /// "disabled" answer versus "cannot be found").
    pub fn runs(&self, key: &str) -> bool {
        self.terminated(key) == Some(false)
    }
}

impl Agent {
    /// LAUNCH_NESTED_CONTAINER_SESSION's launch (already authorized): a
    /// DEBUG container, which has a switchboard. At most [`MAX_SESSIONS`]
    /// run under one root container (checked in [`Agent::launch_as`] under
    /// the registry's lock, with the launch marked as started).
    pub fn launch_session(
        self: &Arc<Self>,
        id: &nestguard::proto::mesos::ContainerId,
        command: Option<CommandInfo>,
        container: Option<ContainerInfo>,
    ) -> Result<super::Launched, ApiError> {
        self.session_user_is_the_parents(id, command.as_ref())?;
        self.launch_as(
            id,
            command,
            container,
            Vec::new(),
            Default::default(),
            ContainerClass::Debug,
        )
    }

    /// Refuses a session whose `command.user` is not its parent
    /// container's user: a debug session is a shell in the parent
    /// container, with the parent's rights (as `mesos task exec` gives
    /// it), never a way to run as another user (root) in a sandbox the
    /// tenant controls.
    fn session_user_is_the_parents(
        &self,
        id: &nestguard::proto::mesos::ContainerId,
        command: Option<&CommandInfo>,
    ) -> Result<(), ApiError> {
        let Some(parent) = &id.parent else {
            return Ok(());
        };
        let parent_key = nestguard::container_id::to_dotted(parent);
        let parent_user = super::records::lock(&self.state)
            .containers
            .get(&parent_key)
            .map(|p| (p.user.clone(), p.user_unknown));
        // A nested parent recovered after a restart whose user checkpoint
        // is missing or torn: a session without a user would run as the
        // agent's user in a sandbox the tenant controls. Refused, whatever
        // the call asks.
        if let Some((_, true)) = parent_user {
            return Err(ApiError::BadRequest(format!(
                "Debug sessions under '{parent_key}' are refused: its user could not be recovered from its checkpoint"
            )));
        }
        let Some(wanted) = command.and_then(|c| c.user.as_deref()) else {
            return Ok(());
        };
        match parent_user.map(|(user, _)| user) {
            // An absent parent is answered by the launch itself.
            None => Ok(()),
            Some(user) if user.as_deref() == Some(wanted) => Ok(()),
            Some(user) => Err(ApiError::BadRequest(format!(
                "A debug session runs as its parent container's user ({}): 'command.user' '{wanted}' differs",
                user.as_deref().unwrap_or("the agent's user")
            ))),
        }
    }
}
