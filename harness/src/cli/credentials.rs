//! `nestguard credentials check` and `nestguard token issue|verify`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

use crate::cli::out::{errln, outln};
use nestguard::credentials::file::{self, LoadOptions};
use nestguard::credentials::jwt;

/// `nestguard credentials ...`
#[derive(Debug, Subcommand)]
pub enum CredentialsCommand {
    /// Validate a credentials file (Mesos JSON or legacy text); prints the
    /// principals (never the secrets).
    Check {
        /// The file.
        file: PathBuf,
        /// The file holds a single credential (`--credential`), not a list.
        #[arg(long)]
        single: bool,
        /// Accept a file readable or writable by group or others.
        #[arg(long)]
        allow_open_permissions: bool,
    },
}

/// `nestguard token ...`
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Issue a Mesos executor token (JWT HS256, claims fid/eid/cid).
    Issue {
        /// The signing key file (its whole content is the key).
        #[arg(long)]
        key: PathBuf,
        /// Framework id.
        #[arg(long)]
        fid: String,
        /// Executor id.
        #[arg(long)]
        eid: String,
        /// The executor's root container id.
        #[arg(long)]
        cid: String,
        /// Accept a key file readable or writable by group or others.
        #[arg(long)]
        allow_open_permissions: bool,
    },
    /// Verify a token as the Mesos agent does; prints its claims as JSON.
    Verify {
        /// The signing key file.
        #[arg(long)]
        key: PathBuf,
        /// The token.
        token: String,
        /// Accept a key file readable or writable by group or others.
        #[arg(long)]
        allow_open_permissions: bool,
    },
}

/// How every command here reads a secret file: one readable or writable
/// by group or others is refused unless `--allow-open-permissions`.
fn load_options(allow_open_permissions: bool) -> LoadOptions {
    LoadOptions {
        allow_open_permissions,
        ..LoadOptions::default()
    }
}

/// Runs `nestguard credentials ...`.
pub fn run_credentials(cmd: CredentialsCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        CredentialsCommand::Check {
            file: path,
            single,
            allow_open_permissions,
        } => {
            let options = load_options(allow_open_permissions);
            let principals: Vec<String> = if single {
                vec![file::load_credential(&path, &options)?.principal]
            } else {
                file::load_credentials(&path, &options)?
                    .principals()
                    .map(str::to_owned)
                    .collect()
            };
            outln!(
                "{}: OK, {} credential(s): {}",
                path.display(),
                principals.len(),
                principals.join(", ")
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Runs `nestguard token ...`.
pub fn run_token(cmd: TokenCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        TokenCommand::Issue {
            key,
            fid,
            eid,
            cid,
            allow_open_permissions,
        } => {
            let key = jwt::load_key(&key, &load_options(allow_open_permissions))?;
            let claims = BTreeMap::from([
                ("cid".to_owned(), cid),
                ("eid".to_owned(), eid),
                ("fid".to_owned(), fid),
            ]);
            outln!("{}", jwt::issue(&claims, &key));
            Ok(ExitCode::SUCCESS)
        }
        TokenCommand::Verify {
            key,
            token,
            allow_open_permissions,
        } => {
            let key = jwt::load_key(&key, &load_options(allow_open_permissions))?;
            match jwt::verify(token.trim(), &key, jwt::now_secs()) {
                Ok(claims) => {
                    outln!("{}", serde_json::to_string(&claims)?);
                    Ok(ExitCode::SUCCESS)
                }
                Err(e) => {
                    errln!("nestguard: invalid token: {e}");
                    Ok(ExitCode::from(1))
                }
            }
        }
    }
}
