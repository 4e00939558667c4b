//! RecordIO, the framing of Mesos' streaming calls and responses (the
//! executor API's SUBSCRIBE stream, the operator API's attach and session
//! streams): each record is its length in decimal ASCII, a `\n`, then that
//! many bytes (stout's `recordio.hpp`, Mesos' `docs/recordio.md`).
//!
//! Hand-rolled: no maintained Rust crate implements Mesos' RecordIO (the
//! packages named "recordio" implement unrelated formats: MXNet's, Google's
//! or TensorFlow's), and the format is a dozen lines. What a crate would add
//! and we must not miss is here: the decoder is incremental (a record may
//! arrive in any number of chunks, several records in one chunk), refuses a
//! header that is not decimal digits, refuses a record larger than its
//! limit before buffering it, and reports a stream that ends inside a
//! record.
//!
//! Shared by the agent, the default executor and the tests (which include
//! this file by path), so it depends on `thiserror` only.

/// Why a RecordIO stream cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordIoError {
    /// The length header holds something other than decimal digits.
    #[error("RecordIO: record header {header:?} is not a decimal length")]
    BadHeader {
        /// What was read (at most a few bytes of it).
        header: String,
    },
    /// A record (or its header) is larger than the decoder accepts.
    #[error("RecordIO: record of {length} bytes exceeds the limit of {max} bytes")]
    TooLarge {
        /// The announced length (or the header's length so far).
        length: u64,
        /// The decoder's limit.
        max: usize,
    },
    /// The stream ended in the middle of a record.
    #[error("RecordIO: the stream ended inside a record ({missing} bytes missing)")]
    Truncated {
        /// Bytes still expected (of the header, at least 1).
        missing: u64,
    },
}

/// Frames one record.
pub fn encode(record: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(record.len() + 12);
    out.extend_from_slice(record.len().to_string().as_bytes());
    out.push(b'\n');
    out.extend_from_slice(record);
    out
}

/// The longest header that can announce a record within any `usize` limit.
const MAX_HEADER_DIGITS: usize = 20;

/// An incremental decoder: feed it chunks as they arrive, take records out.
#[derive(Debug)]
pub struct Decoder {
    max: usize,
    buffer: Vec<u8>,
    /// The length of the record being read, once its header is complete.
    pending: Option<usize>,
    failed: Option<RecordIoError>,
}

impl Decoder {
    /// A decoder refusing records larger than `max` bytes.
    pub fn new(max: usize) -> Decoder {
        Decoder {
            max,
            buffer: Vec::new(),
            pending: None,
            failed: None,
        }
    }

    /// Adds `chunk` and returns every record it completed. After an error
    /// the decoder stays failed (the stream cannot be resynchronised).
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<Vec<u8>>, RecordIoError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        self.buffer.extend_from_slice(chunk);
        let mut records = Vec::new();
        loop {
            match self.next_record() {
                Ok(Some(record)) => records.push(record),
                Ok(None) => return Ok(records),
                Err(e) => {
                    self.failed = Some(e.clone());
                    self.buffer.clear();
                    return Err(e);
                }
            }
        }
    }

    /// Called at the end of the stream: an error if it ended inside a record.
    pub fn finish(&self) -> Result<(), RecordIoError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        match self.pending {
            Some(length) => Err(RecordIoError::Truncated {
                missing: (length - self.buffer.len()) as u64,
            }),
            None if !self.buffer.is_empty() => Err(RecordIoError::Truncated { missing: 1 }),
            None => Ok(()),
        }
    }

    fn next_record(&mut self) -> Result<Option<Vec<u8>>, RecordIoError> {
        if self.pending.is_none() {
            let Some(newline) = self.buffer.iter().position(|b| *b == b'\n') else {
                self.check_partial_header()?;
                return Ok(None);
            };
            let header = &self.buffer[..newline];
            let length = parse_header(header, self.max)?;
            self.buffer.drain(..=newline);
            self.pending = Some(length);
        }
        let Some(length) = self.pending else {
            return Ok(None);
        };
        if self.buffer.len() < length {
            return Ok(None);
        }
        let rest = self.buffer.split_off(length);
        let record = std::mem::replace(&mut self.buffer, rest);
        self.pending = None;
        Ok(Some(record))
    }

    /// Refuses a header that cannot become valid however it continues.
    fn check_partial_header(&self) -> Result<(), RecordIoError> {
        if !self.buffer.iter().all(u8::is_ascii_digit) || self.buffer.len() > MAX_HEADER_DIGITS {
            return Err(bad_header(&self.buffer));
        }
        if let Some(length) = digits_value(&self.buffer)
            && length > self.max as u64
        {
            return Err(RecordIoError::TooLarge {
                length,
                max: self.max,
            });
        }
        Ok(())
    }
}

