//! Credential tests: CRAM-MD5 (against Cyrus SASL too), credential files, HTTP
//! Basic and JWT, and executor credential injection. One test binary.

mod credentials_cram_md5;
mod credentials_cyrus;
mod credentials_files;
mod credentials_http;
mod credentials_injection;
