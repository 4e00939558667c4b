//! GET_STATE, GET_FRAMEWORKS, GET_EXECUTORS and GET_TASKS, filtered per
//! principal as Mesos filters them (src/slave/http.cpp:1556 getFrameworks,
//! :1768 getExecutors, :2061 getTasks, :2488 getState): a framework is
//! listed when VIEW_FRAMEWORK allows its FrameworkInfo; an executor when
//! its framework is and VIEW_EXECUTOR allows (ExecutorInfo, FrameworkInfo).
//! A task is listed when its executor is and VIEW_TASK allows (Task,
//! FrameworkInfo); terminal ones under `terminated_tasks`, the others under
//! `launched_tasks`.
//!
//! The agent knows frameworks through the executors it runs (a pod's
//! framework) and tasks through [`super::tasks`].

use std::sync::Arc;

use axum::response::Response;
use nestguard::proto::mesos::authorization::{Action, Object, Subject};
use nestguard::proto::mesos::v1::agent::Response as AgentResponse;
use nestguard::proto::mesos::v1::agent::response;

use super::{encoded, tasks};
use crate::cli::agent::core::ExecutorRecord;
use crate::cli::agent::negotiation::Format;
use crate::cli::agent::server::Server;
use crate::cli::wire::twin;

/// What `subject` may see of the running executors.
struct Visible {
    frameworks: Vec<response::get_frameworks::Framework>,
    executors: Vec<response::get_executors::Executor>,
    tasks: response::GetTasks,
}

fn visible(server: &Server, subject: Option<&Subject>) -> Visible {
    let agent = &server.agent;
    let executors: Vec<ExecutorRecord> = agent.running_executors();
    let mut out = Visible {
        frameworks: Vec::new(),
        executors: Vec::new(),
        tasks: response::GetTasks::default(),
    };
    let mut seen = std::collections::BTreeSet::new();
    for e in &executors {
        let framework_object = Object {
            framework_info: Some(e.framework.clone()),
            ..Default::default()
        };
        if !agent.filter(subject, Action::ViewFramework, framework_object) {
            continue;
        }
        let key = e
            .framework
            .id
            .as_ref()
            .map(|id| id.value.clone())
            .unwrap_or_else(|| e.framework.name.clone());
        if seen.insert(key) {
            out.frameworks.push(response::get_frameworks::Framework {
                framework_info: twin(&e.framework),
            });
        }
        let executor_object = Object {
            executor_info: Some(e.executor.clone()),
            framework_info: Some(e.framework.clone()),
            ..Default::default()
        };
        if !agent.filter(subject, Action::ViewExecutor, executor_object) {
            continue;
        }
        out.executors.push(response::get_executors::Executor {
            executor_info: twin(&e.executor),
        });
        for task in tasks::tasks_of(agent, e) {
            let task_object = Object {
                task: Some(task.clone()),
                framework_info: Some(e.framework.clone()),
                ..Default::default()
            };
            if !agent.filter(subject, Action::ViewTask, task_object) {
                continue;
            }
            let terminal = tasks::is_terminal(task.state());
            let listed = twin(&task);
            if terminal {
                out.tasks.terminated_tasks.push(listed);
            } else {
                out.tasks.launched_tasks.push(listed);
            }
        }
    }
    out
}

fn get_frameworks(server: &Server, subject: Option<&Subject>) -> response::GetFrameworks {
    response::GetFrameworks {
        frameworks: visible(server, subject).frameworks,
        completed_frameworks: Vec::new(),
    }
}

fn get_executors(server: &Server, subject: Option<&Subject>) -> response::GetExecutors {
    response::GetExecutors {
        executors: visible(server, subject).executors,
        completed_executors: Vec::new(),
    }
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
pub(super) fn tasks(server: &Arc<Server>, subject: Option<&Subject>, format: Format) -> Response {
    encoded(
        format,
        &AgentResponse {
            r#type: Some(response::Type::GetTasks as i32),
            get_tasks: Some(visible(server, subject).tasks),
            ..Default::default()
        },
    )
}

/// GET_STATE: the three above in one.
pub(super) fn state(server: &Arc<Server>, subject: Option<&Subject>, format: Format) -> Response {
    let Visible {
        frameworks,
        executors,
        tasks,
    } = visible(server, subject);
    encoded(
        format,
        &AgentResponse {
            r#type: Some(response::Type::GetState as i32),
            get_state: Some(response::GetState {
                get_tasks: Some(tasks),
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