fn bad_header(header: &[u8]) -> RecordIoError {
    let shown = &header[..header.len().min(16)];
    RecordIoError::BadHeader {
        header: String::from_utf8_lossy(shown).into_owned(),
    }
}

fn digits_value(digits: &[u8]) -> Option<u64> {
    std::str::from_utf8(digits).ok()?.parse().ok()
}

fn parse_header(header: &[u8], max: usize) -> Result<usize, RecordIoError> {
    if header.is_empty()
        || header.len() > MAX_HEADER_DIGITS
        || !header.iter().all(u8::is_ascii_digit)
    {
        return Err(bad_header(header));
    }
    let length = digits_value(header).ok_or_else(|| bad_header(header))?;
    if length > max as u64 {
        return Err(RecordIoError::TooLarge { length, max });
    }
    usize::try_from(length).map_err(|_| RecordIoError::TooLarge { length, max })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let records: Vec<&[u8]> = vec![b"", b"{\"type\":\"SUBSCRIBED\"}", b"a\nb\n", &[0, 255, 10]];
        let mut stream = Vec::new();
        for r in &records {
            stream.extend(encode(r));
        }
        assert_eq!(encode(b"abc"), b"3\nabc");
        let mut decoder = Decoder::new(1024);
        let decoded = decoder.feed(&stream).unwrap();
        assert_eq!(
            decoded,
            records.iter().map(|r| r.to_vec()).collect::<Vec<_>>()
        );
        decoder.finish().unwrap();
    }

    #[test]
    fn split_frames_byte_by_byte() {
        let mut stream = encode(b"hello");
        stream.extend(encode(b"world!!!!!!"));
        let mut decoder = Decoder::new(64);
        let mut out = Vec::new();
        for byte in &stream {
            out.extend(decoder.feed(std::slice::from_ref(byte)).unwrap());
        }
        assert_eq!(out, vec![b"hello".to_vec(), b"world!!!!!!".to_vec()]);
        decoder.finish().unwrap();
    }

    #[test]
    fn oversize_is_refused_before_buffering() {
        let mut decoder = Decoder::new(10);
        assert_eq!(
            decoder.feed(b"11\n").unwrap_err(),
            RecordIoError::TooLarge {
                length: 11,
                max: 10
            }
        );
        // A header still growing is refused as soon as it exceeds the limit.
        let mut decoder = Decoder::new(10);
        assert!(decoder.feed(b"1").unwrap().is_empty());
        assert_eq!(
            decoder.feed(b"00").unwrap_err(),
            RecordIoError::TooLarge {
                length: 100,
                max: 10
            }
        );
        // And the decoder stays failed.
        assert!(decoder.feed(b"\n").is_err());
        let mut decoder = Decoder::new(10);
        assert!(matches!(
            decoder.feed(b"99999999999999999999999").unwrap_err(),
            RecordIoError::BadHeader { .. }
        ));
    }

    #[test]
    fn bad_headers() {
        for bad in [
            &b"x\n"[..],
            b"-1\n",
            b" 3\nabc",
            b"\nabc",
            b"3 \nabc",
            b"0x3\nabc",
        ] {
            let mut decoder = Decoder::new(100);
            assert!(
                matches!(decoder.feed(bad), Err(RecordIoError::BadHeader { .. })),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        // A non-digit is refused before the newline arrives.
        let mut decoder = Decoder::new(100);
        assert!(matches!(
            decoder.feed(b"12a"),
            Err(RecordIoError::BadHeader { .. })
        ));
    }

    #[test]
    fn eof_inside_a_record() {
        let mut decoder = Decoder::new(100);
        assert!(decoder.feed(b"5\nabc").unwrap().is_empty());
        assert_eq!(
            decoder.finish().unwrap_err(),
            RecordIoError::Truncated { missing: 2 }
        );
        let mut decoder = Decoder::new(100);
        assert!(decoder.feed(b"5").unwrap().is_empty());
        assert_eq!(
            decoder.finish().unwrap_err(),
            RecordIoError::Truncated { missing: 1 }
        );
        let mut decoder = Decoder::new(100);
        assert_eq!(decoder.feed(b"0\n").unwrap(), vec![Vec::<u8>::new()]);
        decoder.finish().unwrap();
    }
}
