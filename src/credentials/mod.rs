//! Mesos credential files, CRAM-MD5, HTTP authentication and the injection of
//! an executor's credentials into its containers.
//!
//! * [`file`](mod@file) reads credential files (Mesos JSON and the legacy text form)
//!   into a [`CredentialStore`];
//! * [`cram_md5`] runs the agent ↔ master CRAM-MD5 exchange;
//! * [`jwt`] issues and verifies Mesos' executor tokens (HS256);
//! * [`http`] authenticates `Authorization` headers (Basic, Bearer);
//! * [`delegation`] reads which principals a framework may hand to its
//!   executors in secret mode;
//! * [`injection`] computes the environment that carries an executor's
//!   credentials into its containers.
//!
//! No secret reaches a log line, a `Debug`/`Display` output or an error text:
//! secrets live in [`Secret`], which is redacted when printed and wiped on drop.
#![forbid(unsafe_code)]

pub mod claims;
pub mod cram_md5;
pub mod delegation;
pub mod file;
pub mod http;
pub mod injection;
pub mod jwt;
pub mod secret;
pub mod store;

pub use file::{FileError, LoadOptions, load_credential, load_credentials};
pub use secret::Secret;
pub use store::{Credential, CredentialStore};
