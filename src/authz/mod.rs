//! Mesos-compatible ACL authorization (the local authorizer's semantics for
//! the agent's nested-container calls and the other agent ACLs).
//!
//! Filled in by the authz work: parse → validate → compile → evaluate, with
//! explanations and hot reload.
#![forbid(unsafe_code)]
