//! The C ABI and the wire: the C consumer and the exported symbols, the
//! generated header, protobuf wire compatibility, the Mesos module shim, and
//! the credentials, isolator and launcher entry points. One test binary.

#[path = "../common/mod.rs"]
mod common;
#[path = "../launcher_support/mod.rs"]
mod launcher_support;

mod abi_support;
mod audit_abi;
mod authorizer_abi;
mod c_abi;
mod c_install;
mod credentials_abi;
mod header;
mod isolator_abi;
mod launcher_abi;
mod launcher_io_abi;
mod mesos_shim;
mod metrics_abi;
mod proto_names;
mod wire;
