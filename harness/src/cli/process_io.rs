//! The `ProcessIO` records the agent and `nestguard exec` send each other
//! on ATTACH_CONTAINER_INPUT / ATTACH_CONTAINER_OUTPUT and session streams
//! (Mesos' `agent.proto`): data of one stream, and heartbeats. One builder
//! for both ends, so that the client writes what the agent reads.

use std::time::Duration;

use nestguard::proto::mesos::v1::DurationInfo;
use nestguard::proto::mesos::v1::agent::{ProcessIo, process_io};

/// A DATA record of stream `kind` (stdin, stdout or stderr).
pub(crate) fn data_record(kind: process_io::data::Type, data: Vec<u8>) -> ProcessIo {
    ProcessIo {
        r#type: Some(process_io::Type::Data as i32),
        data: Some(process_io::Data {
            r#type: Some(kind as i32),
            data: Some(data),
        }),
        control: None,
    }
}

/// A CONTROL HEARTBEAT record announcing the sender's `interval`.
pub(crate) fn heartbeat_record(interval: Duration) -> ProcessIo {
    let nanoseconds = i64::try_from(interval.as_nanos()).unwrap_or(i64::MAX);
    ProcessIo {
        r#type: Some(process_io::Type::Control as i32),
        data: None,
        control: Some(process_io::Control {
            r#type: Some(process_io::control::Type::Heartbeat as i32),
            tty_info: None,
            heartbeat: Some(process_io::control::Heartbeat {
                interval: Some(DurationInfo { nanoseconds }),
            }),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_heartbeat_carries_its_interval_and_data_its_stream() {
        let h = heartbeat_record(Duration::from_secs(30));
        let interval = h
            .control
            .and_then(|c| c.heartbeat)
            .and_then(|h| h.interval)
            .map(|i| i.nanoseconds);
        assert_eq!(interval, Some(30_000_000_000));
        let d = data_record(process_io::data::Type::Stderr, b"x".to_vec());
        let data = d.data.expect("data");
        assert_eq!(data.r#type, Some(process_io::data::Type::Stderr as i32));
        assert_eq!(data.data.as_deref(), Some(&b"x"[..]));
    }
}
