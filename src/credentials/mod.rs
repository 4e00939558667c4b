//! Mesos credential files, CRAM-MD5, HTTP authentication and the injection of
//! an executor's credentials into its containers.
#![forbid(unsafe_code)]
