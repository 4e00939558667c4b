//! The command line: authz and credentials subcommands, smoke tests, the
//! demo, and that no secret leaks into output or logs. One test binary.

mod acls_analysis_cli;
mod authz_cli;
mod cli_smoke;
mod closed_stdout;
mod credentials_cli;
mod credentials_no_secret_leak;
mod demo;
