//! GET_STATE, GET_FRAMEWORKS, GET_EXECUTORS and GET_TASKS, filtered per
//! principal as Mesos filters them (src/slave/http.cpp:1556 getFrameworks,
//! :1768 getExecutors, :2061 getTasks, :2488 getState): a framework is
//! listed when VIEW_FRAMEWORK allows its FrameworkInfo; an executor when
//! its framework is and VIEW_EXECUTOR allows (ExecutorInfo, FrameworkInfo).
//!
//! The agent knows frameworks through the executors it runs (a pod's
//! framework); it does not track task states (the executor reports them to
//! its client), so the task lists are empty.

use std::sync::Arc;

use axum::response::Response;
use nestguard::proto::mesos::authorization::{Action, Object, Subject};
use nestguard::proto::mesos::v1::agent::Response as AgentResponse;
use nestguard::proto::mesos::v1::agent::response;

use super::encoded;
use crate::cli::agent::core::ExecutorRecord;
use crate::cli::agent::http::Server;
use crate::cli::agent::negotiation::Format;
use crate::cli::wire::twin;

/// The executors (with their frameworks) `subject` may see, split into
/// visible frameworks and visible executors.
fn visible(
    server: &Server,
    subject: Option<&Subject>,
) -> (
    Vec<response::get_frameworks::Framework>,
    Vec<response::get_executors::Executor>,
) {
    let agent = &server.agent;
    let executors: Vec<ExecutorRecord> = agent.running_executors();
    let mut frameworks: Vec<response::get_frameworks::Framework> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    let mut out_executors = Vec::new();
    for e in &executors {
        let framework_object = Object {
            framework_info: Some(e.framework.clone()),
            ..Default::default()
        };
        if !agent.may_view(subject, Action::ViewFramework, framework_object) {
            continue;
        }
        let key = e
            .framework
            .id
            .as_ref()
            .map(|id| id.value.clone())
            .unwrap_or_else(|| e.framework.name.clone());
        if seen.insert(key) {
            frameworks.push(response::get_frameworks::Framework {
                framework_info: twin(&e.framework),
            });
        }
        let executor_object = Object {
            executor_info: Some(e.executor.clone()),
            framework_info: Some(e.framework.clone()),
            ..Default::default()
        };
        if agent.may_view(subject, Action::ViewExecutor, executor_object) {
            out_executors.push(response::get_executors::Executor {
                executor_info: twin(&e.executor),
            });
        }
    }
    (frameworks, out_executors)
}

fn get_frameworks(server: &Server, subject: Option<&Subject>) -> response::GetFrameworks {
    response::GetFrameworks {
        frameworks: visible(server, subject).0,
        completed_frameworks: Vec::new(),
    }
}

fn get_executors(server: &Server, subject: Option<&Subject>) -> response::GetExecutors {
    response::GetExecutors {
        executors: visible(server, subject).1,
        completed_executors: Vec::new(),
    }
}

fn get_tasks() -> response::GetTasks {
    response::GetTasks::default()
}

/// GET_FRAMEWORKS.
pub(super) fn frameworks(
    server: &Arc<Server>,
    subject: Option<&Subject>,
    format: Format,
) -> Response {
    encoded(
        format,
        &AgentResponse {
            r#type: Some(response::Type::GetFrameworks as i32),
            get_frameworks: Some(get_frameworks(server, subject)),
            ..Default::default()
        },
    )
}

/// GET_EXECUTORS.
pub(super) fn executors(
    server: &Arc<Server>,
    subject: Option<&Subject>,
    format: Format,
) -> Response {
    encoded(
        format,
        &AgentResponse {
            r#type: Some(response::Type::GetExecutors as i32),
            get_executors: Some(get_executors(server, subject)),
            ..Default::default()
        },
    )
}

/// GET_TASKS.
pub(super) fn tasks(_server: &Arc<Server>, _subject: Option<&Subject>, format: Format) -> Response {
    encoded(
        format,
        &AgentResponse {
            r#type: Some(response::Type::GetTasks as i32),
            get_tasks: Some(get_tasks()),
            ..Default::default()
        },
    )
}

/// GET_STATE: the three above in one.
pub(super) fn state(server: &Arc<Server>, subject: Option<&Subject>, format: Format) -> Response {
    let (frameworks, executors) = visible(server, subject);
    encoded(
        format,
        &AgentResponse {
            r#type: Some(response::Type::GetState as i32),
            get_state: Some(response::GetState {
                get_tasks: Some(get_tasks()),
                get_executors: Some(response::GetExecutors {
                    executors,
                    completed_executors: Vec::new(),
                }),
                get_frameworks: Some(response::GetFrameworks {
                    frameworks,
                    completed_frameworks: Vec::new(),
                }),
            }),
            ..Default::default()
        },
    )
}
