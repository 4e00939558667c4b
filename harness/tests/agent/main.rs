//! The simulated agent end to end: pods, nested containers, recovery, and
//! the security checks of its HTTP API, identities and inputs. One test
//! binary.

#![allow(
    clippy::disallowed_macros,
    reason = "tests print to the test harness (harness/clippy.toml is for the command)"
)]

#[path = "../agent_support/mod.rs"]
mod agent_support;
#[path = "../../../tests/common/mod.rs"]
mod common;

mod agent_e2e;
mod api_calls;
mod audit_log;
mod closed_stdout;
mod debug_sessions;
mod executor_api;
mod executor_queue;
mod framework_binding;
#[path = "../../src/cli/recordio.rs"]
mod recordio;
mod security_http;
mod security_ids;
mod security_inputs;
mod security_logs;
mod security_pods;
mod security_recovery;
mod security_user_namespaces;
mod session_isolation;
mod session_recovery;
