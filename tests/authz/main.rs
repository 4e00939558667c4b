//! Authorization tests: the ACL corpus through the loaded library, loading and
//! reloading ACL files, and properties against the reference evaluator. One
//! test binary (each binary costs a link); `authz_noalloc` stays apart, as it
//! installs a counting global allocator.

mod authz_analysis;
mod authz_analysis_props;
mod authz_corpus;
mod authz_load_reload;
mod authz_props;
mod authz_who_can;
mod authz_wire_props;
